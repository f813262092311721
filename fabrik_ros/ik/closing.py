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
The closing steps of an attempt: damped least squares and Newton's steps.

Both run on the true kinematics (Gauss-Newton on the Jacobian, Newton on the Hessian of
one effector's objective), with the joint limits respected (see limits).
"""

from __future__ import annotations

import math
from operator import le, mul

from .limits import _clamped, _held_newton_step
from .linalg import _free_system, _NOT_POSITIVE_DEFINITE, _pushed, _shifted_solve
from .objective import _Score
from .points import _State
from .tuning import (CONVEX_SHIFT, DAMPING_FLOOR, DAMPING_MAX, NEWTON_STALL, POSE_DAMPING_FLOOR,
                     SADDLE_EXCESS)


class _ClosingSteps:
    """The closing steps of one attempt (_Solve): damped least squares and Newton."""

    __slots__ = ()

    def _newton_step(self, state: _State, fit: _Score, damping: float
                     ) -> tuple[_State, _Score, float] | None:
        """
        Take one damped Newton step on the objective, with its exact Hessian, within limits.

        Gauss-Newton (_closing_step) drops the Hessian's residual term (see _Tree.hessian),
        which out of reach is as large as the term it keeps: its steps then shrink
        geometrically, a linear creep down the residual. With that term the steps converge
        quadratically to the closest pose the joints allow. Joints at a limit that the
        descent pushes outward stay there; the damping, a multiple of the Hessian's largest
        diagonal entry, also keeps an indefinite Hessian (a saddle) positive definite.
        Returns as _closing_step does; None also when the step would change no more than the
        objective's last digits (NEWTON_STALL). One effector's position target on a pinned
        root (see attempt).
        """
        system = self._newton_system(state)
        if system is None:
            return None
        free, hessian, gradient, scale = system
        tree, q = self.tree, state.q
        lower, upper = self.limits.lower, self.limits.upper
        least = NEWTON_STALL * fit.objective
        while damping <= DAMPING_MAX:
            try:
                step = _shifted_solve(hessian, gradient, damping * scale)
            except _NOT_POSITIVE_DEFINITE:
                damping *= 10.0
                continue
            if sum(map(mul, step, gradient)) < least:  # about the model's gain: converged
                return None
            full_step = [0.0] * len(q)
            for j, change in zip(free, step):
                full_step[j] = change
            moved, held = _clamped(q, full_step, lower, upper)
            if held:
                # Those joints stop at their limit and the others' step is solved again
                # without them (as for closing steps, JointLimits.limited_step): clamped alone,
                # the step left Newton's direction, the damping rose until no joint reached
                # the limit, and the polish crept (a random chain's stopped 5 um short).
                moved = _held_newton_step(q, moved, held, free, hessian, gradient,
                                          damping * scale, lower, upper)
            candidate = tree.sweep(moved, state.base)
            new_fit = self.measure(candidate)
            if new_fit.objective < fit.objective:
                return candidate, new_fit, damping
            damping *= 10.0
        return None

    def _newton_system(self, state: _State
                       ) -> tuple[list[int], list[list[float]], list[float], float] | None:
        """
        Return Newton's system at a state, or None when no joint is free (see _newton_step).

        The free joints (the pass's, but those at a limit the descent pushes them past), over
        them half the objective's Hessian and minus half its gradient (_Tree.hessian: the
        lower triangle by rows, and J^T W r), and the Hessian's largest diagonal entry.
        The last state's system is kept: the basin tests (_basin_step) ask for the system
        of the state Newton's next step starts from.
        """
        if self._system[0] is state:
            return self._system[1]
        (index,), (goal,), (weight,) = self.effectors, self.goals, self.weights
        descent, full = self.tree.hessian(state, index, weight, goal)
        system = _free_system(state.q, self.owned, descent, full, self.limits.lower,
                              self.limits.upper)
        self._system = (state, system)
        return system

    def _newton_continues(self, state: _State, last: list[float]) -> bool:
        """
        Tell whether Newton's steps would go on the way the last step went (`last`, radians).

        The state must be in a basin (_basin_step), and Newton's step must not turn back:
        on a flat ridge (an arm's wrist roll out of reach) Newton's model heads for the
        stationary point behind, where Gauss-Newton's creep went on to a closer pose.
        """
        basin = self._basin_step(state)
        return basin is not None and sum(change * last[j] for j, change in zip(*basin)) > 0.0

    def at_floor(self) -> bool:
        """
        Tell whether the best pose out of reach lies in a basin, not on a possible saddle.

        Within SADDLE_EXCESS of the reach above its floor, with the objective curving up in
        every free direction (_basin_step): a retry nudged off it would come back to it,
        and the polish from it alone is cheaper.
        """
        return self.newton_able and self.best_fit.excess <= SADDLE_EXCESS * self.settings.reach \
            and self._basin_step(self.best) is not None

    def settles_in_basin(self) -> bool:
        """
        Tell whether the best pose out of reach lies in a basin, polishing it first if it may.

        The first attempt stops early, where the objective may still curve down although
        Newton's steps from there lead to a basin's floor: the best pose is polished now and
        at_floor asked again. Also where it curves down clearly: a chain fitted whole stops
        on the slope into its basin, not on a saddle, and the polish spares it the nudged
        retry.
        On a saddle itself the polish stays put and the retry follows.
        """
        if not self.newton_able or self.best_fit.excess > SADDLE_EXCESS * self.settings.reach:
            return False    # (at_floor's conditions too)
        if self._basin_step(self.best) is not None:
            return True
        self.attempt(self.best, polish=True)
        return self.at_floor()

    def _basin_step(self, state: _State) -> tuple[list[int], list[float]] | None:
        """
        Return the free joints and Newton's step at a state, or None if it is no basin.

        A basin: the objective curves up in every free direction (no curvature below minus
        CONVEX_SHIFT of the Hessian's largest diagonal entry), so Newton's steps lead down
        to its floor.
        """
        system = self._newton_system(state)
        if system is None:
            return None
        free, hessian, gradient, scale = system
        try:
            return free, _shifted_solve(hessian, gradient, CONVEX_SHIFT * scale)
        except _NOT_POSITIVE_DEFINITE:
            return None

    def _closing_step(self, state: _State, fit: _Score, damping: float, steer: bool
                      ) -> tuple[_State, _Score, float] | None:
        """
        Take one Levenberg-Marquardt step on the true kinematics, within the limits.

        Joints the step would push past a limit are held at it and the step is re-solved
        without them. steer: also push joints near a limit back toward mid-range where the
        targets leave the freedom (the null space of the position Jacobian). Returns
        (state, its fit, the damping that lowered the objective), or None if no damping up to
        DAMPING_MAX lowers it. Each effector's rows and residual are scaled by the root of
        its weight.
        """
        tree = self.tree
        if self.compiled_step is not None:
            if self.out_of_reach or (self.orientations is not None and len(state.q) <= 6) \
                    or all(map(le, self.limits.inner_lower, state.q)) \
                    and all(map(le, state.q, self.limits.inner_upper)):
                step = self._compiled_closing_step(state, fit, damping)
            else:   # a joint near a limit: steered, where the tree has that step compiled
                step = self._compiled_closing_step(state, fit, damping, steer) \
                    if self.steered_step is not None else False
            if step is not False:
                return step
        rows = tree.jacobian(state, self.free_root, self.effectors)
        # Aim each effector at most its excess over its floor toward its target: for a
        # target out of reach the linear model is only good for that far, not for the
        # whole distance (and the others' residuals are not shrunk with it).
        residual = []
        for index, (goal, point, weight, distance, floor) in enumerate(zip(
                self.goals, self.goal_points, self.weights, fit.distances, self.floors)):
            shrink = math.sqrt(weight)
            if floor:
                shrink *= max(distance - floor, 0.0) / distance
            if weight != 1.0:
                for row in rows[3 * index:3 * index + 3]:
                    row[:] = [value * math.sqrt(weight) for value in row]
            (gx, gy, gz), (x, y, z) = goal, state.points[point]
            residual += (shrink * (gx - x), shrink * (gy - y), shrink * (gz - z))
        if self.orientations is not None:
            self.orientations.extend(state, rows, residual)
        n = len(state.q)
        scale = fit.excess ** 2
        # No redundancy (a full pose for six joints): limit steering would only slow the
        # step down (weights) and cost error (the push). Position-only solves keep theirs.
        square = self.orientations is not None and len(rows) >= len(rows[0])
        weights, push = ([], []) if self.out_of_reach or square else \
            self.limits.steering(state.q, rows, residual, steer)
        # The push is added to the step and taken out of what the step must achieve.
        aim = _pushed(rows, residual, push) if push else residual
        floor = DAMPING_FLOOR if self.orientations is None else POSE_DAMPING_FLOOR
        while damping <= DAMPING_MAX:
            mu = max(damping * scale, floor)
            q, step = self.limits.limited_step(state.q, rows, aim, weights, push, mu)
            base = state.base
            if self.free_root:
                base = (base[0] + step[n], base[1] + step[n + 1], base[2] + step[n + 2])
            candidate = tree.sweep(q, base)
            new_fit = self.measure(candidate)
            if new_fit.objective < fit.objective:
                return candidate, new_fit, damping
            if push:  # the push cost more than the step gained: once more without it
                push, aim = [], residual
                continue
            damping *= 10.0
        return None

    def _compiled_closing_step(self, state: _State, fit: _Score, damping: float,
                               steer: bool | None = None
                               ) -> tuple[_State, _Score, float] | None | bool:
        """
        Take _closing_step's step from the tree's compiled step (a position or a full pose).

        For one effector at weight 1 on a pinned root whose step no steering changes (see
        _Solve.compiled_step): the same residual, and the compiled step's floats, the same
        as the rows' (_pose_step_source, _position_step_source). With steer (True or False,
        a position only): the steered step instead (_Solve.steered_step,
        _steered_step_source), the rows' path's with joints near a limit; a pushed step that
        does not lower the objective is taken once more without the push, as there.
        Returns as _closing_step, or False where the rows' path must go on (a joint the step
        would carry past its limit, a system numpy solves, pushes the rows sum).
        """
        (goal,), (point,), (floor,) = self.goals, self.goal_points, self.floors
        shrink = 1.0    # (math.sqrt of the weight 1)
        if floor:
            shrink *= max(fit.distances[0] - floor, 0.0) / fit.distances[0]
        x, y, z = state.points[point]
        residual = [shrink * (goal[0] - x), shrink * (goal[1] - y), shrink * (goal[2] - z)]
        s, least = 0.0, DAMPING_FLOOR
        if self.orientations is not None:
            s, least = self.orientations.scale, POSE_DAMPING_FLOOR
            (_, (vx, vy, vz), _), = self.orientations.errors(state)
            residual += [s * vx, s * vy, s * vz]
        scale = fit.excess ** 2
        lower, upper = self.limits.lower, self.limits.upper
        pushed = False
        while damping <= DAMPING_MAX:
            mu = max(damping * scale, least)
            try:
                if steer is None:
                    step = self.compiled_step(state.frames, x, y, z, s, residual, mu)
                else:
                    step, pushed = self.steered_step(state.frames, x, y, z, state.q, residual,
                                                     mu, steer)
            except _NOT_POSITIVE_DEFINITE:
                return False
            if step is None:
                return False
            moved, held = _clamped(state.q, step, lower, upper)
            if held:
                return False
            candidate = self.tree.sweep(moved, state.base)
            new_fit = self.measure(candidate)
            if new_fit.objective < fit.objective:
                return candidate, new_fit, damping
            if pushed:  # the push cost more than the step gained: once more without it
                steer = False
                continue
            damping *= 10.0
        return None
