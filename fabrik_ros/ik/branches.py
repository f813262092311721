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

The closed form of an arm of the UR family (fabrik_ros.ik.wrist.offset_wrist_angles)
answers with the one of its up to eight solutions nearest the seed; the search for a
clear answer wants all of them, nearest the seed first, to check before it tries anything
iterative: a pose whose exact solutions all collide has no clear answer there.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .wrist import _offset_branches, _planar_pair, _sinusoid_roots, _within, OffsetWrist


def offset_wrist_solutions(arm: OffsetWrist, position: Sequence[float],
                           rotation: Sequence[float], seed: Sequence[float],
                           lower: Sequence[float], upper: Sequence[float]
                           ) -> list[list[float]]:
    """
    Return the pose's solutions within the limits, nearest the seed first (radians).

    position: metres, rotation: row-major 9-tuple (base frame), as offset_wrist_angles
    takes them; each angle turned by whole turns to lie within the limits nearest the seed.
    """
    turn = np.reshape(rotation, (3, 3))
    axis, origin = np.array(arm.first[0]), np.array(arm.first[1])
    # Where the last two axes meet, from the first axis's point; the first angle puts it
    # in the parallel joints' plane (see offset_wrist_angles).
    corner = np.asarray(position, dtype=float) + turn @ np.array(arm.centre) - origin
    first_along, plane = arm.plane
    along = float(axis @ corner) * first_along
    parallel = np.array(arm.parallel)
    relative = (turn @ np.reshape(arm.zero, (3, 3)).T).ravel().tolist()
    branches: list[tuple] = []
    for t1 in _sinusoid_roots(float(corner @ parallel) - along,
                              -float(np.cross(axis, corner) @ parallel), along + plane):
        _offset_branches(arm, t1, tuple(corner.tolist()), relative, branches)
    s3, s4 = arm.signs
    found = []
    for t1, t234, t5, t6, goal in branches:
        for t2, t3 in _planar_pair(arm, goal):
            fitted = [_within(t, s, lo, hi) for t, s, lo, hi in zip(
                (t1, t2, t3, s4 * (t234 - t2 - s3 * t3), t5, t6), seed, lower, upper)]
            if None not in fitted:
                found.append((sum((t - s) ** 2 for t, s in zip(fitted, seed)), fitted))
    found.sort()
    return [angles for _, angles in found]
