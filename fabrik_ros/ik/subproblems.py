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
The subproblems the closed forms are made of, and the fitting of their angles to limits.

Paden-Kahan subproblems on unit axes through one point (1: the angle that turns one
direction toward another; 2: the two angles that carry a direction onto another), the
roots of a sinusoid (subproblem 3 reduced), and the whole turns that bring an angle within
a joint's limits nearest its seed. Units: radians; rotations are row-major 9-tuples.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

_TWO_PI = 2.0 * math.pi
_new_tuple = tuple.__new__     # a Spin from its fields without NamedTuple's Python __new__
_ROUNDING = 1e-9        # radians: a closed form's angle this far past a limit is on it


class AxisPair(NamedTuple):
    """Two unit axes through one point, not parallel, with subproblem 2's constants of them."""

    first: tuple[float, float, float]
    second: tuple[float, float, float]
    cosine: float                       # first . second
    normal: tuple[float, float, float]  # first x second
    denominator: float                  # cosine^2 - 1
    normal_square: float                # |normal|^2


def axis_pair(a1: Sequence[float], a2: Sequence[float]) -> AxisPair:
    """Return the pair of unit axes a1, a2 (not parallel) with _carry's constants."""
    cosine = _dot(a1, a2)
    normal = _cross(a1, a2)
    return AxisPair(tuple(a1), tuple(a2), cosine, normal, cosine * cosine - 1.0,
                    _dot(normal, normal))


def _carry(pair: AxisPair, p: Sequence[float], q: Sequence[float]
           ) -> list[tuple[float, float]]:
    """
    Return the angle pairs (t1, t2) with exp(a1 t1) exp(a2 t2) p = q (Paden-Kahan 2).

    pair: the axes a1, a2; p, q: unit directions. a2's turn takes p to a point z, a1's
    takes z to q: none, one or two of them.
    """
    return _carry_across(pair, _across(pair.second, p), _across(pair.first, q))


def _across(axis: Sequence[float], v: Sequence[float]
            ) -> tuple[float, tuple[float, float, float]]:
    """Return v's part along a unit axis and its part across it (as _turn_angle splits v)."""
    (ax, ay, az), (x, y, z) = axis, v
    along = ax * x + ay * y + az * z
    return along, (x - along * ax, y - along * ay, z - along * az)


def _carry_across(pair: AxisPair, p: tuple[float, tuple[float, float, float]],
                  q: tuple[float, tuple[float, float, float]]) -> list[tuple[float, float]]:
    """
    Return _carry's angle pairs of p and q given as _across splits them (p: about a2).

    A direction carried again and again (a constant p, a q shared by calls) is split once.
    """
    a1, a2, cosine, (nx, ny, nz), denominator, normal_square = pair
    (along_p, (px, py, pz)), (along_q, (qx, qy, qz)) = p, q
    alpha = (cosine * along_p - along_q) / denominator
    beta = (cosine * along_q - along_p) / denominator
    square = (1.0 - alpha * alpha - beta * beta - 2.0 * alpha * beta * cosine) / normal_square
    if square < -1e-9:
        return []
    gamma = math.sqrt(0.0 if 0.0 > square else square)  # max(square, 0.0), without a call
    (bx, by, bz), (cx, cy, cz) = a1, a2
    mx, my, mz = (alpha * bx + beta * cx, alpha * by + beta * cy, alpha * bz + beta * cz)
    pairs = []
    for side in (gamma, -gamma) if gamma else (gamma,):
        zx, zy, zz = mx + side * nx, my + side * ny, mz + side * nz
        # _turn_angle(a1, z, q) and _turn_angle(a2, p, z), of the parts across the axes.
        along = bx * zx + by * zy + bz * zz
        ux, uy, uz = zx - along * bx, zy - along * by, zz - along * bz
        along = cx * zx + cy * zy + cz * zz
        vx, vy, vz = zx - along * cx, zy - along * cy, zz - along * cz
        pairs.append((math.atan2(bx * (uy * qz - uz * qy) + by * (uz * qx - ux * qz)
                                 + bz * (ux * qy - uy * qx), ux * qx + uy * qy + uz * qz),
                      math.atan2(cx * (py * vz - pz * vy) + cy * (pz * vx - px * vz)
                                 + cz * (px * vy - py * vx), px * vx + py * vy + pz * vz)))
    return pairs


def _nearer(angles: Sequence[float], seed: Sequence[float], lower: Sequence[float],
            upper: Sequence[float], best: list[float] | None, distance: float
            ) -> tuple[list[float] | None, float]:
    """Return the angles (whole turns added to fit the limits) if nearer the seed than best."""
    fitted = [_within(t, s, lo, hi) for t, s, lo, hi in zip(angles, seed, lower, upper)]
    if None in fitted:
        return best, distance
    moved = sum((t - s) ** 2 for t, s in zip(fitted, seed))
    return (fitted, moved) if moved < distance else (best, distance)


def _within(angle: float, seed: float, lower: float, upper: float) -> float | None:
    """
    Return angle plus whole turns within [lower, upper], nearest the seed; None if none.

    An angle past a limit by rounding (_ROUNDING) is put on it.
    """
    nearest = seed + math.remainder(angle - seed, _TWO_PI)
    if lower <= nearest <= upper:   # the common case, first: as the loop would return it
        return nearest
    # Else the next nearest: a turn the other way from the seed.
    for value in (nearest, nearest - _TWO_PI if nearest > seed else nearest + _TWO_PI):
        if lower - _ROUNDING <= value <= upper + _ROUNDING:
            return min(max(value, lower), upper)
    return None


def _turn_angle(axis: Sequence[float], start: Sequence[float], end: Sequence[float]) -> float:
    """Return the angle about a unit axis that turns start toward end (subproblem 1)."""
    ax, ay, az = axis
    along = ax * start[0] + ay * start[1] + az * start[2]
    ux, uy, uz = start[0] - along * ax, start[1] - along * ay, start[2] - along * az
    along = ax * end[0] + ay * end[1] + az * end[2]
    vx, vy, vz = end[0] - along * ax, end[1] - along * ay, end[2] - along * az
    return math.atan2(ax * (uy * vz - uz * vy) + ay * (uz * vx - ux * vz)
                      + az * (ux * vy - uy * vx), ux * vx + uy * vy + uz * vz)


def _turned(axis: Sequence[float], angle: float, v: Sequence[float]
            ) -> tuple[float, float, float]:
    """Return v turned by angle about a unit axis (Rodrigues)."""
    ax, ay, az = axis
    x, y, z = v
    c, s = math.cos(angle), math.sin(angle)
    along = (ax * x + ay * y + az * z) * (1.0 - c)
    return (x * c + (ay * z - az * y) * s + ax * along,
            y * c + (az * x - ax * z) * s + ay * along,
            z * c + (ax * y - ay * x) * s + az * along)


class Spin(NamedTuple):
    """A vector to turn about a unit axis by angles yet unknown, with what _turned needs first."""

    axis: tuple[float, float, float]
    v: tuple[float, float, float]
    along: float                        # axis . v
    cross: tuple[float, float, float]   # axis x v


def spin(axis: Sequence[float], v: Sequence[float]) -> Spin:
    """Return the spin of v about a unit axis (the products as _turned makes them)."""
    ax, ay, az = axis
    x, y, z = v
    return _new_tuple(Spin, ((ax, ay, az), (x, y, z), ax * x + ay * y + az * z,
                             (ay * z - az * y, az * x - ax * z, ax * y - ay * x)))


def _spun(turning: Spin, angle: float) -> tuple[float, float, float]:
    """Return _turned(axis, angle, v) of a spin (v turned by angle about its axis)."""
    (ax, ay, az), (x, y, z), along, (cx, cy, cz) = turning
    c, s = math.cos(angle), math.sin(angle)
    along *= 1.0 - c
    return x * c + cx * s + ax * along, y * c + cy * s + ay * along, z * c + cz * s + az * along


def _apply(m: Sequence[float], v: Sequence[float]) -> tuple[float, float, float]:
    """Return the row-major 3x3 matrix m applied to v."""
    return (m[0] * v[0] + m[1] * v[1] + m[2] * v[2], m[3] * v[0] + m[4] * v[1] + m[5] * v[2],
            m[6] * v[0] + m[7] * v[1] + m[8] * v[2])


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Return the dot product of two 3-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Return the cross product of two 3-vectors."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _sinusoid_roots(a: float, b: float, c: float) -> list[float]:
    """Return angles t (radians, within a turn of 0) with a cos t + b sin t + c = 0: 0-2."""
    return _wave_roots(math.hypot(a, b), math.atan2(b, a), c)


def _wave_roots(r: float, phase: float, c: float) -> list[float]:
    """Return _sinusoid_roots' angles given a cos t + b sin t as r cos(t - phase)."""
    if r < 1e-12 or abs(c) > r * (1.0 + 1e-12):
        return []
    cosine = -c / r
    cosine = 1.0 if not cosine < 1.0 else -1.0 if not cosine > -1.0 else cosine  # (clipped)
    spread = math.acos(cosine)
    return [phase + spread, phase - spread] if spread else [phase]
