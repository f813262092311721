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
Every exact solution of a full pose in closed form: the collision search's branches.

The closed form of an arm of the UR family (fabrik_ros.ik.offset_wrist.offset_wrist_angles)
answers with the one of its up to eight solutions nearest the seed; the search for a
clear answer wants all of them, nearest the seed first, to check before it tries anything
iterative: a pose whose exact solutions all collide has no clear answer there.
"""

from __future__ import annotations

from typing import Sequence

from .offset_wrist import _planar_pair, _within, offset_wrist_branches, OffsetWrist


def offset_wrist_solutions(arm: OffsetWrist, position: Sequence[float],
                           rotation: Sequence[float], seed: Sequence[float],
                           lower: Sequence[float], upper: Sequence[float]
                           ) -> list[list[float]]:
    """
    Return the pose's solutions within the limits, nearest the seed first (radians).

    position: metres, rotation: row-major 9-tuple (base frame), as offset_wrist_angles
    takes them; each angle turned by whole turns to lie within the limits nearest the seed.
    Plain floats: a handful of 3-vectors, cheaper than numpy's per-call cost.
    """
    branches = offset_wrist_branches(arm, tuple(float(value) for value in position),
                                     tuple(float(value) for value in rotation))
    s3, s4 = arm.signs
    seed, lower, upper = [float(value) for value in seed], list(lower), list(upper)
    found = []
    for t1, t234, t5, t6, goal in branches:
        outer = [_within(t, s, lo, hi) for t, s, lo, hi in zip(
            (t1, t5, t6), seed[0:1] + seed[4:], lower[0:1] + lower[4:], upper[0:1] + upper[4:])]
        if None in outer:
            continue
        for t2, t3 in _planar_pair(arm, goal):
            inner = [_within(t, s, lo, hi) for t, s, lo, hi in zip(
                (t2, t3, s4 * (t234 - t2 - s3 * t3)), seed[1:4], lower[1:4], upper[1:4])]
            if None not in inner:
                fitted = outer[:1] + inner + outer[1:]
                found.append((sum((t - s) ** 2 for t, s in zip(fitted, seed)), fitted))
    found.sort()
    return [angles for _, angles in found]
