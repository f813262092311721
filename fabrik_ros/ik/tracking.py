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
The lean path of tracking: one closing step from a seed already close to its target.

It answers exactly what the full solve would from such a seed, without the full solve's
bookkeeping (groups, passes, scores, budgets); where the full solve would do more it
declines and the full solve starts from the same seed.
"""

from __future__ import annotations

import math

from .linalg import _pushed
from .model import _Tree
from .orientations import _one_effector_fit, _Orientations
from .points import _State
from .result import _Steps, IkResult
from .rotations import _ORIGIN
from .tuning import DAMPING_FLOOR, DAMPING_START, POSE_DAMPING_FLOOR, STALL


class _Tracking:
    """IkSolver's lean tracking path (see _track)."""

    def _track(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
               rotations: list | None, orientations: _Orientations | None, deadline: float
               ) -> IkResult | None:
        """
        Return the answer for a seed already close to its target (tracking), or None.

        The lean path of a single effector on a pinned root: what the full solve does from
        such a seed (no FABRIK, one closing step with the same damping, limit steering and
        clamping, no restart) without its bookkeeping (groups, passes, scores, budgets).
        None when the full solve would do more: the target beyond reach, the seed farther
        than _track_radius (one step would likely not do), the time budget spent, or the
        step not lowering the error to the tolerance; the full solve then starts from the
        same seed.
        """
        effector = tree.effectors[0]
        goal = targets[0]
        tolerance = self.tolerance
        if not effector.path or \
                math.dist(goal, start.points[effector.anchor]) > effector.reach + tolerance:
            return None
        objective, error = _one_effector_fit(start, goal, effector.point, orientations)
        excess = max(math.sqrt(objective), 1e-15)
        if excess > self._track_radius:
            return None
        history = [math.sqrt(objective)]
        state = start
        # Open (_Solve._open; with weight 1 the excess is at least the error).
        if error > tolerance and excess > STALL * tolerance:
            if deadline < math.inf and self.clock() >= deadline:
                return None
            rows = tree.jacobian(start, False, [0])
            x, y, z = start.points[effector.point]
            residual = [goal[0] - x, goal[1] - y, goal[2] - z]
            if orientations is not None:
                orientations.extend(start, rows, residual)
            weights, push = ([], []) if orientations is not None and len(rows) >= len(
                rows[0]) else self.limits.steering(start.q, rows, residual, True)
            aim = _pushed(rows, residual, push) if push else residual
            floor = DAMPING_FLOOR if orientations is None else POSE_DAMPING_FLOOR
            q = self.limits.limited_step(start.q, rows, aim, weights, push,
                                         max(DAMPING_START * excess ** 2, floor))[0]
            state = tree.sweep(q, _ORIGIN)
            new_objective, new_error = _one_effector_fit(state, goal, effector.point,
                                                         orientations)
            if new_objective >= objective or new_error > tolerance:
                return None
            history.append(math.sqrt(new_objective))
        return self._result(state, tree, targets, rotations, _Steps(
            0, len(history) - 1, 0, error, error, history, None, False), orientations)
