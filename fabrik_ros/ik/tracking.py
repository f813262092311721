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
The lean path of tracking: a few closing steps from a seed already close to its target.

It answers exactly what the full solve would from such a seed, without the full solve's
bookkeeping (groups, passes, scores, budgets); where the full solve would do more it
declines and the full solve starts from the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from operator import add, le, sub

from .limits import _clamped, JointLimits
from .linalg import _NOT_POSITIVE_DEFINITE, _pushed
from .model import _Tree
from .orientations import _one_effector_fit, _Orientations
from .points import _State
from .result import _Steps, IkResult
from .rotations import _ORIGIN
from .tuning import (CARRY_WAIT, DAMPING_FLOOR, DAMPING_MAX, DAMPING_MIN, DAMPING_START,
                     EXPLORE_STALL, MOMENTUM, MOMENTUM_MOST, POSE_DAMPING_FLOOR, POSE_STALL,
                     REDUNDANT_MOMENTUM, REDUNDANT_MOVE_LEAST, STALL, STALL_RELATIVE,
                     TRACK_STEPS)

_new_tuple = tuple.__new__  # a _Steps from its fields without NamedTuple's Python __new__


class _Tracking:
    """IkSolver's lean tracking path (see _track), carried on along a fast track."""

    # The last fast-tracked move (see _note_move): its tree, seed and answer, and (six joints
    # or fewer) the last shortfall of a first closing step from a seed (see _tracked), or
    # None.
    _move: tuple[_Tree, list[float], list[float], list[float] | None] | None = None
    # The last lean path's first closing step's end less the carry it took (see _track).
    _first: list[float] | None = None
    # Carried steps in a row that did not close in one (see _tracked), and the solves left
    # to start ahead before the next is tried.
    _misses: int = 0
    _wait: int = 0

    def _tracked(self, tree: _Tree, seeded: _State, targets: list[tuple[float, float, float]],
                 rotations: list | None, orientations: _Orientations | None, deadline: float
                 ) -> IkResult | None:
        """
        Return the lean path's answer (_track), carried on along a fast track.

        A seed that is the last answer of a fast-tracked move (_note_move) starts ahead of
        itself (_tracked_ahead), or without redundancy (six joints or fewer), where the
        last such carried step closed in one, its first closing step carries on by what the
        last first step from a seed fell short of its answer. That shortfall is the step's
        second-order error (the curvature of the forward kinematics along the move); where
        it is much the same from one move to the next, one closing step and one forward
        kinematics close a move that needs two steps from the seed alone or two forward
        kinematics from ahead. Where it is not (the carried step needs more), starts ahead
        take over for 0, 1, 3, 7 and at most CARRY_WAIT solves as the misses go on in a
        row. Not after a move of some joint by more than MOMENTUM_MOST (near a singularity
        joints swing: carried on, a swing could cross into another branch). A carry that
        does not lower the error is dropped; where the lean path gives up the solve goes on
        from the seed exactly as without a carry or a start ahead.
        """
        move = self._move
        if move is not None and move[0] is tree and seeded is self._last[1] \
                and move[2] == seeded.q:
            if move[3] is None or self._wait:
                self._wait -= self._wait > 0
                tracked = self._tracked_ahead(tree, seeded, targets, rotations, orientations,
                                              deadline, move)
            elif max(map(abs, map(sub, seeded.q, move[1]))) <= MOMENTUM_MOST:
                tracked = self._track(tree, seeded, targets, rotations, orientations, deadline,
                                      move[3])
                if tracked is not None:
                    self._misses = self._misses + 1 if tracked.closing_steps > 1 else 0
                    self._wait = min(2 ** self._misses // 2 - 1, CARRY_WAIT) \
                        if self._misses else 0
                    self._note_move(tree, seeded, tracked, orientations, True)
            else:
                tracked = None
            if tracked is not None:
                return tracked
        tracked = self._track(tree, seeded, targets, rotations, orientations, deadline)
        self._note_move(tree, seeded, tracked, orientations, False)
        return tracked

    def _tracked_ahead(self, tree: _Tree, seeded: _State,
                       targets: list[tuple[float, float, float]], rotations: list | None,
                       orientations: _Orientations | None, deadline: float,
                       move: tuple[_Tree, list[float], list[float], list[float] | None]
                       ) -> IkResult | None:
        """
        Return the lean path's answer from a start ahead of the seed after `move`, or None.

        A seed that is the last answer of a fast-tracked move (_note_move) starts MOMENTUM
        (REDUNDANT_MOMENTUM with more than six joints) of that move further on, clipped
        into the limits: a target streamed from a moving arm lies about as far on again,
        and a start near it needs one closing step where the seed needs two. None for any
        other seed, after a move of some joint by more than MOMENTUM_MOST (near a
        singularity joints swing: carried on, a swing could cross into another branch),
        with redundancy after no joint's move above REDUNDANT_MOVE_LEAST (a
        slow move closes in one step from the seed: the start's forward kinematics would be
        spent for nothing) or after a move that took a joint into a limit's margin or deeper
        (carried on, it goes on against the first closing step's limit steering, and the
        arm drifts along its self-motion to the limit, the end of its branch, where the
        nearest solution lies on another: a flip), or where the lean path from there gives
        up: the solve then goes on from the seed exactly as without a start ahead.
        """
        q, limits = seeded.q, self.limits
        share = MOMENTUM if len(q) <= 6 else REDUNDANT_MOMENTUM
        # One loop, no comprehension, maps or min and max calls (the tracking solve's
        # cheapest): per joint its move, the largest move, and the start, clipped as
        # limits._clipped clips.
        ahead, most = [], 0.0
        for now, before, lo, hi in zip(q, move[1], limits.lower, limits.upper):
            change = now - before
            size = abs(change)
            most = size if size > most else most
            value = now + share * change
            ahead.append(lo if value < lo else hi if value > hi else value)
        if most > MOMENTUM_MOST or len(q) > 6 and most < REDUNDANT_MOVE_LEAST:
            return None
        if len(q) > 6 and not (all(map(le, limits.inner_lower, q))
                               and all(map(le, q, limits.inner_upper))):
            for now, before, low, high in zip(q, move[1], limits.inner_lower,
                                              limits.inner_upper):
                change = now - before
                if now < low and change < 0.0 or now > high and change > 0.0:
                    return None     # deeper into a limit's margin: see above
        start = tree.sweep(ahead, _ORIGIN)
        tracked = self._track(tree, start, targets, rotations, orientations, deadline)
        if tracked is not None:     # (a start ahead tells no shortfall: the last is kept)
            self._move = (tree, seeded.q, self._last[1].q, move[3])
        return tracked

    def _note_move(self, tree: _Tree, seeded: _State, tracked: IkResult | None,
                   orientations: _Orientations | None, carried: bool) -> None:
        """
        Keep the lean path's move from the seed if it was fast tracking, else forget it.

        Fast tracking: a move carried on from the last (carried) or a full pose answered by
        two or more closing steps (one closes a slow move): the next solve seeded with this
        answer carries it on (_tracked). Without redundancy (six joints or fewer) its answers
        are isolated, so the carried step closes on the one the seed leads to. With
        redundancy a start ahead's share along the self-motion carries on from move to move
        (a geometric sum: 1 / (1 - share) of it), and the arm drifts along it away from where
        the minimum-norm closing steps from the seed keep it: at a share of 0.8 the iiwa's
        drift ran into unreached targets and larger joint moves, at the smaller
        REDUNDANT_MOMENTUM it keeps off them, and most solves still close in one step.
        """
        if tracked is None or not (carried or tracked.closing_steps >= 2 and orientations
                                   is not None and orientations.items[0][1] == 'full'):
            self._move = None
            return
        answer, first = self._last[1].q, self._first
        short = None if len(answer) > 6 or first is None else list(map(sub, answer, first))
        self._move = (tree, seeded.q, answer, short)

    def _track(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
               rotations: list | None, orientations: _Orientations | None, deadline: float,
               carry: list[float] | None = None) -> IkResult | None:
        """
        Return the answer for a seed already close to its target (tracking), or None.

        The lean path of a single effector on a pinned root: what the full solve does from
        a seed within the closing radius (no FABRIK, closing steps with the same damping
        schedule, limit steering on the first and clamping, no restart) without its
        bookkeeping (groups, passes, scores, budgets), for at most TRACK_STEPS steps.
        None when the full solve would do more: the target beyond reach, the seed outside
        the closing radius, the time budget spent, a step that stalls or finds no damping
        lowering the error, or TRACK_STEPS steps short of the tolerance; the full solve
        then starts from the same seed. carry: joint values the first step adds to its own
        (see _tracked), dropped where they do not lower the error; the first step's end less
        the carry it took is kept (_first).
        """
        effector = tree.effectors[0]
        goal = targets[0]
        tolerance = self.tolerance
        distance = math.dist(goal, start.points[effector.point])
        if not effector.path or distance > self.closing_radius or \
                math.dist(goal, start.points[effector.anchor]) > effector.reach + tolerance:
            return None     # (the excess is at least the distance: a cold seed, told cheaply)
        objective, error = (distance * distance, distance) if orientations is None else \
            _one_effector_fit(start, goal, effector.point, orientations)  # (the position's)
        root = math.sqrt(objective)
        excess = 1e-15 if 1e-15 > root else root   # max(root, 1e-15), without a call
        if excess > self.closing_radius:
            return None
        initial = error
        history = [root]
        state = start
        damping = DAMPING_START
        self._first = None
        # The closing stage (_Solve._closing_stage) while the target is open.
        while error > tolerance and excess > STALL * tolerance:
            if len(history) > TRACK_STEPS or deadline < math.inf and self.clock() >= deadline:
                return None
            first = len(history) == 1
            step = self._track_step(tree, state, goal, orientations, objective, excess,
                                    damping, first, carry if first else None)
            if step is None:
                return None
            state, used, objective, new_error, carried = step
            if first:
                self._first = state.q if carried is None else list(map(sub, state.q, carried))
            history.append(math.sqrt(objective))
            new_excess = 1e-15 if 1e-15 > history[-1] else history[-1]     # (max, as above)
            if new_error > tolerance:   # the stall test: a step gaining too little ends it
                stall = POSE_STALL if orientations is not None and len(history) > 2 \
                    and new_error > self.restart_error else EXPLORE_STALL
                if excess - new_excess < STALL * tolerance + STALL_RELATIVE * error \
                        + stall * excess:
                    return None
            error, excess = new_error, new_excess
            damping = used * 0.1
            damping = DAMPING_MIN if DAMPING_MIN > damping else damping     # (max)
        return self._result(state, tree, targets, rotations, _new_tuple(_Steps, (
            0, len(history) - 1, 0, initial, initial, history, None, False)), orientations)

    def _track_step(self, tree: _Tree, state: _State, goal: tuple[float, float, float],
                    orientations: _Orientations | None, objective: float, excess: float,
                    damping: float, steer: bool, carry: list[float] | None
                    ) -> tuple[_State, float, float, float, list[float] | None] | None:
        """
        Return the state after one closing step, its damping, objective, error and carry.

        None if no damping lowers the objective.

        As _ClosingSteps._closing_step for one effector at weight 1 within reach: the
        damping rises tenfold until the error falls (a push that costs more than the step
        gains is dropped first), up to DAMPING_MAX. A position or full pose whose step no
        steering changes (every joint clear of its limit's margins, or a full pose without
        redundancy) takes it from the tree's compiled move (position_move, its forward
        kinematics too) or step (_compiled_step), carry (see _track) added to a full pose's;
        the carry it kept, or None. Either leaves to the rows' path (from the damping it
        reached) a joint in a limit's margin (the step is steered), a joint the step would
        carry past its limit (solved again without it) and a system the rows' solve leaves
        to numpy.
        """
        effector = tree.effectors[0]
        x, y, z = state.points[effector.point]
        residual = [goal[0] - x, goal[1] - y, goal[2] - z]
        floor = DAMPING_FLOOR if orientations is None else POSE_DAMPING_FLOOR
        scale = excess * excess
        limits, q = self.limits, state.q
        s = 0.0
        if orientations is None:
            move = tree.position_moves[0]
            while move is not None and damping <= DAMPING_MAX:  # see position_move (moves)
                shifted = damping * scale
                try:
                    moved = move(state.frames, q, x, y, z, residual,
                                 floor if floor > shifted else shifted, _ORIGIN)    # (max)
                except _NOT_POSITIVE_DEFINITE:
                    break
                if moved is None:
                    break
                candidate = _new_tuple(_State, (moved[0], _ORIGIN, moved[1], moved[2]))
                distance = math.dist(goal, candidate.points[effector.point])    # (the fit's)
                if distance * distance < objective:
                    return candidate, damping, distance * distance, distance, None
                damping *= 10.0
            if damping > DAMPING_MAX:
                return None
        elif orientations.items[0][1] == 'full':
            s = orientations.scale
            (_, (vx, vy, vz), _), = orientations.errors(state)
            residual += [s * vx, s * vy, s * vz]
            kernel = tree.pose_kernels[0][1]
            if kernel is not None and (len(q) <= 6 or all(map(le, limits.inner_lower, q))
                                       and all(map(le, q, limits.inner_upper))):
                answer, damping = _compiled_step(kernel, tree, state, goal, orientations,
                                                 objective, residual, s, limits, damping,
                                                 scale, floor, carry)
                if answer is not None or damping > DAMPING_MAX:
                    return answer
        if orientations is None:
            rows = tree.jacobian(state, False, [0])
        elif orientations.items[0][1] == 'full':
            rows = tree.pose_kernels[0][0](state.frames, x, y, z, s)
        else:
            rows = tree.jacobian(state, False, [0])
            orientations.extend(state, rows, residual)
        answer = self._rows_step(tree, state, goal, orientations, objective, rows, residual,
                                 damping, floor, scale, steer)
        return None if answer is None else (*answer, None)

    def _rows_step(self, tree: _Tree, state: _State, goal: tuple[float, float, float],
                   orientations: _Orientations | None, objective: float,
                   rows: list[list[float]], residual: list[float], damping: float,
                   floor: float, scale: float, steer: bool
                   ) -> tuple[_State, float, float, float] | None:
        """Return _track_step's answer from the step's rows and residual, damping on."""
        effector = tree.effectors[0]
        weights, push = ([], []) if orientations is not None and len(rows) >= len(
            rows[0]) else self.limits.steering(state.q, rows, residual, steer)
        aim = _pushed(rows, residual, push) if push else residual
        while damping <= DAMPING_MAX:
            q = self.limits.limited_step(state.q, rows, aim, weights, push,
                                         max(damping * scale, floor))[0]
            candidate = tree.sweep(q, _ORIGIN)
            fit = _one_effector_fit(candidate, goal, effector.point, orientations)
            if fit[0] < objective:
                return candidate, damping, fit[0], fit[1]
            if push:
                push, aim = [], residual
                continue
            damping *= 10.0
        return None


def _compiled_step(kernel: Callable, tree: _Tree, state: _State,
                   goal: tuple[float, float, float], orientations: _Orientations | None,
                   objective: float, residual: list[float], s: float, limits: JointLimits,
                   damping: float, scale: float, floor: float, carry: list[float] | None
                   ) -> tuple[tuple[_State, float, float, float, list[float] | None] | None,
                              float]:
    """
    Return _track_step's full pose step from a compiled step kernel, and its last damping.

    kernel: the tree's pose_step (sweep): the floats of the rows' damped solve, for a step
    without weights or push. None and a damping within DAMPING_MAX
    where the rows' path must go on from there: a joint the step would carry past its
    limit (solved again without it), a system the rows' solve leaves to numpy. carry:
    joint values added to the step; a step it carries past a limit or to no lower error is
    taken again without it, at the same damping.
    """
    point = tree.effectors[0].point
    x, y, z = state.points[point]
    while damping <= DAMPING_MAX:
        try:
            shifted = damping * scale
            step = kernel(state.frames, x, y, z, s, residual,
                          floor if floor > shifted else shifted)     # (max, without a call)
        except _NOT_POSITIVE_DEFINITE:
            return None, damping
        moved, held = _clamped(state.q, step if carry is None else list(map(add, step, carry)),
                               limits.lower, limits.upper)
        if not held:
            candidate = tree.sweep(moved, _ORIGIN)
            fit = _one_effector_fit(candidate, goal, point, orientations)
            if fit[0] < objective:
                return (candidate, damping, fit[0], fit[1], carry), damping
        if carry is not None:
            carry = None
            continue
        if held:
            return None, damping
        damping *= 10.0
    return None, damping
