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
A pair's separating plane: a lower bound of its distance by the ends of its segments.

For any unit normal n, two convex sets A and B are at least min over B of n.x minus max
over A of n.x apart. A capsule's largest n.x is at an end of its segment plus its radius,
so the bound follows the segments' ends alone: as the arm moves, it changes by those
ends' motion along n (the command stream bounds that motion, see
fabrik_ros.controller_collision). The normal is the closest points' direction at the
measured configuration, where the bound equals the distance (a box, a segment, a
sphere); a cylinder's end face may give the better plane (its axis). The bound is valid
for every checked pair kind because the checked distance is at least each of these. In
plain floats: a few pairs near the closest, a few dozen operations each.
"""

from __future__ import annotations

from math import sqrt
from typing import Optional, Tuple

from fabrik_ros.collision.closest import closest_points
from fabrik_ros.collision.nearest import CheckRows

Point = Tuple[float, float, float]


def _dot(a: Point, b: Point) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def separating_plane(rows: CheckRows, points: list, pair: int
                     ) -> Optional[Tuple[Point, list, float, Optional[list], float]]:
    """
    Return a pair's plane: normal, body's ends, its radius, other's ends, other's side.

    The normal points from the body toward the other. The pair's distance is at least
    min over the other's ends of n.f plus its side, minus max over the body's ends of
    n.e plus the radius; a fixed obstacle has no ends (None), its side is then its least
    n.x. None where the closest points give no normal (a segment meeting a box, touching
    axes). points: as nearest.bounds places them.
    """
    found = closest_points(rows, points, pair)
    if found is None:
        return None
    _, on_first, on_second, _ = found
    gap = [b - a for a, b in zip(on_first, on_second)]
    length = sqrt(_dot(gap, gap))
    if not length > 1e-12:
        return None
    normal = (gap[0] / length, gap[1] / length, gap[2] / length)
    kind, body, other = rows.pairs[pair]
    ends = _ends(rows, points, body)
    radius = rows.radii[body]
    if kind == 0:
        return normal, ends, radius, _ends(rows, points, other), -rows.radii[other]
    if kind == 2:
        rotation, translation, half = rows.box_rows[other]
        return normal, ends, radius, None, _dot(normal, translation) - sum(
            abs(normal[0] * rotation[i] + normal[1] * rotation[3 + i]
                + normal[2] * rotation[6 + i]) * h for i, h in enumerate(half))
    start, direction, _, round_radius, cylinder = rows.round_rows[other]
    side = min(_dot(normal, start), _dot(normal, start) + _dot(normal, direction)) \
        - round_radius
    if cylinder is not None:    # the end face's plane where it is the farther one
        centre, axis, half_length = cylinder
        heights = [_dot([e - c for e, c in zip(end, centre)], axis) for end in ends]
        sign = 1.0 if min(heights) > -max(heights) else -1.0
        face = (-sign * axis[0], -sign * axis[1], -sign * axis[2])
        face_side = _dot(face, centre) - half_length
        if face_side - max(_dot(face, end) for end in ends) > \
                side - max(_dot(normal, end) for end in ends):
            return face, ends, radius, None, face_side
    return normal, ends, radius, None, side


def _ends(rows: CheckRows, points: list, body: int) -> list:
    """Return a body's segment ends (base frame) from the placed starts and directions."""
    xs, ys, zs = points
    start = (xs[body], ys[body], zs[body])
    index = rows.bodies + body
    return [start, (start[0] + xs[index], start[1] + ys[index], start[2] + zs[index])]
