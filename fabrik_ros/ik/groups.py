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


"""Effectors grouped by the joints they share: independent sub-problems of a pass."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from .model import _Tree
from .points import _State
from .tuning import KEPT_LAYOUTS


class _Group(NamedTuple):
    """Effectors that share joints, transitively; different groups share none."""

    effectors: tuple[int, ...]
    coordinates: tuple[int, ...]    # the independent joints that move them


def _independent_groups(moves: np.ndarray) -> tuple[_Group, ...]:
    """
    Return the effectors in groups that share no joint: independent sub-problems.

    moves: (m, n) bool, which independent joints move each effector (Chain.moves_effector).
    """
    groups: list[tuple[set[int], set[int]]] = []
    for effector, row in enumerate(moves):
        effectors, coordinates = {effector}, set(np.flatnonzero(row).tolist())
        for other in [group for group in groups if group[1] & coordinates]:
            groups.remove(other)
            effectors |= other[0]
            coordinates |= other[1]
        groups.append((effectors, coordinates))
    return tuple(sorted(_Group(tuple(sorted(e)), tuple(sorted(c))) for e, c in groups))


@functools.lru_cache(maxsize=KEPT_LAYOUTS)
def _pass_layout(groups: tuple[_Group, ...]
                 ) -> tuple[tuple[int, ...], tuple[_Group, ...], tuple[int, ...]]:
    """
    Return a pass's effectors (sorted), its groups in their numbering and its coordinates.

    The same few sets of groups come back solve after solve: each is laid out once.
    """
    effectors = tuple(sorted(effector for group in groups for effector in group.effectors))
    local = {effector: index for index, effector in enumerate(effectors)}
    return (effectors, tuple(_Group(tuple(map(local.__getitem__, group.effectors)),
                                    group.coordinates) for group in groups),
            tuple(sorted(c for group in groups for c in group.coordinates)))


def _passes(groups: tuple[_Group, ...], goals: list[tuple[float, float, float]],
            weights: list[float], floors: list[float],
            stretch: dict[int, tuple[float, float, float]], start: _State, tree: _Tree
            ) -> tuple[list[tuple[tuple[_Group, ...], dict]], tuple[list[float], float]]:
    """
    Return a solve's passes (groups, their stretched points) and the first pass's rest.

    Groups that share no joint with a target out of reach are solved first, on their own:
    restarts and stall tests then see only them, and they reach their targets as if the
    far ones were not there. Then the groups out of reach, stretched. Meanwhile the groups
    of the second pass stay at the seed (the rest: their pose and objective, see _Solve).
    """
    if len(groups) == 1:    # (a single effector, or effectors sharing joints)
        return [(groups, stretch if any(floors) else {})], (start.q, 0.0)
    far = tuple(group for group in groups if any(floors[i] for i in group.effectors))
    near = tuple(group for group in groups if group not in far)
    passes = [(chosen, pass_stretch) for chosen, pass_stretch
              in ((near, {}), (far, stretch)) if chosen]
    # Their objective is summed as _Solve.score will sum it (effector order, d * d: d ** 2
    # rounds differently), so the logged best error does not rise where the passes meet.
    waiting = sorted(i for group in far for i in group.effectors) if near else []
    distances = [math.dist(goals[i], start.points[tree.effectors[i].point]) for i in waiting]
    return passes, (start.q, sum(weights[i] * (d * d) for i, d in zip(waiting, distances)))
