# Copyright 2026 Fabrik ROS Maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""The `main` of every fabrik_ros node: init, spin, a clean exit, configuration errors."""

from collections.abc import Callable
import re
import signal
import sys

from fabrik_ros.params_files import params_file_problem
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node


def one_line(error: Exception) -> str:
    """Return an rcl error as one line, without the C source locations it lists."""
    return ' '.join(re.sub(r',? at \S+:\d+', '', str(error)).split())


def run_node(make_node: Callable[[], Node], name: str, args: list[str] | None = None) -> None:
    """
    Spin the node `make_node()` builds until Ctrl-C or an external shutdown.

    Both are normal exits, however many SIGINTs arrive: `ros2 launch` sends its own after
    the terminal's, and it may land while the node is being destroyed. A configuration
    error (an unreadable --params-file, a ValueError such as a ChainError, a refused
    parameter) is logged in one line under `name` and the process exits with status 1.
    """
    # Ctrl-C stops the node through rclpy's own handler (the context shuts down, spin
    # returns). Python's would raise KeyboardInterrupt at any bytecode: also inside the
    # clean-up below, where launch's SIGINT lands after the terminal's.
    signal.signal(signal.SIGINT, _no_keyboard_interrupt)
    problem = params_file_problem(sys.argv if args is None else args, name)
    if problem:
        rclpy.logging.get_logger(name).fatal(f'cannot start: {problem}')
        raise SystemExit(1)
    try:
        rclpy.init(args=args)
    except rclpy_implementation.RCLError as error:  # e.g. a params file rcl cannot use
        rclpy.logging.get_logger(name).fatal(f'cannot start: {one_line(error)}')
        raise SystemExit(1) from None
    node = None
    # An executor of its own, shut down before the context: rclpy.spin's global one would
    # release its SIGINT guard condition only in a finaliser at exit, after the context.
    executor = SingleThreadedExecutor()
    try:
        node = make_node()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except rclpy_implementation.RCLError:
        # rclpy's SIGINT handler shuts the context down between two bytecodes, possibly
        # inside a callback, whose next publish then fails: that is the shutdown too.
        if rclpy.ok():
            raise
    except (ValueError, ParameterException) as error:
        if node is not None:
            raise
        rclpy.logging.get_logger(name).fatal(f'cannot start: {error}')
        raise SystemExit(1) from None
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():  # rclpy.try_shutdown() is newer than Humble
            rclpy.shutdown()
        # Python's exit would put SIGINT back to its default action, which kills: a late
        # Ctrl-C is ignored instead.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _no_keyboard_interrupt(signum: int, frame: object) -> None:
    """Take SIGINT without raising: rclpy's handler, installed over this one, stops spin."""
