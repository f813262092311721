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


"""The point model's records: a pose with its forward kinematics, joints, effectors, fits."""

from __future__ import annotations

from typing import NamedTuple


class _State(NamedTuple):
    """A pose and its forward kinematics, on plain floats."""

    q: list[float]                  # radians
    base: tuple[float, float, float]  # metres, the root point
    frames: list[tuple[float, ...]]   # per joint (and the base last): canonical rotation
    #                                   (9, row-major), origin (3)
    points: list[tuple[float, float, float]]  # per point: position, metres


class _Joint(NamedTuple):
    """A joint compiled for the sweep."""

    parent: int                 # parent joint index, -1 = base
    point: int                  # index of the point at this joint's origin
    rotation: tuple[float, ...]  # (9,) canonical parent frame -> canonical frame at q = 0
    offset: tuple[float, float, float]  # origin in the canonical parent frame
    lower: float                # the joint's range (radians or metres) as its coupling allows
    upper: float
    prismatic: bool             # slides along its axis (metres) instead of turning
    coordinate: int             # index in q of the independent joint that drives it
    multiplier: float           # position = multiplier * q[coordinate] + offset (mimic)
    shift: float
    decides: bool               # the sweep fits q[coordinate] at this joint (the first
    #                             of its coupled joints), the others follow


class _Effector(NamedTuple):
    """An effector (or a marker point of its tool) compiled for the sweep and the passes."""

    parent: int
    point: int
    offset: tuple[float, float, float]  # in the canonical parent frame
    tool: tuple[float, ...]     # (9,) rotation: canonical parent frame -> tool frame
    joints: tuple[int, ...]     # joints that move it, root first
    path: tuple[int, ...]       # points from the effector up to its anchor, anchor excluded
    along: tuple[float, ...]    # metres, each path point's distance from the anchor, unbent
    anchor: int                 # the point that stays put when the root is pinned
    reach: float                # metres, path length from the anchor: farther is unreachable


# A fit: per joint, the points its motion is fitted to, as (first, stop, weight) runs of
# point indices (points are numbered depth-first, so a joint's downstream points are one run).
_Fit = tuple[tuple[int, int, float], ...]


def _fit_without(fit: _Fit, points: set[int]) -> _Fit:
    """Return the fit with these points left out (a run split around them)."""
    runs = []
    for first, stop, weight in fit:
        start = first
        for k in range(first, stop + 1):
            if k == stop or k in points:
                if start < k:
                    runs.append((start, k, weight))
                start = k + 1
    return tuple(runs)
