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
The restart policy: after a stall, which seeds to try, and when to stop.

A target counts as unreachable once restarts agree on the best residual (see IkSolver).
"""

from __future__ import annotations

import math

from fabrik_ros.chain import Chain

from .attempt import _Solve
from .groups import _independent_groups
from .points import _State
from .tuning import AGREE, EXPLORE_STALL, STALL, STOP_RETRIES, UNREACHABLE_AFTER


def _unreachable_after(value: int | None | str, chain: Chain) -> int | None:
    """
    Return IkSolver's unreachable_after with 'auto' resolved for the chain; ValueError.

    Position leaves a redundant chain a manifold of solutions with wide basins, so seeds
    that agree are telling; a chain with no more joints than its targets have coordinates
    has isolated solutions in small basins: try every seed. Effectors whose branches share
    joints (two arms on a torso) multiply the basins: as many confirmations for each
    effector of the largest such group.
    """
    if value == 'auto':
        redundant = chain.dof > 3 * len(chain.effectors)
        sharing = max(len(group.effectors)
                      for group in _independent_groups(chain.moves_effector))
        value = UNREACHABLE_AFTER * sharing if redundant else None
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        raise ValueError(f"unreachable_after must be an integer >= 1, None or 'auto', "
                         f'got {value!r}')
    return value


class _Restarts:
    """IkSolver's restart policy: which seeds to try after a stall, and when to stop."""

    def _restart(self, solve: _Solve, start: _State, stretch: bool,
                 unreachable_after: int | None) -> None:
        """
        Attempt from other seeds while the best pose misses and restarts still make progress.

        Tracking (a seed within the closing radius of its targets) keeps the seed's branch
        unless it misses by more than restart_error; a cold solve restarts on any miss.
        Tracking, a restart is taken only where it reaches the targets: out of reach the
        answer is the compromise continuous with the seed (the arm stretches toward the
        target on its own branch), not a closer one on another branch. When
        unreachable_after restarts end where the best pose is (within 0.1 % of the reach),
        none of them closer, the target is taken as out of reach (the seeds converge on the
        same residual) and the best pose is the answer; restarts that end farther off (in
        another basin) neither confirm nor refute it. A best pose about as close as any pose
        can come (_beyond_workspace) needs no restart at all.
        """
        tracking = solve.initial_miss <= self.closing_radius
        patience = self.restart_error if tracking else self.tolerance
        # The seed's branch: tracking, or a full pose's seed the first attempt bettered by no
        # more than the closing radius, the last answer to a target that moved on out of
        # reach (its miss grows past the radius; out of reach Score.miss leaves such targets
        # out). One effector on a pinned root: where effectors hold, a compromise is a
        # weighting; a position's is the arm stretched toward it, on no branch to keep.
        branch = len(solve.effectors) == 1 and not solve.free_root and (
            tracking and not stretch or solve.orientations is not None
            and solve.measure(start).excess - solve.best_fit.excess <= self.closing_radius)
        if tracking and not stretch and solve.best_error > self.tolerance:
            self._nearest_exact(solve, start)
        # (Out of reach no restart reaches: on the seed's branch none is run.)
        if stretch and not branch or not stretch and solve.best_fit.miss > patience:
            if branch:
                # The seed's branch is kept against every restart that does not reach the
                # target: a closer compromise elsewhere is a flip of a tracked arm (the
                # user's target moved on a little, the answer would jump).
                solve.hold = math.inf
            elif tracking and not stretch:
                # Trees keep the seed's branch against answers no more than a tolerance
                # closer elsewhere: such a restart may end a little closer only before the
                # polish that brings both to the same floor, on another branch (a flip).
                solve.hold = self.tolerance
            self._explore(solve, start, stretch, patience, unreachable_after)
            solve.hold = 0.0
        if solve.best_error > self.tolerance and solve.best_fit.excess > STALL * self.tolerance:
            # Explored attempts stopped early (see EXPLORE_STALL), and so did the first
            # attempt out of reach (its nudged retry would only creep down the same tail).
            solve.attempt(solve.best, polish=True)
        held = solve.held
        if branch and held is not None and solve.best_error > self.tolerance \
                and held[1].objective < solve.best_fit.objective:
            # Restarts stop early, still creeping down: the closest one kept out may lie in
            # a basin that reaches. Polished, it is taken if it does.
            solve.hold = math.inf
            solve.attempt(held[0], polish=True)
            solve.hold = 0.0

    def _nearest_exact(self, solve: _Solve, start: _State) -> None:
        """
        Attempt a tracked full pose from its exact solution nearest the seed (a closed form).

        Where the closing steps from a tracked seed fall short, near a singularity they
        crawl along the weak direction and at a limit they stall: restarts from far seeds
        then land on other branches (flips), and a miss within restart_error is given up.
        The wrist split's closed form (_Split.nearest_angles) knows the pose's solutions:
        the one nearest the seed keeps the seed's branch wherever the branch reaches.
        """
        split, orientations = self._split, solve.orientations
        if split is None or orientations is None or orientations.items[0][1] != 'full':
            return
        q = split.nearest_angles(solve.tree, start, solve.goals[0], orientations.items[0][2])
        if q is not None:
            solve.attempt(solve.tree.sweep(q, start.base))

    def _explore(self, solve: _Solve, start: _State, stretch: bool, patience: float,
                 unreachable_after: int | None) -> None:
        """Run _restart's attempts from other seeds; patience: metres, see _restart."""
        margin = max(self.tolerance, AGREE * self.reach)
        if unreachable_after is not None:
            # Explored attempts end within a few explore stalls of their own minimum.
            margin = max(margin, 2.0 * EXPLORE_STALL * solve.best_fit.miss)
        random_seeds = iter(self._restart_seeds)
        confirmed = 0   # restarts since the last progress that ended at the best residual
        skipped = 0     # restarts that confirmed without being run (see below)
        while solve.restarts + skipped < self.max_restarts and confirmed != unreachable_after \
                and solve.has_budget():
            before = solve.best_fit.miss
            mapped = False
            if before > patience:
                if unreachable_after is not None and self._beyond_workspace(solve, margin):
                    break
                # First from the mapped pose whose effector lies nearest the target (one
                # effector's position, pinned root), then from the best pose with the joints
                # it pinned at a limit released to mid-range (an elbow stuck straight, bent
                # the wrong way), then at random.
                tried = solve.restarts + skipped
                mapped = solve.mappable and not tried
                if mapped:
                    seed = self._mapped_seed(solve.effectors[0], solve.goals[0])
                elif tried == (1 if solve.mappable else 0):
                    seed = self.limits.released(solve.best.q)
                else:
                    seed = next(random_seeds)
                if seed == solve.best.q and unreachable_after is not None:
                    # Nothing pinned: this restart would only go on down the best pose's own
                    # basin (the polish finishes it) and end at its residual. It confirms
                    # without being run (and takes its place among max_restarts).
                    skipped += 1
                    confirmed += 1
                    continue
            elif stretch and not solve.restarts and solve.best_fit.excess > self.tolerance:
                # Out of reach and not straight, unless the (polished) best pose is a basin's
                # floor with no root at a stop: once more from the first attempt's pose
                # nudged off a saddle (joint axes in line with the target give every joint a
                # zero gradient), the joints it pinned at a limit released to mid-range (an
                # elbow folded back against its stop can end far short). Not from the
                # polished pose: where the polish settles a wrist straight (its roll then
                # flat), a nudge no longer finds the closer basin with the wrist bent.
                early = solve.best.q
                if solve.settles_in_basin() and not self._root_at_a_stop(solve):
                    break
                seed = self.limits.nudged(self.limits.released(early))
            elif stretch and 1 <= solve.restarts <= STOP_RETRIES \
                    and len(solve.effectors) == 1 and solve.best_fit.excess > self.tolerance \
                    and self._root_at_a_stop(solve):
                # Still turned to a stop after that: from random seeds (released to
                # mid-range, a base reaching back over its shoulder turns back to the same
                # stop; trees gain nothing from this).
                seed = next(random_seeds)
            else:
                break
            solve.count_restart()
            base = start.base
            if solve.free_root:
                # The free body stays where the best pose put it, and so do the legs that
                # reach their targets: only the branches that miss start afresh (a random
                # pose of every leg from the start rarely has all of them land at once).
                seed, base = self._missing_branches(solve, seed, patience), solve.best.base
            ended = solve.attempt(solve.tree.sweep(seed, base), band=before + margin,
                                  confirms=unreachable_after is not None)
            if solve.best_fit.miss < before - margin:
                confirmed = 0
            elif mapped and unreachable_after is not None and ended < before + margin:
                # Started next to the target, where the workspace comes closest to it as far
                # as the map tells, and back at the best residual: that settles it (fewer
                # reachable targets are given up than with two confirming restarts).
                confirmed = unreachable_after
            elif before > patience and ended < before + margin:
                confirmed += 1  # (retries out of reach have their own bounds above)

    def _root_at_a_stop(self, solve: _Solve) -> bool:
        """
        Tell whether a root joint of the pass, with over half a turn of range, is at a stop.

        Turned the other way round, a revolute root joint with more than half a turn of range
        points its chain where its stop blocks it from this side: another basin, which the
        basin test of a pose out of reach (_Solve.at_floor) cannot see. A slide or a narrow
        root (a rail, a tentacle's segment) pushed to its end by a far target is where it
        belongs. Looks at the best pose.
        """
        q, tree = solve.best.q, solve.tree
        for index in solve.effectors:
            joints = tree.effectors[index].joints
            if not joints:
                continue
            root = tree.joints[joints[0]]
            coordinate = root.coordinate
            if not root.prismatic and root.upper - root.lower > math.pi and q[coordinate] in (
                    self.limits.lower[coordinate], self.limits.upper[coordinate]):
                return True
        return False

    def _missing_branches(self, solve: _Solve, seed: list[float], patience: float
                          ) -> list[float]:
        """Return the best pose with the joints of effectors missing by > patience from seed."""
        moves = self.chain.moves_effector
        missing = [index for index, distance in enumerate(solve.best_fit.distances[:len(moves)])
                   if distance > patience]
        return [s if moves[missing, j].any() else b
                for j, (s, b) in enumerate(zip(seed, solve.best.q))]
