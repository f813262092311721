"""The `main` of every fabrik_ros node: init, spin, a clean exit, configuration errors."""

from collections.abc import Callable

import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node


def run_node(make_node: Callable[[], Node], name: str, args: list[str] | None = None) -> None:
    """
    Spin the node `make_node()` builds until Ctrl-C or an external shutdown.

    Both are normal exits. A configuration error while the node is built (a ValueError,
    ChainError included, or a refused parameter) is logged with its message under `name`,
    without a traceback, and the process exits with status 1.
    """
    rclpy.init(args=args)
    node = None
    try:
        try:
            node = make_node()
        except (ValueError, ParameterException) as error:
            rclpy.logging.get_logger(name).fatal(f'cannot start: {error}')
            raise SystemExit(1) from None
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():  # rclpy.try_shutdown() is newer than Humble
            rclpy.shutdown()
