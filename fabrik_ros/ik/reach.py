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
Cold position targets reached in closed form, on arms whose geometry gives them one.

An arm with a spherical shoulder (_ShoulderReach): the joints past the elbow keep their
seed angles, so the tool is a rigid lever of the elbow's link: the elbow's angle sets the
tool's distance from the shoulder point (subproblem 3) and the shoulder turns it onto the
target's direction (subproblem 2), as fabrik_ros.ik.wrist solves the wrist centre of a full
pose. An arm of the UR family (_OffsetReach): the seed's tool orientation, turned about the
first axis toward the target, makes the position a full pose, which
fabrik_ros.ik.offset_wrist solves exactly. Units: metres, radians.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import TYPE_CHECKING

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .model import _new_tuple, _Tree
from .offset_wrist import offset_wrist, offset_wrist_angles, OffsetWrist
from .points import _State
from .result import _Steps, IkResult
from .rotations import _ORIGIN, _product
from .subproblems import _turn_angle, _turned, spin
from .wrist import _CENTRE_OFF, serial_revolute, Shoulder, shoulder_angles, spherical_shoulder

if TYPE_CHECKING:
    from .solver import IkSolver

_MOVED = 4      # a shoulder arm's joints that move: the shoulder's three and the elbow


class _ClosedReach:
    """
    A single arm's cold position solve in closed form (see the module docstring).

    Subclasses find the joint angles (angles); this answers with them where they reach the
    target within the tolerance. Where they give none, or miss, or the seed is within the
    closing radius (tracking) or the tolerance, the solve goes on as without it, so no
    target that the iterative solve reaches is lost.
    """

    def __init__(self, effector_point: int, tolerance: float, closing_radius: float) -> None:
        self.point = effector_point         # the tool's point in the tree
        self.tolerance, self.closing_radius = tolerance, closing_radius

    @classmethod
    def of(cls, solver: IkSolver) -> _ClosedReach | None:
        """Return the closed form of the solver's position solves, None if it has none."""
        if solver.root != 'pinned' or not solver._trackable:
            return None
        return _ShoulderReach.built(solver) or _OffsetReach.built(solver)

    def angles(self, tree: _Tree, start: _State, target: tuple[float, float, float]
               ) -> list[float] | None:
        """Return joint angles that put the tool at the target, None if none fit."""
        raise NotImplementedError

    def solve(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
              rotations: list | None, trace: bool, package: Callable[..., IkResult]
              ) -> IkResult | None:
        """
        Return the closed form's answer from a cold seed, None where it gives none.

        rotations: the targets' orientations, reported only. package(state, tree, targets,
        rotations, steps): the solver's answer of a final state (IkSolver._result); the
        answer logs the seed and itself (history, trace).
        """
        target = targets[0]
        distance = math.dist(target, start.points[self.point])
        if distance <= self.closing_radius or distance <= self.tolerance:
            return None     # tracking, or reached already: the seed stays
        q = self.angles(tree, start, target)
        if q is None:
            return None
        state = tree.sweep(q, _ORIGIN)
        error = math.dist(target, state.points[self.point])
        if error > self.tolerance:
            return None
        return package(state, tree, targets, rotations, _new_tuple(_Steps, (
            0, 0, 0, distance, distance, [distance, error],
            [np.array(start.q), np.array(state.q)] if trace else None, False)))


class _ShoulderReach(_ClosedReach):
    """
    A spherical shoulder, an elbow and a wrist: the shoulder and elbow reach the target.

    Seven revolute joints in a row to one tool: three whose axes pass through one point
    (the shoulder, the third redundant for a position), an elbow that changes the tool's
    distance from it and three more (the wrist), as the iiwa's and the Panda's. The wrist's
    joints and the redundant shoulder joint keep their seed angles. Of the solutions (elbow
    and shoulder either way) within the limits, the one nearest the seed. (Other chains
    keep FABRIK: a tentacle's long chain past a shoulder its bending all along.)
    """

    def __init__(self, shoulder: Shoulder, effector_point: int, tolerance: float,
                 closing_radius: float) -> None:
        super().__init__(effector_point, tolerance, closing_radius)
        self.shoulder = shoulder            # its lever: the wrist at zero
        self._held: tuple[list[float], Shoulder | None] = ([], None)    # the last seed's

    @classmethod
    def built(cls, solver: IkSolver) -> _ShoulderReach | None:
        """Return this closed form for a pinned single arm's chain, None if it has none."""
        chain = solver.chain
        if not serial_revolute(chain, 7):
            return None
        arm = Chain(chain.base_link, chain.joints[:_MOVED], [Effector('tool', _MOVED - 1,
                                                                      _tool_in(chain))])
        shoulder = spherical_shoulder(arm, solver.tolerance)
        if shoulder is None:
            return None
        return cls(shoulder, solver._tree.effectors[0].point, solver.tolerance,
                   solver.closing_radius)

    def angles(self, tree: _Tree, start: _State, target: tuple[float, float, float]
               ) -> list[float] | None:
        """Return the shoulder's and elbow's angles nearest the seed, the rest the seed's."""
        seed = start.q
        shoulder = self._shoulder(tree, seed[_MOVED:])
        if shoulder is None:
            return None
        found = shoulder_angles(shoulder, target, seed[2], seed[:_MOVED], tree.lower[:_MOVED],
                                tree.upper[:_MOVED])
        if not found:
            return None
        return min(found)[1] + seed[_MOVED:]

    def _shoulder(self, tree: _Tree, held: list[float]) -> Shoulder | None:
        """
        Return the shoulder whose lever holds the joints past the elbow at these angles.

        The lever is the tool's place with the moving joints at zero (base frame); None
        where the elbow's angle would no longer change its distance from the shoulder.
        The last seed's is kept (solves from the neutral pose hold the same angles).
        """
        if held == self._held[0]:
            return self._held[1]
        tool = tree.sweep([0.0] * _MOVED + held, _ORIGIN).points[self.point]
        shoulder = _levered(self.shoulder, tool, self.tolerance)
        self._held = (held, shoulder)
        return shoulder


class _OffsetReach(_ClosedReach):
    """
    An arm of the UR family (fabrik_ros.ik.offset_wrist): the position as a full pose.

    A position leaves the orientation free; this takes the one the seed's tool would have
    were it turned toward the target by the first joint alone (the seed's orientation
    turned about the first axis by the angle between the seed's tool and the target about
    it), so that the other joints move little where the target allows. Of that pose's
    exact solutions within the limits, the one nearest the seed.
    """

    def __init__(self, arm: OffsetWrist, effector_point: int, tolerance: float,
                 closing_radius: float, parent: int, tool: tuple[float, ...]) -> None:
        super().__init__(effector_point, tolerance, closing_radius)
        self.arm = arm
        self.parent, self.tool = parent, tool   # the tool's joint; its frame in the joint's

    @classmethod
    def built(cls, solver: IkSolver) -> _OffsetReach | None:
        """Return this closed form for a pinned single arm's chain, None if it has none."""
        arm = offset_wrist(solver.chain, solver.tolerance)
        if arm is None:
            return None
        effector = solver._tree.effectors[0]
        return cls(arm, effector.point, solver.tolerance, solver.closing_radius,
                   effector.parent, effector.tool)

    def angles(self, tree: _Tree, start: _State, target: tuple[float, float, float]
               ) -> list[float] | None:
        """Return the exact solution of the turned seed orientation nearest the seed."""
        axis, (ox, oy, oz) = self.arm.first
        (tx, ty, tz), (px, py, pz) = target, start.points[self.point]
        turn = _turn_angle(axis, (px - ox, py - oy, pz - oz), (tx - ox, ty - oy, tz - oz))
        r = _product(start.frames[self.parent][:9], self.tool)
        # The seed's orientation turned: each of its columns (the tool's axes) turned.
        x = _turned(axis, turn, (r[0], r[3], r[6]))
        y = _turned(axis, turn, (r[1], r[4], r[7]))
        z = _turned(axis, turn, (r[2], r[5], r[8]))
        rotation = (x[0], y[0], z[0], x[1], y[1], z[1], x[2], y[2], z[2])
        return offset_wrist_angles(self.arm, target, rotation, start.q, tree.lower, tree.upper)


def _tool_in(chain: Chain) -> np.ndarray:
    """Return the tool's origin at q = 0 in the elbow's frame (after its motion)."""
    kinematics = chain.forward(np.zeros(chain.dof))
    rotation, origin = kinematics.rotations[_MOVED - 1], kinematics.positions[_MOVED - 1]
    return rotation.T @ (chain.tip_position(np.zeros(chain.dof)) - origin)


def _levered(shoulder: Shoulder, tool: tuple[float, float, float], tolerance: float
             ) -> Shoulder | None:
    """
    Return the shoulder with its tip at `tool` (base frame, moving joints at zero).

    None where the elbow's angle changes the tip's distance from the shoulder point too
    little (as spherical_shoulder rules it, tolerance metres).
    """
    (ux, uy, uz), (ex, ey, ez) = shoulder.elbow
    sx, sy, sz = shoulder.point
    lever = (tool[0] - ex, tool[1] - ey, tool[2] - ez)
    length = ux * lever[0] + uy * lever[1] + uz * lever[2]
    across = (lever[0] - length * ux, lever[1] - length * uy, lever[2] - length * uz)
    vx, vy, vz = ex - sx, ey - sy, ez - sz
    a = -2.0 * (vx * across[0] + vy * across[1] + vz * across[2])
    b = -2.0 * (vx * (uy * across[2] - uz * across[1]) + vy * (uz * across[0] - ux * across[2])
                + vz * (ux * across[1] - uy * across[0]))
    if math.hypot(a, b) < _CENTRE_OFF * tolerance * tolerance:
        return None
    c = vx * vx + vy * vy + vz * vz + lever[0] * lever[0] + lever[1] * lever[1] \
        + lever[2] * lever[2] + 2.0 * length * (vx * ux + vy * uy + vz * uz)
    return shoulder._replace(lever=lever, sinusoid=(a, b, c),
                             lever_spin=spin(shoulder.elbow[0], lever))
