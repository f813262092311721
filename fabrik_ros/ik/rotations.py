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
Rotations on plain floats: row-major 3x3 frames as 9-tuples, products, errors.

Hot paths use these instead of numpy: for 3x3 frames plain floats are several times faster
in CPython. Angles in radians.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


_TWO_PI = 2.0 * math.pi


_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


_ORIGIN = (0.0, 0.0, 0.0)


def _axis_frame(axis: np.ndarray) -> np.ndarray:
    """Return a rotation (3, 3) whose third column is the unit axis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def _product(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    """Return the product of two row-major 3x3 rotations (9-tuples)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7,
            a0 * b2 + a1 * b5 + a2 * b8, a3 * b0 + a4 * b3 + a5 * b6,
            a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7,
            a6 * b2 + a7 * b5 + a8 * b8)


def _transposed(m: Sequence[float]) -> tuple[float, ...]:
    """Return the transpose (the inverse) of a row-major 3x3 rotation; reads 9 entries."""
    return m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]


def _turn(target: Sequence[float], reached: Sequence[float]) -> tuple[float, ...]:
    """
    Return target @ reached^T: the rotation (row-major 9-tuple) turning reached onto target.

    Only the first nine entries of `reached` are read: a state's frame serves as it is.
    """
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = target
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = reached[:9]
    return (a0 * b0 + a1 * b1 + a2 * b2, a0 * b3 + a1 * b4 + a2 * b5,
            a0 * b6 + a1 * b7 + a2 * b8, a3 * b0 + a4 * b1 + a5 * b2,
            a3 * b3 + a4 * b4 + a5 * b5, a3 * b6 + a4 * b7 + a5 * b8,
            a6 * b0 + a7 * b1 + a8 * b2, a6 * b3 + a7 * b4 + a8 * b5,
            a6 * b6 + a7 * b7 + a8 * b8)


def _apply(r: Sequence[float], v: Sequence[float]) -> tuple[float, float, float]:
    """Return the row-major 3x3 rotation r applied to the 3-vector v."""
    x, y, z = v
    return (r[0] * x + r[1] * y + r[2] * z, r[3] * x + r[4] * y + r[5] * z,
            r[6] * x + r[7] * y + r[8] * z)


def _rotation_error(reached: Sequence[float], target: Sequence[float]
                    ) -> tuple[float, tuple[float, float, float]]:
    """Return the angle (radians) and rotation vector (base frame) turning reached onto target."""
    return _rotation_vector(_turn(target, reached))


def _rotation_vector(m: Sequence[float]) -> tuple[float, tuple[float, float, float]]:
    """
    Return the angle (radians) and rotation vector of a rotation (row-major 9-tuple).

    The vector is the log of m, whose sine part gives the axis away from a half turn; at a
    half turn the axis comes from m + I.
    """
    vx, vy, vz = m[7] - m[5], m[2] - m[6], m[3] - m[1]
    sine = math.sqrt(vx * vx + vy * vy + vz * vz)     # 2 sin(angle)
    angle = math.atan2(sine, m[0] + m[4] + m[8] - 1.0)
    if sine > 1e-6:
        return angle, (vx * angle / sine, vy * angle / sine, vz * angle / sine)
    if angle < 1.0:
        return angle, (vx / 2.0, vy / 2.0, vz / 2.0)
    columns = [(m[0] + 1.0, m[3], m[6]), (m[1], m[4] + 1.0, m[7]), (m[2], m[5], m[8] + 1.0)]
    ux, uy, uz = max(columns, key=lambda c: c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
    norm = math.sqrt(ux * ux + uy * uy + uz * uz)
    return angle, (ux * angle / norm, uy * angle / norm, uz * angle / norm)


def _axis_error(reached: Sequence[float], target: Sequence[float]
                ) -> tuple[float, tuple[float, float, float]]:
    """
    Return the angle (radians) between two unit axes and the rotation vector between them.

    The vector turns the first axis onto the second the shortest way: perpendicular to both
    (at a half turn, any axis perpendicular to the first).
    """
    ax, ay, az = reached
    bx, by, bz = target
    vx, vy, vz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    sine = math.sqrt(vx * vx + vy * vy + vz * vz)
    angle = math.atan2(sine, ax * bx + ay * by + az * bz)
    if sine <= 1e-12:
        if angle < 1.0:
            return angle, (0.0, 0.0, 0.0)
        # Half turn: about any axis perpendicular to `reached`.
        vx, vy, vz = (0.0, -az, ay) if abs(ax) < 0.9 else (az, 0.0, -ax)
        sine = math.sqrt(vx * vx + vy * vy + vz * vz)
    return angle, (vx * angle / sine, vy * angle / sine, vz * angle / sine)
