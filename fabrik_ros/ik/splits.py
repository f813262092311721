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
Closed-form splits of a full pose: a spherical wrist, an arm of the UR family or the Panda's.

The arm's sub-solver (the joints above the wrist) is handed in by the solver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import math
from typing import TYPE_CHECKING

from fabrik_ros.chain import Chain
import numpy as np

from .model import _new_tuple, _Tree
from .offset_elbow import offset_elbow, OffsetElbow, swept_angles
from .offset_wrist import offset_wrist, offset_wrist_angles, OffsetWrist
from .orientations import _Orientations
from .points import _State
from .result import _Steps, IkResult
from .rotations import _apply, _IDENTITY, _ORIGIN, _product, _transposed, _turn
from .tuning import FREE_STEP, FREE_STEPS, TRACK_FREES, WRIST_BRANCHES, WRIST_RESTARTS
from .wrist import (shoulder_angles, spherical_shoulder, spherical_wrist, split_at_wrist,
                    turned_back_vector, turned_back_wrist_angles, turned_wrist, wrist_angles,
                    wrist_pointing)

if TYPE_CHECKING:
    from .solver import IkSolver


class _Split:
    """
    A cold pose of an arm whose wrist gives it a closed form, or part of one.

    Subclasses find the joint angles (pose_angles); this answers with them, for cold solves
    only: a seed within the closing radius (tracking) is left to the closing steps, which
    move it on continuously where an exact wrist would swing about near its singularity
    (the wrist straight: only the sum of its outer angles is set there). Where pose_angles
    finds none, or its answer misses, the whole arm's solve takes over from the seed. Where
    a redundant arm's closing steps from a tracked seed fall short, the solution nearest
    the seed (nearest_angles) is tried before any restart.
    """

    def __init__(self, solver: IkSolver) -> None:
        self.solver = solver
        self.lower, self.upper = solver.limits.lower, solver.limits.upper

    @staticmethod
    def of(solver: IkSolver, max_restarts: int) -> _Split | None:
        """Return the split for the solver's chain and mode, None if it has none."""
        return _Wrist.of(solver, max_restarts) or _OffsetWrist.of(solver) \
            or _OffsetElbow.of(solver)

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """
        Return joint angles for the pose (None if none), what they took and FABRIK's error.

        What they took: [FABRIK iterations, closing steps, restarts]; FABRIK's error: metres
        after its stage (NaN where there was none).
        """
        raise NotImplementedError

    def nearest_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                       rotation: tuple[float, ...]) -> list[float] | None:
        """Return the exact solution nearest a tracked seed (see _Wrist); None: none here."""
        return None

    def solve(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
              rotations: list[tuple[float, ...]], orientations: _Orientations,
              deadline: float, trace: bool, package: Callable[..., IkResult]
              ) -> tuple[IkResult | None, _Steps | None]:
        """
        Return the answer and None, or None and what the attempt spent (None: nothing).

        The answer logs the seed and itself (history, trace). package(state, tree, targets,
        rotations, steps, orientations): the solver's answer of a final state
        (IkSolver._result).
        """
        solver = self.solver
        goal, rotation = targets[0], rotations[0]
        distance = math.dist(goal, start.points[tree.effectors[0].point])
        turned = orientations.squares(start)[0]
        rotated = math.sqrt(turned)
        initial = rotated if rotated > distance else distance   # max(), without a call
        if initial <= solver.closing_radius:
            return None, None
        q, counts, fabrik_error = self.pose_angles(tree, start, goal, rotation, deadline)
        if q is None:
            return None, self._spent(counts, deadline, trace)
        state = tree.sweep(q, _ORIGIN)
        objective = math.dist(goal, state.points[tree.effectors[0].point]) ** 2 \
            + orientations.squares(state)[0]
        result = package(state, tree, targets, rotations, _new_tuple(_Steps, (
            *counts, initial, fabrik_error,
            [math.sqrt(distance * distance + turned), math.sqrt(objective)],
            [np.array(start.q), np.array(state.q)] if trace else None, False)), orientations)
        if result.reached:
            return result, None
        return None, self._spent(counts, deadline, trace)

    def _spent(self, counts: list[int], deadline: float, trace: bool) -> _Steps:
        """Return what pose_angles spent, for the whole arm's solve that goes on after it."""
        # It goes on with the iterations left, and its own restarts.
        return _Steps(counts[0], counts[1], 0, 0.0, math.nan, [], [] if trace else None,
                      self.solver.clock() >= deadline)


class _Wrist(_Split):
    """
    A spherical wrist (fabrik_ros.ik.wrist): the pose split at the wrist centre.

    The tool's target pose puts the wrist centre at one point: the arm above the wrist
    reaches it (a position solve of its own: FABRIK and closing steps on three joints of a
    six-joint arm), then the wrist turns the tool onto the target orientation in closed
    form, the solution nearest the seed ('full'), or points the tool axis along the
    target's with the last wrist joint at its seed ('axis': where the centre lies on the
    tool axis, which then fixes it). The tool's position error is then the centre's, its
    orientation error rounding. None where the centre lies beyond the arm's reach or is not
    reached within WRIST_RESTARTS restarts, or the wrist's limits allow neither solution on
    the arm's branches tried (the attempts take at most half of max_iterations).
    """

    def __init__(self, solver: IkSolver, arm: IkSolver, centre: tuple[float, float, float],
                 axes: list[tuple[float, float, float]], zero: tuple[float, ...]) -> None:
        super().__init__(solver)
        self.arm = arm              # the joints above the wrist, tipped at its centre
        self.centre = centre        # metres, the wrist centre in the tool frame
        self.wrist = spherical_wrist(axes)  # the wrist's axes in the canonical frame of the
        #                             joint above it, wrist at zero
        self.zero = zero            # the tool frame in that frame, wrist at zero
        # A pointed tool ('axis'): its axis in the tool frame and in that frame.
        self.tool_axis = solver.tool_axes[0] if solver.orientation_modes[0] == 'axis' \
            else None
        self.along = _apply(zero, self.tool_axis) if self.tool_axis else None
        self.k = k = arm.chain.dof  # the wrist's first joint
        # The limits of the arm's joints and of the wrist's, apart (see _nearest_at).
        self.arm_limits = self.lower[:k], self.upper[:k]
        self.wrist_limits = self.lower[k:], self.upper[k:]
        self.branches = arm._restart_seeds[:WRIST_BRANCHES]  # seeds of other arm branches
        effector = arm._tree.effectors[0]
        # The arm's fixed point and its reach: a centre farther away is out of reach.
        self.anchor, self.reach = arm._tree.neutral.points[effector.anchor], effector.reach
        # A spherical shoulder puts the arm's angles in closed form too (see _closed_form).
        self.shoulder = spherical_shoulder(arm.chain, solver.tolerance)
        # The frame of the joint above the wrist at q = 0, transposed, and the wrist in the
        # base frame at q = 0 (see _closed_form).
        above = solver._tree.sweep([0.0] * solver.chain.dof, _ORIGIN).frames[self.k - 1][:9]
        self.above_zero, self.base_wrist = _transposed(above), turned_wrist(self.wrist, above)

    @classmethod
    def of(cls, solver: IkSolver, max_restarts: int) -> _Wrist | None:
        """Return the split for the solver's chain, None if it has no such wrist."""
        split = split_at_wrist(solver.chain, solver.tolerance,
                               solver.tool_axes[0] if solver.orientation_modes[0] == 'axis'
                               else None)
        if split is None:
            return None
        arm = _arm_solver(solver, split.arm, min(max_restarts, WRIST_RESTARTS))
        # A joint's canonical frame is its parent's times its rotation at zero, turned about
        # its z axis; the product of the wrist's rotations at zero carries its axes.
        frame, axes = _IDENTITY, []
        for joint in solver._tree.joints[arm.chain.dof:]:
            frame = _product(frame, joint.rotation)
            axes.append((frame[2], frame[5], frame[8]))
        return cls(solver, arm, split.centre, axes,
                   _product(frame, solver._tree.effectors[0].tool))

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """Return the arm's angles to the centre and the wrist's; see _Split.pose_angles."""
        solver, k = self.solver, self.k
        counts = [0, 0, 0]
        # The centre lies on the tool axis when pointing, where any roll puts it alike.
        x, y, z = _apply(rotation, self.centre)
        centre = goal[0] + x, goal[1] + y, goal[2] + z
        if math.dist(centre, self.anchor) > self.reach + solver.tolerance:
            return None, counts, math.nan
        if self.tool_axis is None:
            turn = _turn(rotation, self.zero)
        else:
            toward = _apply(rotation, self.tool_axis)
        if self.shoulder is not None:
            q = self._closed_form(tree, start, centre,
                                  turn if self.tool_axis is None else toward)
            if q is not None:
                return q, counts, math.nan
        lower, upper = self.wrist_limits
        # From the seed's branch, then from others where the wrist's limits rule it out.
        for attempt, seed in enumerate([start.q[:k]] + self.branches):
            # At most half the iterations, so that the whole arm's solve keeps the rest.
            self.arm.max_iterations = solver.max_iterations // 2 - counts[0] - counts[1]
            budget = None
            if deadline < math.inf:
                budget = deadline - solver.clock()
            if self.arm.max_iterations < 1 or budget is not None and budget <= 0.0:
                break
            arm = self.arm.solve(centre, seed, timeout=budget)
            counts = [counts[0] + arm.fabrik_iterations, counts[1] + arm.closing_steps,
                      counts[2] + arm.restarts + (attempt > 0)]
            if not arm.reached:
                break
            q = arm.q.tolist()
            above = _transposed(tree.sweep(q + start.q[k:], _ORIGIN).frames[k - 1])
            #       (the frame of the joint above the wrist, which the wrist leaves put)
            angles = wrist_angles(self.wrist, _product(above, turn), start.q[k:], lower,
                                  upper) if self.tool_axis is None else wrist_pointing(
                self.wrist, self.along, _apply(above, toward), start.q[k:], lower, upper)
            if angles is not None:
                return q + angles, counts, arm.fabrik_error
        return None, counts, math.nan

    def _closed_form(self, tree: _Tree, start: _State, centre: tuple[float, float, float],
                     aim: tuple[float, ...]) -> list[float] | None:
        """
        Return the whole arm's angles in closed form (a spherical shoulder), None if none fit.

        aim: the wrist's turn ('full') or the tool axis's target direction ('axis'). Of the
        arm's solutions (elbow and shoulder either way) and the wrist's, the one nearest the
        seed within the limits; a redundant shoulder joint keeps its seed angle, or where
        no solution fits there, the nearest of FREE_STEPS steps either way that fits.
        """
        seed, axes = start.q, self._wrist_axes(aim)
        if len(self.shoulder.axes) == 2:
            return self._nearest_at(seed, centre, aim, axes, None)[0]
        held, low, high = seed[2], self.lower[2], self.upper[2]
        for step in range(FREE_STEPS + 1):  # (the seed's angle first: it mostly fits)
            for free in (held + step * FREE_STEP, held - step * FREE_STEP) if step else (held,):
                if low <= free <= high:
                    best = self._nearest_at(seed, centre, aim, axes, free)[0]
                    if best is not None:
                        return best
        return None

    def _wrist_axes(self, aim: tuple[float, ...]) -> tuple | None:
        """Return a full pose's wrist axis a3 and the direction across it (None: 'axis')."""
        if self.tool_axis is not None:
            return None
        return _apply(aim, self.wrist.third), _apply(aim, self.wrist.across)

    def _nearest_at(self, seed: list[float], centre: tuple[float, float, float],
                    aim: tuple[float, ...], axes: tuple | None, free: float | None
                    ) -> tuple[list[float] | None, float]:
        """
        Return the closed form's solution nearest the seed with the free angle at `free`.

        axes: _wrist_axes(aim). With its squared distance from the seed (radians squared);
        None and inf where no solution fits the limits (see _closed_form).
        """
        k, shoulder, above_zero = self.k, self.shoulder, self.above_zero
        (arm_lower, arm_upper), (wrist_lower, wrist_upper) = self.arm_limits, self.wrist_limits
        wrist_seed = seed[k:]
        best, distance = None, math.inf
        # Nearest the seed first: the wrist's part of the distance only adds to the arm's.
        solutions = shoulder_angles(shoulder, centre, free, seed[:k], arm_lower, arm_upper)
        solutions.sort()    # (a new list of its own: sorted in place)
        for moved, q in solutions:
            if moved >= distance:
                break
            # The wrist's turn, in the base frame at q = 0 (turned back by the arm).
            if axes is not None:
                found = turned_back_wrist_angles(
                    self.base_wrist, shoulder.arm, q, axes[0], axes[1], wrist_seed,
                    wrist_lower, wrist_upper, distance - moved)
                if found is not None and moved + found[1] < distance:
                    best, distance = q + found[0], moved + found[1]
                continue
            angles = wrist_pointing(
                self.wrist, self.along, _apply(above_zero, turned_back_vector(
                    shoulder.arm, q, aim)), wrist_seed, wrist_lower, wrist_upper)
            if angles is not None:
                moved += _squared(angles, wrist_seed)
                if moved < distance:
                    best, distance = q + angles, moved
        return best, distance

    def nearest_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                       rotation: tuple[float, ...]) -> list[float] | None:
        """
        Return the exact solution of a full pose nearest the seed (tracking), None if none.

        For a redundant arm whose closing steps from a tracked seed fall short (near a
        singularity they crawl; at a limit they stall): the closed form over the free
        shoulder angle, scanned TRACK_FREES radians either way of the seed's and refined
        twice around the nearest, the solution nearest the seed (radians squared over all
        joints). The seed's branch where it reaches the pose, the nearest other where not.
        """
        if self.shoulder is None or len(self.shoulder.axes) != 3 or self.tool_axis is not None:
            return None
        x, y, z = _apply(rotation, self.centre)
        centre = goal[0] + x, goal[1] + y, goal[2] + z
        if math.dist(centre, self.anchor) > self.reach + self.solver.tolerance:
            return None
        aim, seed = _turn(rotation, self.zero), start.q
        axes, low, high = self._wrist_axes(aim), self.lower[2], self.upper[2]
        best, distance, at = None, math.inf, seed[2]
        offsets = [0.0] + [sign * offset for offset in TRACK_FREES for sign in (1.0, -1.0)]
        for spacing in (None, TRACK_FREES[0] / 2.0, TRACK_FREES[0] / 4.0):
            around = at
            for offset in offsets if spacing is None else (spacing, -spacing):
                free = around + offset
                # (The free joint's own move is part of the distance: farther is no nearer.)
                if low <= free <= high and (free - seed[2]) ** 2 < distance:
                    found, moved = self._nearest_at(seed, centre, aim, axes, free)
                    if moved < distance:
                        best, distance, at = found, moved, free
        return best


class _WholeArm(_Split):
    """
    An arm whose full poses have a closed form as a whole: pose_angles is nearest_angles.

    Subclasses name the arm's detection (detect: chain, tolerance -> arm or None) and its
    solutions (nearest_angles).
    """

    detect: Callable[[Chain, float], object | None]

    def __init__(self, solver: IkSolver, arm: object) -> None:
        super().__init__(solver)
        self.arm = arm

    @classmethod
    def of(cls, solver: IkSolver) -> _WholeArm | None:
        """Return the closed form for the solver's chain, None if it is not such an arm."""
        arm = cls.detect(solver.chain, solver.tolerance) \
            if solver.orientation_modes[0] == 'full' else None
        return cls(solver, arm) if arm is not None else None

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """Return the closed form's angles; see _Split.pose_angles."""
        return self.nearest_angles(tree, start, goal, rotation), [0, 0, 0], math.nan


class _OffsetWrist(_WholeArm):
    """
    An arm of the UR family (fabrik_ros.ik.offset_wrist): full poses in closed form.

    Its eight solutions (shoulder, wrist and elbow either way) are exact; the one nearest
    the seed within the limits is the answer, None where there is none (out of reach, or
    the sixth axis along the parallel ones: a singularity).
    """

    detect = staticmethod(offset_wrist)
    arm: OffsetWrist

    def nearest_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                       rotation: tuple[float, ...]) -> list[float] | None:
        """Return the exact solution nearest the seed, None if none fits the limits."""
        return offset_wrist_angles(self.arm, goal, rotation, start.q, self.lower, self.upper)


class _OffsetElbow(_WholeArm):
    """
    A seven-joint arm of the Panda's kind (fabrik_ros.ik.offset_elbow): full poses in closed form.

    The seventh joint is the redundancy: at its seed angle first, then at FREE_STEPS steps of
    FREE_STEP either way, then at halves and quarters of a step between them, the first
    angle at which a solution fits the limits gives the answer (of its up to eight, the one
    nearest the seed); None where none does (out of reach, or limits that no angle tried
    fits).
    """

    detect = staticmethod(offset_elbow)
    arm: OffsetElbow

    def nearest_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                       rotation: tuple[float, ...]) -> list[float] | None:
        """Return the solution at the first free angle that fits, nearest the seed; or None."""
        return swept_angles(self.arm, goal, rotation, start.q, self.lower, self.upper,
                            FREE_STEP, FREE_STEPS)


def _arm_solver(solver: IkSolver, arm: Chain, max_restarts: int) -> IkSolver:
    """
    Return a solver of the joints above a wrist with the solver's settings.

    Its position solves keep to FABRIK and closing steps (not fabrik_ros.ik.reach's closed
    form): a split tries the shoulder's closed form itself, and falls back on the arm's.
    """
    solve = type(solver)(arm, solver.tolerance, solver.max_iterations, fit=solver.fit,
                         fabrik_gain=solver.fabrik_gain, max_restarts=max_restarts,
                         clock=solver.clock, self_collision=False)
    solve._reach = None
    return solve


def _squared(angles: Sequence[float], seed: Sequence[float]) -> float:
    """Return the squared distance (radians squared) of joint angles from the seed's."""
    moved = 0.0     # summed in order, as sum() would (a loop: no generator per call)
    for t, s in zip(angles, seed):
        moved += (t - s) ** 2
    return moved
