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
Exact solutions of a full pose in closed form: the collision search's branches.

The closed form of an arm of the UR family (fabrik_ros.ik.offset_wrist.offset_wrist_angles)
answers with the one of its up to eight solutions nearest the seed; the search for a
clear answer wants all of them, nearest the seed first, to check before it tries anything
iterative: a pose whose exact solutions all collide has no clear answer there. A Panda-like
arm's (fabrik_ros.ik.offset_elbow) are a family in its seventh angle: the search checks the
one nearest the seed at each of a sweep of seventh angles, exact and cheaper than closing
steps (which it falls back on).
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import islice
from typing import Iterator, Sequence

from .offset_elbow import _angles_at, _sweep, _target, OffsetElbow
from .offset_wrist import _planar_pair, _within, offset_wrist_branches, OffsetWrist

SWEEP_STEP = 0.25   # radians: a seventh joint's step, either way from its seed's angle
SWEEP_STEPS = 12     # ... as far as this many steps


def exact_solutions(arm: object, position: Sequence[float], rotation: Sequence[float],
                    seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
                    ) -> tuple[Iterator[list[float]], bool] | None:
    """
    Return a closed form's solutions of a pose, nearest the seed first, and whether all.

    arm: the solver's closed form (an OffsetWrist: its solutions, all of them; an
    OffsetElbow: the one nearest the seed at each seventh angle, the seed's and then
    SWEEP_STEPS steps of SWEEP_STEP either way, nearest first); None for any other.
    """
    if isinstance(arm, OffsetWrist):
        return offset_wrist_solutions(arm, position, rotation, seed, lower, upper), True
    if isinstance(arm, OffsetElbow):
        return _swept(arm, position, rotation, seed, lower, upper), False
    return None


def _swept(arm: OffsetElbow, position: Sequence[float], rotation: Sequence[float],
           seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
           ) -> Iterator[list[float]]:
    """Yield exact_solutions' solutions of an OffsetElbow (see offset_elbow.swept_angles)."""
    target = _target(arm, [float(value) for value in position],
                     [float(value) for value in rotation])
    seed = [float(value) for value in seed]
    for last in islice(_sweep(seed[6], SWEEP_STEP, SWEEP_STEPS), 2 * SWEEP_STEPS + 1):
        if lower[6] <= last <= upper[6]:
            found = _angles_at(arm, target, last, seed, lower, upper)
            if found is not None:
                yield found[0]


def offset_wrist_solutions(arm: OffsetWrist, position: Sequence[float],
                           rotation: Sequence[float], seed: Sequence[float],
                           lower: Sequence[float], upper: Sequence[float]
                           ) -> Iterator[list[float]]:
    """
    Yield the pose's solutions within the limits, nearest the seed first (radians).

    position: metres, rotation: row-major 9-tuple (base frame), as offset_wrist_angles
    takes them; each angle turned by whole turns to lie within the limits nearest the seed.
    Lazily: the wrist's branches in the order of their first, fifth and sixth angles'
    distance, which bounds their solutions' from below, so a search that stops at the
    first clear one fits the shoulder and elbow of the nearest branches only. Plain
    floats: a handful of 3-vectors, cheaper than numpy's per-call cost.
    """
    branches = offset_wrist_branches(arm, tuple(float(value) for value in position),
                                     tuple(float(value) for value in rotation))
    k3, k4 = arm.signs
    s1, s2, s3, s4, s5, s6 = (float(value) for value in seed)
    l1, l2, l3, l4, l5, l6 = lower
    u1, u2, u3, u4, u5, u6 = upper
    wrists = []
    first = f1 = None     # the branches come in pairs of one t1: it is fitted once a pair
    for t1, t234, t5, t6, goal in branches:
        if t1 is not first:
            first, f1 = t1, _within(t1, s1, l1, u1)
        f5, f6 = _within(t5, s5, l5, u5), _within(t6, s6, l6, u6)
        if f1 is not None and f5 is not None and f6 is not None:
            wrists.append(((f1 - s1) ** 2 + (f5 - s5) ** 2 + (f6 - s6) ** 2, len(wrists),
                           f1, t234, f5, f6, goal))
    wrists.sort()
    pending: list[tuple[float, int, list[float]]] = []     # a heap: (distance, made, q)
    made = 0
    for outer, _, f1, t234, f5, f6, goal in wrists:
        while pending and pending[0][0] <= outer:   # none to come is nearer
            yield heappop(pending)[2]
        for t2, t3 in _planar_pair(arm, goal):
            f2, f3 = _within(t2, s2, l2, u2), _within(t3, s3, l3, u3)
            f4 = _within(k4 * (t234 - t2 - k3 * t3), s4, l4, u4)
            if f2 is not None and f3 is not None and f4 is not None:
                heappush(pending, (outer + (f2 - s2) ** 2 + (f3 - s3) ** 2 + (f4 - s4) ** 2,
                                   made, [f1, f2, f3, f4, f5, f6]))
                made += 1
    while pending:
        yield heappop(pending)[2]
