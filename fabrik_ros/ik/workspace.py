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


"""The workspace: the farthest an effector gets (its shell) and a map of poses for seeds."""

from __future__ import annotations

import math
from operator import mul

from fabrik_ros.chain import Chain
import numpy as np

from .attempt import _Solve
from .linalg import _free_system, _NOT_POSITIVE_DEFINITE, _shifted_solve
from .rotations import _ORIGIN, _TWO_PI
from .tuning import (BEYOND_SHELL, DAMPING_MAX, FARTHEST_SAMPLES, FARTHEST_STARTS, FARTHEST_STEPS,
                     MAP_SAMPLES, NEWTON_DAMPING_MIN, NEWTON_DAMPING_START, NEWTON_JOINTS,
                     NEWTON_STALL, RESTART_SEED)


def _restart_seeds(chain: Chain, max_restarts: int
                   ) -> tuple[tuple[np.ndarray, np.ndarray], list[list[float]]]:
    """
    Return the box random poses are drawn from, and the restart seeds (max_restarts - 1).

    The box spans each joint's range, at most one turn of it (continuous: -pi to pi). Of
    the seeds, every other one has each joint at a limit with probability 2/3: targets
    whose solution has several joints at their limits sit in small basins. The same
    chain always gets the same seeds (RESTART_SEED).
    """
    rng = np.random.default_rng(RESTART_SEED)
    n = chain.dof
    low = np.where(np.isfinite(chain.lower), chain.lower,
                   np.minimum(chain.upper - _TWO_PI, -math.pi))
    high = np.minimum(chain.upper, low + _TWO_PI)
    box = (low, np.maximum(low, high))
    seeds = rng.uniform(*box, size=(max(max_restarts - 1, 0), n))
    corners = rng.choice(3, size=seeds.shape)
    seeds[1::2] = np.where(corners == 0, low, np.where(corners == 1, high, seeds))[1::2]
    return box, seeds.tolist()


class _Workspace:
    """IkSolver's workspace: the farthest an effector gets and the map of seeds."""

    def _beyond_workspace(self, solve: _Solve, margin: float) -> bool:
        """
        Tell whether no pose brings the judged effectors closer than the best pose does.

        An effector comes no closer to its target than the target's distance from its
        anchor less the farthest the effector gets from the anchor (_farthest). Where that
        bound exceeds BEYOND_SHELL of the reach (a target clearly outside the workspace's
        outer shell, whatever a local search of the farthest pose missed) and the best pose
        is within margin (metres) of it, restarts cannot do better; every judged
        effector must be there or within the tolerance. Position solves, pinned root.
        """
        if solve.free_root or solve.orientations is not None:
            return False
        tree, distances, tolerance = solve.tree, solve.best_fit.distances, self.tolerance
        for i in solve.judged:
            if distances[i] <= tolerance:
                continue
            index = solve.effectors[i]
            anchor = tree.neutral.points[tree.effectors[index].anchor]
            bound = math.dist(solve.goals[i], anchor) - self._farthest(index)
            if not BEYOND_SHELL * self.reach < bound >= distances[i] - margin:
                return False
        return True

    def _farthest(self, index: int) -> float:
        """
        Return the farthest effector `index` gets from its anchor, metres (pinned root).

        Found on first need (a few milliseconds) and kept: the farthest FARTHEST_STARTS of
        the neutral pose, the restart seeds and FARTHEST_SAMPLES random poses, each pushed
        out to a local maximum of the distance by damped Newton steps on -d^2 / 2
        (_Tree.hessian with weight -1 and the anchor as goal) within the limits; the largest
        of them. A pose whose path lies straight reaches the path's length, none farther:
        where the neutral pose does, or the path has more than NEWTON_JOINTS joints (the
        search's dense Hessians would cost seconds), that length is the answer.
        """
        found = self._farthest_found[index]
        if found is not None:
            return found
        tree, lower, upper = self._tree, self.limits.lower, self.limits.upper
        effector = tree.effectors[index]
        point, anchor = effector.point, tree.neutral.points[effector.anchor]
        straight = effector.reach * (1.0 - 1e-12)
        neutral = math.dist(tree.neutral.points[point], anchor)
        if neutral >= straight or len(effector.joints) > NEWTON_JOINTS:
            # (An effector on the base link: no path, its point stays where it is.)
            self._farthest_found[index] = max(neutral, effector.reach)
            return self._farthest_found[index]
        effector_joints = sorted({tree.joints[joint].coordinate for joint in effector.joints})
        samples = np.random.default_rng(RESTART_SEED + 1).uniform(
            *self._seed_box, size=(FARTHEST_SAMPLES, len(lower)))
        starts = [tree.neutral] + [tree.sweep(seed, _ORIGIN) for seed in
                                   self._restart_seeds + samples.tolist()]
        starts.sort(key=lambda state: math.dist(state.points[point], anchor), reverse=True)
        farthest = 0.0
        for state in starts[:FARTHEST_STARTS]:
            distance = math.dist(state.points[point], anchor)
            damping = NEWTON_DAMPING_START
            for _ in range(FARTHEST_STEPS):
                system = _free_system(state.q, effector_joints,
                                      *tree.hessian(state, index, -1.0, anchor), lower, upper)
                if system is None or damping > DAMPING_MAX:
                    break
                free, hessian, gradient, scale = system
                try:
                    step = _shifted_solve(hessian, gradient, damping * scale)
                except _NOT_POSITIVE_DEFINITE:
                    damping *= 10.0
                    continue
                if sum(map(mul, step, gradient)) < NEWTON_STALL * distance * distance:
                    break   # about the model's gain: a maximum
                moved = list(state.q)
                for j, change in zip(free, step):
                    moved[j] = min(max(moved[j] + change, lower[j]), upper[j])
                candidate = tree.sweep(moved, _ORIGIN)
                gained = math.dist(candidate.points[point], anchor) - distance
                if gained <= 0.0:
                    damping *= 10.0
                    continue
                state, distance = candidate, distance + gained
                damping = max(damping * 0.1, NEWTON_DAMPING_MIN)
            farthest = max(farthest, distance)
            if farthest >= straight:
                break
        self._farthest_found[index] = farthest
        return farthest

    def _mapped_seed(self, index: int, goal: tuple[float, float, float]) -> list[float]:
        """
        Return the pose of the workspace map whose effector `index` lies nearest goal.

        The map: MAP_SAMPLES random poses in the restart seeds' box and where their
        effectors are (pinned root), built on first need (as many forward sweeps, which can
        take that one solve past its time budget) and kept. A
        target in reach lies near some mapped effector point, usually in the basin of its
        pose; a hole's nearest mapped pose ends about where the workspace comes closest.
        """
        if self._workspace_map is None:
            tree = self._tree
            poses = np.random.default_rng(RESTART_SEED + 2).uniform(
                *self._seed_box, size=(MAP_SAMPLES, len(self.limits.lower))).tolist()
            points = np.array([[state.points[effector.point] for effector in tree.effectors]
                               for state in (tree.sweep(q, _ORIGIN) for q in poses)])
            self._workspace_map = poses, points, np.einsum('ijk,ijk->ij', points, points)
        poses, points, squares = self._workspace_map
        # |p - g|^2 = |p|^2 - 2 p.g + |g|^2, the last the same for all.
        return poses[int(np.argmin(squares[:, index] - 2.0 * (points[:, index] @ goal)))]
