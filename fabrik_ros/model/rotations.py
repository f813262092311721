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
Rotations: (3, 3) matrices from and to URDF roll/pitch/yaw, quaternions and axis-angle.

Conventions: radians; roll/pitch/yaw as URDF, R = Rz(yaw) @ Ry(pitch) @ Rx(roll);
quaternions in ROS order (x, y, z, w). Imports numpy and the standard library only.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def rotation_from_rpy(rpy: Sequence[float]) -> np.ndarray:
    """Return the (3, 3) rotation of URDF roll/pitch/yaw (radians): Rz(y) @ Ry(p) @ Rx(r)."""
    roll, pitch, yaw = (float(v) for v in rpy)
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def rpy_from_rotation(rotation: np.ndarray) -> np.ndarray:
    """
    Return URDF roll/pitch/yaw (3,) radians of a (3, 3) rotation.

    Yaw comes first; pitch and roll are then read from Rz(yaw)^T R = Ry(pitch) Rx(roll), so
    the angles reproduce the rotation to rounding even at and near gimbal lock (pitch
    +-pi/2, where yaw and roll are not unique).
    """
    r = np.asarray(rotation, dtype=float)
    yaw = math.atan2(r[1, 0], r[0, 0])
    cy, sy = math.cos(yaw), math.sin(yaw)
    pitch = math.atan2(-r[2, 0], cy * r[0, 0] + sy * r[1, 0])
    roll = math.atan2(sy * r[0, 2] - cy * r[1, 2], cy * r[1, 1] - sy * r[0, 1])
    return np.array([roll, pitch, yaw])


def rotation_from_quaternion(xyzw: Sequence[float]) -> np.ndarray:
    """Return the (3, 3) rotation of a unit quaternion (x, y, z, w), ROS order."""
    return np.array(rotation_tuple(xyzw)).reshape(3, 3)


def rotation_tuple(xyzw: Sequence[float]) -> tuple[float, ...]:
    """Return the rotation of a unit quaternion (x, y, z, w) as a row-major 9-tuple of floats."""
    x, y, z, w = map(float, xyzw)
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


def quaternion_from_rotation(rotation: np.ndarray) -> np.ndarray:
    """Return the unit quaternion (4,) x, y, z, w (ROS order, w >= 0) of a (3, 3) rotation."""
    r = np.asarray(rotation, dtype=float)
    # From the largest of w, x, y, z (Shepperd's method): no division by a small number.
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    candidates = [trace, r[0, 0], r[1, 1], r[2, 2]]
    largest = int(np.argmax(candidates))
    if largest == 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4]
    else:
        i = largest - 1
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = [0.0] * 4
        q[i] = s / 4
        q[j] = (r[j, i] + r[i, j]) / s
        q[k] = (r[k, i] + r[i, k]) / s
        q[3] = (r[k, j] - r[j, k]) / s
    q = np.array(q)
    return (q if q[3] >= 0.0 else -q) / np.linalg.norm(q)


def rotation_about_axis(axis: Sequence[float], angle: float) -> np.ndarray:
    """Return the (3, 3) rotation by angle (radians) about a unit axis (Rodrigues)."""
    k = _cross_matrix(np.asarray(axis, dtype=float))
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _cross_matrix(v: np.ndarray) -> np.ndarray:
    """Return the (3, 3) matrix K with K @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
