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


"""One pass of a solve (_Solve): its goals, FABRIK stage, closing steps, best pose, history."""

from __future__ import annotations

from collections.abc import Callable
import math
from operator import sub
from typing import NamedTuple

import numpy as np

from .closing import _ClosingSteps
from .groups import _Group, _pass_layout
from .limits import JointLimits
from .model import _Tree
from .objective import _Objective, _Score
from .orientations import _Orientations
from .passes import reach_back
from .points import _Fit, _State
from .result import _Steps
from .tuning import (CONFIRM_STALL, CREEP, DAMPING_MIN, DAMPING_START, EXPLORE_STALL,
                     NEWTON_DAMPING_MIN, NEWTON_DAMPING_START, NEWTON_JOINTS, POSE_STALL,
                     SADDLE_EXCESS, STALL, STALL_RELATIVE, STRETCH_DAMPING_DROP)


class PassSettings(NamedTuple):
    """The solver's settings a pass reads (see IkSolver), taken for one solve."""

    tolerance: float                # metres
    reach: float                    # metres, the longest effector's reach
    closing_radius: float           # metres
    fabrik_gain: float
    restart_error: float            # metres
    max_iterations: int
    clock: Callable[[], float]      # seconds


# _Solve's attributes, in slots: a solve makes one or two, each with these 45 (a dict of them
# would be built and resized every time).
_SOLVE_SLOTS = ('settings', 'limits', 'orientations', 'tree', 'effectors', 'groups', 'owned',
                'goals', 'weights', 'goal_points', 'floors', 'out_of_reach', 'lone',
                'mappable', 'newton_able', 'compiled_step', 'steered_step', 'stretch', 'fits',
                'retry_fits', 'free_root', 'deadline', 'reach_points', 'reach_goals',
                '_reach_weights', 'rest_q', 'rest_objective', 'judged', '_best', '_best_q',
                'hold', 'held', '_best_base', 'best_fit', 'initial_miss', '_point_weights',
                '_system',
                'timed_out', 'fabrik_iterations', 'closing_steps', 'restarts', 'initial_error',
                'fabrik_error', 'history', 'trace')


class _Solve(_Objective, _ClosingSteps):
    """
    One pass of an IkSolver.solve call: the goals, the stages, the counters and the history.

    A pass solves some groups of effectors (see _Group); the others keep their joints.

    The solver minimises sum w_i d_i^2 over the goals (effectors with a target, and those
    holding their pose; d_i metres, w_i weights). `floors` are lower bounds of each d_i:
    the distance by which a target lies beyond its effector's reach. FABRIK's gain, the
    closing step's damping and its stall test are measured on the excess over them, per
    effector, so unreachable targets converge like reachable ones.

    goals, weights, floors: per effector of the chain; the pass takes its groups' share.
    rest: the pose of the joints the pass does not own (moving the other groups, or no
    effector) and the other groups' objective, for the history and the final pose.
    previous: the pass before (its counters, history and budget go on here), or what a
    split solve spent before it (see _Split). fits: per joint, the points FABRIK's passes
    fit it to (see _Tree.whole_fit); retry_fits: those of the restarts (default: fits).
    """

    __slots__ = _SOLVE_SLOTS

    def __init__(self, settings: PassSettings, limits: JointLimits, tree: _Tree,
                 groups: tuple[_Group, ...],
                 goals: list[tuple[float, float, float]],
                 weights: list[float], floors: list[float],
                 stretch: dict[int, tuple[float, float, float]],
                 fits: list[_Fit], free_root: bool, rest: tuple[list[float], float],
                 trace: bool, deadline: float, previous: _Solve | _Steps | None = None,
                 orientations: _Orientations | None = None,
                 retry_fits: list[_Fit] | None = None) -> None:
        self.settings = settings
        self.limits = limits
        self.orientations = orientations
        self.tree = tree if orientations is None else orientations.tree
        effectors, self.groups, self.owned = _pass_layout(groups)
        self.effectors = effectors
        self.goals = [goals[i] for i in effectors]
        self.weights = [weights[i] for i in effectors]
        self.goal_points = [self.tree.effectors[i].point for i in effectors]
        self.floors = [floors[i] for i in effectors]
        self.out_of_reach = any(self.floors)
        self.lone = (self.goals[0], self.goal_points[0], self.weights[0]) \
            if len(effectors) == 1 and orientations is None and not self.out_of_reach else None
        # One effector's position on a pinned root: restarts start from the workspace map
        # (IkSolver._mapped_seed), and Newton's steps (_newton_step) apply.
        self.mappable = len(effectors) == 1 and orientations is None and not free_root
        self.newton_able = self.mappable \
            and len(self.tree.effectors[effectors[0]].joints) <= NEWTON_JOINTS
        self.compiled_step, self.steered_step = _compiled_step(
            self.tree, effectors, free_root, self.weights, orientations)
        self.stretch = stretch
        self.fits = fits
        self.retry_fits = fits if retry_fits is None else retry_fits
        self.free_root = free_root
        self.deadline = deadline
        # FABRIK's backward pass also pulls the tools' markers, weighing what their tools do.
        self.reach_points, self.reach_goals = self.goal_points, self.goals
        point_weights = self.weights
        if orientations is not None:
            markers = self.tree.effectors[self.tree.tools:]
            self.reach_points = self.goal_points + [marker.point for marker in markers]
            self.reach_goals = self.goals + orientations.goals
            point_weights = self.weights + [weights[owner] for owner in
                                            self.tree.marker_owners]
        self._reach_weights = point_weights
        self.rest_q, self.rest_objective = rest
        # Restarts are decided on the effectors whose group has no target out of reach.
        self.judged = [index for group in self.groups
                       if not any(self.floors[i] for i in group.effectors)
                       for index in group.effectors]
        self._best: _State | None = None
        self._best_q: list[float] = []
        self.hold, self.held = 0.0, None    # metres, and the closest state it kept out (_accept)
        self._best_base = (0.0, 0.0, 0.0)
        self.best_fit = _Score(math.inf, math.inf, math.inf, [], math.inf,
                               (math.inf,) * len(groups))
        self.initial_miss = math.nan   # metres, Score.miss at the pass's seed
        self._point_weights: list[float] | None = None
        self._system: tuple[_State | None, tuple | None] = (None, None)  # see _newton_system
        if previous is None:
            self.timed_out = False
            self.fabrik_iterations = self.closing_steps = self.restarts = 0
            self.initial_error = 0.0
            self.fabrik_error = math.nan
            self.history: list[float] = []
            self.trace: list[np.ndarray] | None = [] if trace else None
        else:
            for name in ('timed_out', 'fabrik_iterations', 'closing_steps', 'restarts',
                         'initial_error', 'fabrik_error', 'history', 'trace'):
                setattr(self, name, getattr(previous, name))

    def pose(self) -> list[float]:
        """Return the best pose: the pass's joints from its best, the others from rest."""
        if len(self.owned) == len(self.rest_q):     # the pass owns every joint
            return list(self._best_q)
        q = list(self.rest_q)
        for coordinate in self.owned:
            q[coordinate] = self._best_q[coordinate]
        return q

    def final(self) -> _State:
        """Return the best pose of the whole solve, with its forward kinematics."""
        q = self.pose()
        return self.best if q == self._best_q else self.tree.sweep(q, self._best_base)

    @property
    def point_weights(self) -> list[float]:
        """Return per point the weight below it (FABRIK's passes only: tracking skips them)."""
        if self._point_weights is None:
            self._point_weights = self.tree.subtree_weights(self.reach_points,
                                                            self._reach_weights)
        return self._point_weights

    @property
    def best_error(self) -> float:
        """Return the best pose's largest goal distance, metres."""
        return self.best_fit.error

    def has_budget(self) -> bool:
        """Tell whether iterations and time are left; note when the time ran out."""
        if self.timed_out or \
                self.fabrik_iterations + self.closing_steps >= self.settings.max_iterations:
            return False
        if self.deadline < math.inf and self.settings.clock() >= self.deadline:
            self.timed_out = True
        return not self.timed_out

    @property
    def best(self) -> _State:
        """Return the best pose (its forward kinematics computed once it is asked for)."""
        if self._best is None:
            self._best = self.tree.sweep(self._best_q, self._best_base)
        return self._best

    def count_restart(self) -> None:
        """Count an attempt from another seed (the restart policy's, IkSolver._restart)."""
        self.restarts += 1

    def _accept(self, state: _State, fit: _Score) -> None:
        """
        Keep the state if it is the best so far; log the best error (and pose).

        Groups of effectors that share no joint are independent: where the state is better
        for some groups only, their joints are taken into the best pose, the others kept.
        A hold (metres, see IkSolver._restart) keeps the best pose of one group against
        states that neither reach the targets nor come closer by more than it (the closest
        one it kept out: held).
        """
        best = self.best_fit
        better = [group for group, share, best_share in zip(self.groups, fit.shares, best.shares)
                  if share < best_share] if len(self.groups) > 1 else ()
        if 0 < len(better) < len(self.groups):
            q, distances = list(self._best_q), list(best.distances)
            for group in better:
                for coordinate in group.coordinates:
                    q[coordinate] = state.q[coordinate]
                for effector in group.effectors:
                    distances[effector] = fit.distances[effector]
            self._best_q, self._best, self.best_fit = q, None, self.score(distances)
        elif fit.objective < best.objective and (not self.hold or fit.miss < best.miss - self.hold
                                                 or fit.error <= self.settings.tolerance):
            self._best_q, self._best_base, self._best, self.best_fit = \
                state.q, state.base, state, fit
        elif fit.objective < best.objective and (  # kept out by the hold
                self.held is None or fit.objective < self.held[1].objective):
            self.held = state, fit
        self.history.append(math.sqrt(self.best_fit.objective + self.rest_objective))
        if self.trace is not None:
            self.trace.append(np.array(self.pose()))

    def attempt(self, state: _State, polish: bool = False, band: float = 0.0,
                confirms: bool = False) -> float:
        """
        Run FABRIK, then closing steps, from one seed state, within the solve's budget.

        polish: closing steps only, until they stall strictly (see EXPLORE_STALL); Newton
        steps where they apply (see _newton_step). band: metres, given to restarts; below it
        the attempt has come back to the best residual: closing steps that creep
        (CONFIRM_STALL) end it. confirms: the restart counts toward unreachable_after; then
        within reach a FABRIK stage that ends below the band without improving on the best
        pose ends it too. Returns _Score.miss (metres) where the attempt ended.
        """
        settings = self.settings
        fit = self.measure(state)
        if math.isnan(self.initial_miss):
            self.initial_miss = fit.miss
            self.initial_error = max(self.initial_error, fit.error)
        if not polish:      # a polish starts from the best pose, logged already
            self._accept(state, fit)
        # Out of reach, FABRIK's fit to the straight line goes all the way itself.
        closing_radius = settings.closing_radius if not self.stretch else 0.0
        fits = self.retry_fits if self.restarts else self.fits
        if fit.excess > closing_radius and not polish:
            state, fit = self._fabrik_stage(state, fit, fits, closing_radius)
        if math.isnan(self.fabrik_error):
            self.fabrik_error = fit.error
        if confirms and not self.stretch and self.best_fit.miss < fit.miss < band:
            # A restart back at the best residual confirms it as it is: its closing steps
            # would creep down to about the same floor. One that improved on the best goes
            # on, to see how far; so do the restarts of a solve that runs them all (they
            # confirm nothing, and a floor a little below the best pose's is worth their
            # steps).
            return fit.miss
        return self._closing_stage(state, fit, polish, band)

    def _fabrik_stage(self, state: _State, fit: _Score, fits: list[_Fit],
                      closing_radius: float) -> tuple[_State, _Score]:
        """
        Run FABRIK iterations while each gains enough and the excess exceeds closing_radius.

        Returns the last state FABRIK improved on, and its score.
        """
        gain_wanted = self.settings.fabrik_gain
        while self._open(fit) and self.has_budget():
            fixed = self.stretch
            if self.orientations is not None:   # the tools' rigid bodies, then stretch
                fixed = {**self.orientations.placed(state, self.goals), **self.stretch}
            desired, base = reach_back(self.tree, state, self.reach_points, self.reach_goals,
                                       fixed, self.free_root, self.point_weights)
            candidate = self.tree.sweep(state.q, base, desired, state, fits)
            new_fit = self.measure(candidate)
            if new_fit.objective >= fit.objective:
                break
            gain = new_fit.excess / fit.excess
            state, fit = candidate, new_fit
            self.fabrik_iterations += 1
            self._accept(state, fit)
            if gain > gain_wanted or fit.excess <= closing_radius:
                break
        return state, fit

    def _closing_stage(self, state: _State, fit: _Score, polish: bool, band: float) -> float:
        """Take closing steps until they stall (see attempt); return _Score.miss at the end."""
        settings = self.settings
        tolerance = settings.tolerance
        # Trees keep Gauss-Newton: with held effectors the exact optimum of the weighted
        # objective trades held drift for the far effector's last micrometres.
        newton = polish and self.newton_able
        damping = NEWTON_DAMPING_START if newton else DAMPING_START
        closing = 0
        # Out of reach the first attempt stops early like an explored one: the nudged retry
        # (see IkSolver._explore) and the polish after it converge strictly (stopping them
        # early too leaves worse basins).
        explore = 0.0 if polish or (self.stretch and self.restarts) else EXPLORE_STALL
        while self._open(fit) and self.has_budget():
            if newton:
                step = self._newton_step(state, fit, damping)
            else:
                # The first attempt's first closing step also steers the redundancy away
                # from limits; once restarts run, none does: they start from elsewhere, and
                # most of their pushes cost more than the step gains, a try in vain each.
                step = self._closing_step(state, fit, damping,
                                          steer=closing == 0 and not self.restarts)
            if step is None:
                break
            previous, (state, new_fit, used) = state, step
            # Out of reach the damping a step needed suits the next one too (the residual
            # changes little): dropping it tenfold would cost a rejected step every time.
            # For one effector Gauss-Newton's model is poor there (it drops the residual's
            # curvature): after a step at the damping it started with, the damping only
            # halves. (Effectors sharing joints keep the tenfold drop: converging further,
            # the weighted compromise lets held tools drift farther.)
            if self.stretch and used > damping:
                damping = used
            elif self.stretch and not newton and len(self.effectors) == 1:
                damping = max(used * STRETCH_DAMPING_DROP, DAMPING_MIN)
            else:
                damping = max(used * 0.1, NEWTON_DAMPING_MIN if newton else DAMPING_MIN)
            gained = fit.excess - new_fit.excess
            excess, error = fit.excess, fit.error
            fit = new_fit
            closing += 1
            self.closing_steps += 1
            self._accept(state, fit)
            if explore and fit.miss < band:
                explore = CONFIRM_STALL
            stall = explore
            if self.orientations is not None and explore and closing > 1 \
                    and fit.error > settings.restart_error:
                stall = max(explore, POSE_STALL)
            saddle = self.stretch and fit.excess > SADDLE_EXCESS * settings.reach
            if saddle:
                stall = 0.0     # maybe a saddle: the nudged retry must start from it
            # Out of reach Gauss-Newton creeps (each step gains a small fraction of the
            # excess: the residual term it drops): a strict attempt goes on with Newton's
            # steps where they go the same way, quadratic where the creep could spend the
            # iteration cap before the polish.
            if not (explore or newton or saddle) and self.newton_able and self.stretch \
                    and gained < CREEP * excess and self._newton_continues(
                        state, list(map(sub, state.q, previous.q))):
                newton, damping = True, NEWTON_DAMPING_START
                continue
            if gained < STALL * tolerance + STALL_RELATIVE * error + stall * excess:
                break
        return fit.miss

    def _open(self, fit: _Score) -> bool:
        """Tell whether a target is missed by more than the tolerance and can be neared."""
        return fit.error > self.settings.tolerance and fit.excess > STALL * self.settings.tolerance


def _compiled_step(tree: _Tree, effectors: list[int], free_root: bool, weights: list[float],
                   orientations: _Orientations | None) -> tuple[Callable | None, Callable | None]:
    """
    Return the tree's compiled closing step for a pass, and that step steered off the limits.

    One effector's position or full pose at weight 1 on a pinned root (see
    _ClosingSteps._compiled_closing_step); the steered step for a position only (see
    _ClosingSteps._steered_closing_step). None where none applies.
    """
    if len(effectors) != 1 or free_root or weights != [1.0]:
        return None, None
    if orientations is None:
        return tree.position_steps[effectors[0]]
    if len(orientations.items) == 1 and orientations.items[0][:2] == (effectors[0], 'full'):
        return tree.pose_kernels[effectors[0]][1], None
    return None, None
