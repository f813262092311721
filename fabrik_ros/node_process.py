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

"""A fabrik_ros node run as a child process, its output in a log file (demo and tests)."""

import os
from pathlib import Path
import signal
import subprocess
import sys

STOP_TIMEOUT = 5.0  # seconds a node gets to exit after SIGINT before it is killed


class NodeProcess:
    """One ``python -m fabrik_ros.<module> --ros-args ...`` child process."""

    def __init__(self, module: str, ros_args: list[str], log_path: Path,
                 env: dict[str, str] | None = None) -> None:
        """
        Start the module with the given ROS arguments, stdout and stderr to log_path.

        The child runs detached (setsid), so a Ctrl-C in the terminal reaches it only through
        stop(), after the parent has had its say. env defaults to this process's environment
        (which carries the loopback DDS settings and the ROS domain).
        """
        self.module = module
        self.log_path = log_path
        with open(log_path, 'wb') as log:
            self.popen = subprocess.Popen(
                [sys.executable, '-u', '-m', f'fabrik_ros.{module}', '--ros-args', *ros_args],
                env=dict(os.environ) if env is None else env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def running(self) -> bool:
        """Tell whether the process is still alive."""
        return self.popen.poll() is None

    def stop(self) -> int:
        """Stop it like Ctrl-C does (SIGINT, then SIGKILL); return its exit code."""
        if self.running():
            self.popen.send_signal(signal.SIGINT)
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode

    def log(self) -> str:
        """Return everything the process printed so far."""
        return self.log_path.read_text(errors='replace')

    def log_tail(self, lines: int = 15) -> str:
        """Return the last lines the process printed, prefixed with the module name."""
        return '\n'.join(f'  {self.module}| {line}' for line in self.log().splitlines()[-lines:])
