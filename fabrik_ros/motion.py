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
Per-joint velocity, acceleration and step limits for a stream of joint commands.

Pure numpy (no ROS): the IK node shapes its command stream with it, and the simulated arm
uses it to follow commands like a real drive would.

Each step is a discrete bang-bang law. A joint speeds up by at most ``a*dt`` per step,
never above its velocity limit, and never faster than it can still stop exactly on the
target with steps of ``dt`` (the discrete form of ``v <= sqrt(2*a*d)``). Started at rest,
or at any speed it can still stop from, a joint therefore reaches an in-limit target in
close to minimum time and without overshoot. Positions are radians, velocities rad/s,
accelerations rad/s^2 and times seconds; ``inf`` means "no limit".
"""

from __future__ import annotations

from dataclasses import dataclass
import math

from fabrik_ros.chain import Chain
import numpy as np

# Relative slack on the acceleration bound, so rounding never leaves a joint creeping on
# by 1e-17 rad/step after it has landed on its target.
_ACCELERATION_SLACK = 1e-9


def _as_vector(name: str, value: float | np.ndarray, size: int) -> np.ndarray:
    """Broadcast ``value`` to a float vector of ``size`` entries, or raise ValueError."""
    array = np.asarray(value, dtype=float)
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != size):
        raise ValueError(f'{name} must be a scalar or have {size} entries, got shape '
                         f'{array.shape}')
    if np.isnan(array).any():
        raise ValueError(f'{name} contains NaN')
    return np.broadcast_to(array, (size,)).copy()


def _finite_vector(name: str, value: np.ndarray, size: int) -> np.ndarray:
    """Return ``value`` as a float vector of ``size`` finite entries, or raise ValueError."""
    array = np.asarray(value, dtype=float)
    if array.shape != (size,):
        raise ValueError(f'{name} must have shape ({size},), got {array.shape}')
    if not np.isfinite(array).all():
        raise ValueError(f'{name} must be finite, got {array.tolist()}')
    return array


@dataclass(frozen=True)
class MotionLimits:
    """Per-joint position range and velocity, acceleration and step limits (``inf`` = none)."""

    lower: np.ndarray
    upper: np.ndarray
    max_velocity: np.ndarray
    max_acceleration: np.ndarray
    max_step: np.ndarray

    @classmethod
    def create(cls, lower: np.ndarray, upper: np.ndarray,
               max_velocity: float | np.ndarray = np.inf,
               max_acceleration: float | np.ndarray = np.inf,
               max_step: float | np.ndarray = np.inf) -> MotionLimits:
        """Validate and broadcast the limits (scalars apply to every joint)."""
        size = np.asarray(lower).reshape(-1).shape[0]
        lower_v = _as_vector('lower', lower, size)
        upper_v = _as_vector('upper', upper, size)
        if (lower_v > upper_v).any():
            bad = int(np.argmax(lower_v > upper_v))
            raise ValueError(f'joint {bad}: lower limit {lower_v[bad]} > upper limit '
                             f'{upper_v[bad]}')
        rates = {'max_velocity': max_velocity, 'max_acceleration': max_acceleration,
                 'max_step': max_step}
        vectors = {name: _as_vector(name, value, size) for name, value in rates.items()}
        for name, vector in vectors.items():
            if (vector <= 0.0).any():
                raise ValueError(f'{name} must be positive, got {vector.tolist()}')
        return cls(lower_v, upper_v, **vectors)

    @classmethod
    def for_chain(cls, chain: Chain, max_acceleration: float | np.ndarray = np.inf,
                  max_step: float | np.ndarray = np.inf,
                  default_max_velocity: float = np.inf) -> MotionLimits:
        """
        Return the chain's position and velocity limits with the given extra limits.

        Joints whose model gives no velocity limit get ``default_max_velocity``.
        """
        velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity,
                            default_max_velocity)
        return cls.create(chain.lower, chain.upper, velocity, max_acceleration, max_step)

    @property
    def size(self) -> int:
        """Return the number of joints."""
        return self.lower.shape[0]


def braking_speed(distance: np.ndarray, max_acceleration: np.ndarray,
                  dt: float) -> np.ndarray:
    """Return `braking_speed_of` of each joint (arrays of one shape, or broadcast)."""
    distance = np.asarray(distance, dtype=float)
    acceleration = np.asarray(max_acceleration, dtype=float)
    if distance.shape != acceleration.shape:
        distance, acceleration = np.broadcast_arrays(distance, acceleration)
    # A joint's few operations in plain floats: numpy's per-call cost is most of it.
    return np.array([braking_speed_of(d, a, dt) for d, a in zip(
        distance.ravel().tolist(), acceleration.ravel().tolist())]).reshape(distance.shape)


def braking_speed_of(distance: float, max_acceleration: float, dt: float) -> float:
    """
    Return the highest speed from which a joint still stops within ``distance``.

    Discrete time: the speed drops by at most ``a*dt`` per step and each step moves
    ``speed*dt``, this step included, so a joint moving at the returned speed can land
    exactly on a point ``distance`` away and be at rest there. ``distance`` >= 0.
    """
    if max_acceleration == math.inf or distance == math.inf:
        return math.inf
    if not distance > 0.0:
        return 0.0
    speed_step = max_acceleration * dt
    # In units of a*dt (speed) and a*dt^2 (distance) the fastest stop from speed n
    # covers n + (n-1) + ... down to the last partial step; invert that sum.
    units = distance / (speed_step * dt)
    steps = max(math.ceil((math.sqrt(1.0 + 8.0 * units) - 1.0) / 2.0) - 1.0, 0.0)
    return speed_step * (units / (steps + 1.0) + steps / 2.0)


def limit_step(position: np.ndarray, velocity: np.ndarray, target: np.ndarray, dt: float,
               limits: MotionLimits) -> tuple[np.ndarray, np.ndarray]:
    """
    Move one step of ``dt`` toward ``target`` within ``limits``.

    Returns the next position, inside ``[lower, upper]``, and the velocity of this step
    (``(next - position) / dt``). The target is clipped into the limits first. NaN or inf
    in any input, wrong lengths, or ``dt`` <= 0 raise ValueError.
    """
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be a positive finite time, got {dt}')
    position = _finite_vector('position', position, limits.size)
    velocity = _finite_vector('velocity', velocity, limits.size)
    target = np.clip(_finite_vector('target', target, limits.size), limits.lower, limits.upper)
    offset = target - position
    distance = np.abs(offset)
    top_speed = np.minimum(limits.max_velocity, limits.max_step / dt)
    wanted = np.sign(offset) * np.minimum(
        top_speed, np.minimum(distance / dt, braking_speed(distance, limits.max_acceleration, dt)))
    speed_change = limits.max_acceleration * dt * (1.0 + _ACCELERATION_SLACK)
    # Acceleration last: a joint faster than a velocity limit that just narrowed slows
    # down to it at the acceleration limit instead of dropping to it in one step.
    new_velocity = np.clip(wanted, velocity - speed_change, velocity + speed_change)
    step = new_velocity * dt
    # Land exactly on the target instead of a rounding error short of or past it.
    lands = np.abs(step - offset) <= 1e-9 * distance
    next_position = np.clip(np.where(lands, target, position + step), limits.lower, limits.upper)
    return next_position, (next_position - position) / dt


def _forward_time(distance: np.ndarray, speed: np.ndarray, max_velocity: np.ndarray,
                  max_acceleration: np.ndarray) -> np.ndarray:
    """
    Return the minimum time to cover ``distance`` >= 0 from ``speed`` >= 0 and stop.

    ``speed`` must allow stopping within ``distance`` (``speed**2 <= 2*a*distance``).
    """
    with np.errstate(divide='ignore', invalid='ignore'):
        peak = np.minimum(np.sqrt(max_acceleration * distance + speed ** 2 / 2.0), max_velocity)
        ramps = (2.0 * peak - speed) / max_acceleration
        ramp_distance = (2.0 * peak ** 2 - speed ** 2) / (2.0 * max_acceleration)
        cruise = np.maximum(distance - ramp_distance, 0.0) / peak
        time = np.where(np.isinf(max_acceleration), distance / max_velocity, ramps + cruise)
    return np.where(distance > 0.0, time, 0.0)


def time_to_reach(position: np.ndarray, target: np.ndarray, limits: MotionLimits,
                  velocity: np.ndarray | None = None) -> float:
    """
    Return the minimum time (s) for every joint to reach ``target`` and stop there.

    Continuous-time bound under the velocity and acceleration limits, starting from
    ``velocity`` (default: at rest); a joint moving away or too fast to stop first brakes.
    The slowest joint sets the time, as for a JointTrajectory point's time_from_start.
    """
    position = _finite_vector('position', position, limits.size)
    target = np.clip(_finite_vector('target', target, limits.size), limits.lower, limits.upper)
    velocity = (np.zeros(limits.size) if velocity is None
                else _finite_vector('velocity', velocity, limits.size))
    max_velocity = limits.max_velocity
    acceleration = limits.max_acceleration
    direction = np.where(target >= position, 1.0, -1.0)
    speed = np.clip(velocity * direction, -max_velocity, max_velocity)
    distance = np.abs(target - position)
    with np.errstate(divide='ignore', invalid='ignore'):
        stop_distance = np.where(np.isinf(acceleration), 0.0, speed ** 2 / (2.0 * acceleration))
        stop_time = np.where(np.isinf(acceleration), 0.0, np.abs(speed) / acceleration)
    must_stop = (speed < 0.0) | (stop_distance > distance)
    # Joints that must stop first then start from rest at the point where they stopped.
    stopped_distance = np.abs(distance - np.sign(speed) * stop_distance)
    time = np.where(
        must_stop,
        stop_time + _forward_time(stopped_distance, np.zeros_like(speed), max_velocity,
                                  acceleration),
        _forward_time(distance, np.maximum(speed, 0.0), max_velocity, acceleration))
    return float(np.max(time, initial=0.0))


class MotionLimiter:
    """Stateful command shaper: feed it targets, get limited positions step by step."""

    def __init__(self, limits: MotionLimits, position: np.ndarray) -> None:
        """Start at rest at ``position`` (clipped into the limits)."""
        self.limits = limits
        self.position = np.empty(limits.size)
        self.velocity = np.zeros(limits.size)
        self.reset(position)

    def reset(self, position: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Jump the state to a measured ``position`` (and ``velocity``, default at rest)."""
        self.position = np.clip(_finite_vector('position', position, self.limits.size),
                                self.limits.lower, self.limits.upper)
        self.velocity = (np.zeros(self.limits.size) if velocity is None
                         else _finite_vector('velocity', velocity, self.limits.size))

    def step(self, target: np.ndarray, dt: float) -> np.ndarray:
        """Advance one step of ``dt`` seconds toward ``target``; return the new position."""
        self.position, self.velocity = limit_step(self.position, self.velocity, target, dt,
                                                  self.limits)
        return self.position.copy()
