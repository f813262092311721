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
Input checks of the solver's public calls: modes, points, axes, quaternions, timeouts.

Each raises ValueError with one line naming the culprit.
"""

from __future__ import annotations

from collections.abc import Mapping
import math

import numpy as np


ROOT_MODES = ('pinned', 'free')


FIT_MODES = ('auto', 'chain', 'next')


ORIENTATION_MODES = ('full', 'axis', 'position')


MAX_COORDINATE_M = 1e6  # metres: a target farther out is an input error (it would overflow)


def quaternion_rotation(quaternion: object, what: str = 'orientation') -> tuple[float, ...]:
    """
    Return the row-major 3x3 rotation (9-tuple) of a quaternion (x, y, z, w), ROS order.

    A non-unit quaternion is normalised; a zero, non-finite or wrongly shaped one raises
    ValueError naming `what`.
    """
    values = np.asarray(quaternion, dtype=float).tolist()
    if not isinstance(values, list) or len(values) != 4 or isinstance(values[0], list):
        raise ValueError(f'{what} has shape {np.shape(quaternion)}, expected a quaternion '
                         '(x, y, z, w)')
    return _unit_rotation(values, what)


def _unit_rotation(values: list[float], what: str) -> tuple[float, ...]:
    """Return the rotation (9-tuple) of four floats (x, y, z, w), normalised; ValueError."""
    x, y, z, w = values
    norm = math.hypot(x, y, z, w)   # NaN or inf with any entry that is
    if not math.isfinite(norm):
        raise ValueError(f'{what} is not finite: {values}')
    if norm < 1e-9:
        raise ValueError(f'{what} is a zero quaternion: {values}')
    # fabrik_ros.chain.rotation_tuple's arithmetic written out (a pose target's hot path).
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


FLOAT64 = np.dtype(float)   # an array of it is used as it is (asarray's dtype=float: a no-op)


def _is_mapping(value: object) -> bool:
    """Return whether value is a mapping; arrays, lists and tuples skip the slower ABC check."""
    return not isinstance(value, (np.ndarray, list, tuple)) and isinstance(value, Mapping)


def _checked_timeout(timeout: float | None) -> float | None:
    """Return a time budget in seconds (None: none); ValueError unless positive."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and timeout > 0.0):
        raise ValueError(f'timeout must be a positive number of seconds or None, got '
                         f'{timeout!r}')
    return float(timeout)


def _orientation_mode(value: object, what: str) -> str:
    """Return a valid orientation mode, or raise ValueError naming it."""
    if value not in ORIENTATION_MODES:
        raise ValueError(f'{what} must be one of {ORIENTATION_MODES}, got {value!r}')
    return value


def _unit_axis(value: object, what: str) -> tuple[float, float, float]:
    """Return a non-zero finite 3-vector normalised, or raise ValueError naming it."""
    x, y, z = _point(value, what)
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < 1e-9:
        raise ValueError(f'{what} is a zero vector')
    return x / norm, y / norm, z / norm


def _point(value: object, what: str) -> tuple[float, float, float]:
    """Return a finite 3-vector as floats, or raise ValueError naming it."""
    values = np.asarray(value, dtype=float).tolist()
    if not isinstance(values, list) or len(values) != 3 or isinstance(values[0], list):
        raise ValueError(f'{what} has shape {np.shape(value)}, expected (3,) metres')
    return _finite_point(values, what)


def _finite_point(values: list[float], what: str) -> tuple[float, float, float]:
    """Return three floats (metres) as a point, or raise ValueError if one is unusable."""
    x, y, z = values
    if abs(x) <= MAX_COORDINATE_M and abs(y) <= MAX_COORDINATE_M \
            and abs(z) <= MAX_COORDINATE_M:     # (False for NaN: one test for both checks)
        return x, y, z
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ValueError(f'{what} is not finite: {values}')
    raise ValueError(f'{what} is farther than {MAX_COORDINATE_M:g} m from the base: '
                     f'{values}')


def _checked_settings(tolerance: float, max_iterations: int, root: str, fit: str,
                      fabrik_gain: float, max_restarts: int,
                      orientation_tolerance: float) -> None:
    """Raise ValueError naming the first of IkSolver's settings that is out of its range."""
    if not (math.isfinite(tolerance) and tolerance > 0.0):
        raise ValueError(f'tolerance must be a positive number of metres, got {tolerance}')
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) \
            or max_iterations < 1:
        raise ValueError(f'max_iterations must be a positive integer, got {max_iterations!r}')
    if root not in ROOT_MODES:
        raise ValueError(f'root must be one of {ROOT_MODES}, got {root!r}')
    if fit not in FIT_MODES:
        raise ValueError(f'fit must be one of {FIT_MODES}, got {fit!r}')
    if not 0.0 < fabrik_gain < 1.0:
        raise ValueError(f'fabrik_gain must be in (0, 1), got {fabrik_gain}')
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) \
            or max_restarts < 0:
        raise ValueError(f'max_restarts must be an integer >= 0, got {max_restarts!r}')
    if not (math.isfinite(orientation_tolerance) and orientation_tolerance > 0.0):
        raise ValueError('orientation_tolerance must be a positive number of radians, got '
                         f'{orientation_tolerance}')
