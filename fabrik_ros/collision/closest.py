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
The closest points of single pairs in Python floats, as the batched kernels give them.

The few pairs near a pose (the solve's constraints) are cheaper one by one in plain
floats than through numpy's per-call cost. The arithmetic follows
fabrik_ros.collision.distance (Ericson's segment-segment with its parallel test, a
cylinder's end planes where they bound higher, a box's closest point by its clamp) so
the points equal the batched ones to rounding; a segment that meets a box is left to
the batched kernel (its depth and face rules). Imports the standard library and the
check's rows only.
"""

from __future__ import annotations

from math import sqrt
from typing import Optional, Tuple

from fabrik_ros.collision.nearest import box_parameter, CheckRows

_TINY = 1e-18       # as distance._TINY

Point = Tuple[float, float, float]


def closest_points(rows: CheckRows, points: list, pair: int
                   ) -> Optional[Tuple[float, Point, Point, float]]:
    """
    Return a pair's axis distance, closest points (base frame) and the other's radius.

    The distance is between the body's segment and the other's segment, slab face or box
    (radii not subtracted; the other's radius 0 for a slab or a box); points as
    nearest.bounds places them. None where the body's segment meets a box.
    """
    kind, body, other = rows.pairs[pair]
    xs, ys, zs = points
    bodies = rows.bodies
    start = (xs[body], ys[body], zs[body])
    direction = (xs[bodies + body], ys[bodies + body], zs[bodies + body])
    if kind == 0:
        other_start = (xs[other], ys[other], zs[other])
        other_direction = (xs[bodies + other], ys[bodies + other], zs[bodies + other])
        return _segments(start, direction, other_start, other_direction) + (
            rows.radii[other],)
    if kind == 1:
        other_start, other_direction, _, radius, cylinder = rows.round_rows[other]
        axis, on_first, on_second = _segments(start, direction, other_start,
                                              other_direction)
        if cylinder is not None:
            slab = _slab(start, direction, *cylinder)
            if slab[0] > axis - radius:
                return slab + (0.0,)
        return axis, on_first, on_second, radius
    rotation, translation, half = rows.box_rows[other]
    local_start = _into(rotation, [s - t for s, t in zip(start, translation)])
    local_direction = _into(rotation, direction)
    at = box_parameter(*local_start, *local_direction, *half)
    point = [s + at * d for s, d in zip(local_start, local_direction)]
    surface = [min(max(x, -h), h) for x, h in zip(point, half)]
    gap = sqrt(sum((x - y) ** 2 for x, y in zip(point, surface)))
    if gap <= 0.0:
        return None
    return gap, _out(rotation, translation, point), _out(rotation, translation, surface), 0.0


def _segments(p: Point, u: Point, q: Point, v: Point) -> Tuple[float, Point, Point]:
    """Return the distance of segments p + s u and q + t v and their closest points."""
    rx, ry, rz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
    a = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    e = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    b = u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
    c = u[0] * rx + u[1] * ry + u[2] * rz
    f = v[0] * rx + v[1] * ry + v[2] * rz
    denominator = a * e - b * b
    s = 0.0 if denominator <= _TINY * max(a * e, _TINY) else (b * f - c * e) / denominator
    s = min(max(s, 0.0), 1.0)
    t = (b * s + f) / e if e > _TINY else 0.0
    t = min(max(t, 0.0), 1.0)
    s = min(max((b * t - c) / a, 0.0), 1.0) if a > _TINY else 0.0
    first = (p[0] + s * u[0], p[1] + s * u[1], p[2] + s * u[2])
    second = (q[0] + t * v[0], q[1] + t * v[1], q[2] + t * v[2])
    gap = sqrt(sum((x - y) ** 2 for x, y in zip(first, second)))
    return gap, first, second


def _slab(start: Point, direction: Point, centre: Point, axis: Point, half_length: float
          ) -> Tuple[float, Point, Point]:
    """Return a segment's distance to a slab, its end nearest it and that end's projection."""
    z_start = sum((s - c) * a for s, c, a in zip(start, centre, axis))
    z_end = z_start + sum(d * a for d, a in zip(direction, axis))
    above = min(z_start, z_end) - half_length
    below = -half_length - max(z_start, z_end)
    use_start = z_start <= z_end if above > below else z_start >= z_end
    point = start if use_start else tuple(s + d for s, d in zip(start, direction))
    z = z_start if use_start else z_end
    face = min(max(z, -half_length), half_length)
    return (max(above, below, 0.0), point,
            tuple(x + (face - z) * a for x, a in zip(point, axis)))


def _into(rotation: tuple, vector: list) -> Point:
    """Return R^T vector for a row-major 3x3 rotation R."""
    x, y, z = vector
    return (rotation[0] * x + rotation[3] * y + rotation[6] * z,
            rotation[1] * x + rotation[4] * y + rotation[7] * z,
            rotation[2] * x + rotation[5] * y + rotation[8] * z)


def _out(rotation: tuple, translation: tuple, vector: list) -> Point:
    """Return R vector + t for a row-major 3x3 rotation R."""
    x, y, z = vector
    return (rotation[0] * x + rotation[1] * y + rotation[2] * z + translation[0],
            rotation[3] * x + rotation[4] * y + rotation[5] * z + translation[1],
            rotation[6] * x + rotation[7] * y + rotation[8] * z + translation[2])
