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

"""
Parse a robot_description off the executor thread, so commands go on meanwhile.

A description arrives in a subscription callback; parsing and building the model of a big
one takes long enough to stall the command stream. `DescriptionLoader` refuses one too
big by its size at once, parses the rest on a worker thread, newest first (one waiting at
most: a newer description replaces it), and hands each result back on the executor thread
through a guard condition.
"""

from collections.abc import Callable
import threading

from fabrik_ros.chain import Chain
from fabrik_ros.model_change import description_size_problem
from rclpy.node import Node


class DescriptionLoader:
    """Build chains from URDF text on a worker thread; adopt them on the executor's."""

    def __init__(self, node: Node, build: Callable[[str], Chain],
                 adopt: Callable[[str, Chain | ValueError], None]) -> None:
        """`build` runs on the worker (ValueError: refused); `adopt` on the executor."""
        self._build, self._adopt = build, adopt
        self._lock = threading.Lock()
        self._waiting: str | None = None  # the newest description not parsed yet
        self._done: tuple[str, Chain | ValueError] | None = None
        self._worker: threading.Thread | None = None
        self._guard = node.create_guard_condition(self._hand_over)

    def submit(self, urdf: str) -> None:
        """Parse `urdf` soon (it replaces one still waiting); refuse it now if too big."""
        problem = description_size_problem(urdf)
        if problem:
            self._adopt(urdf, ValueError(problem))
            return
        with self._lock:
            self._waiting = urdf
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, daemon=True,
                                                name='robot_description')
                self._worker.start()

    @property
    def busy(self) -> bool:
        """Tell whether a description is being parsed or waits for it."""
        with self._lock:
            return self._worker is not None or self._done is not None

    def _work(self) -> None:
        """Parse the waiting descriptions, the newest each time, until none waits."""
        while True:
            with self._lock:
                urdf, self._waiting = self._waiting, None
                if urdf is None:
                    self._worker = None
                    return
            try:
                result: Chain | ValueError = self._build(urdf)
            except ValueError as error:  # a ChainError is a ValueError
                result = error
            with self._lock:
                self._done = (urdf, result)
            self._guard.trigger()

    def _hand_over(self) -> None:
        """Adopt the newest result on the executor thread."""
        with self._lock:
            done, self._done = self._done, None
        if done is not None:
            self._adopt(*done)
