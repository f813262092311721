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
An answer's clearance from the frames the solver computed for it: no second FK.

The solver keeps its last answer's state (fabrik_ros.ik.points._State): every joint's frame
in its canonical form (rotation R C_j, C_j the joint's axis frame from the layout, R the FK
frame's; origin the joint's), the base's last. The check (fabrik_ros.collision.nearest)
places its points with the FK frames side by side in one product; turned by C_j^T in their
joint's rows, the same points placed by the canonical frames land where the FK frames put
them, to rounding. Imports numpy, the check and the package's rotations.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

from fabrik_ros.collision.nearest import CheckRows, nearest_pair
import numpy as np

from .rotations import _axis_frame, _ORIGIN

if TYPE_CHECKING:   # the solver imports this module through collisions
    from .points import _State
    from .result import IkResult
    from .solver import IkSolver


class AnswerFrames:
    """A chain's check rows placed by the solver's canonical frames (see the module)."""

    def __init__(self, chain: object) -> None:
        """Keep the chain; the rows' canonical points are made when first needed."""
        self.chain = chain
        self._rows: CheckRows | None = None
        self._local: np.ndarray | None = None
        self._index: np.ndarray | None = None

    def _lay_out(self, rows: CheckRows) -> None:
        """Turn rows.local's frame rows into the canonical frames; index the layout."""
        frames = rows.frames
        turns = [np.eye(3)] + [_axis_frame(joint.axis)
                               for joint in self.chain.joints[:frames - 1]]
        local = rows.local.copy()
        for row, turn in enumerate(turns):
            local[4 * row:4 * row + 3] = turn.T @ rows.local[4 * row:4 * row + 3]
        # The (4, 4 f) frames as bounds lays them out, from the frames' 12-tuples (rotation
        # row-major, origin) one after the other and then 0.0, 1.0 for their fourth rows.
        end = 12 * frames
        self._index = np.array([[12 * frame + (3 * i + k if k < 3 else 9 + i) if i < 3
                                 else end + (k == 3) for frame in range(frames)
                                 for k in range(4)] for i in range(4)])
        self._local, self._rows = local, rows

    def nearest(self, rows: CheckRows, solver: IkSolver, answer: IkResult, floor: float
                ) -> tuple[float, int] | None:
        """
        Return nearest_pair's distance and pair at the answer from the solver's frames.

        floor: as nearest_pair takes it. None where the solver's last state is not the
        answer's (or its root moved). Needs a pair to check (rows.any).
        """
        _, state = solver._last
        if state.base != _ORIGIN or state.q != answer.q.tolist():
            return None
        distance, pair, _ = nearest_pair(rows, None, floor, self.placed(rows, state))
        return distance, pair

    def placed(self, rows: CheckRows, state: _State) -> np.ndarray:
        """Return the points of rows.local in the base frame (4, k) from a state's frames."""
        if rows is not self._rows:
            self._lay_out(rows)
        frames, count = state.frames, rows.frames
        values = np.fromiter(chain(frames[-1], *frames[:count - 1], (0.0, 1.0)), float,
                             12 * count + 2)    # (quicker than a tuple of them to an array)
        return values.take(self._index).dot(self._local)
