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
Velocity jogging on scripted joystick streams: fabrik_ros.jog beside a Servo-like loop.

Streams on the 6-DOF arm of config/arm.yaml, each followed by silence: circles in a
horizontal plane, a push out past full stretch (with a sideways part), a turn through the
wrist singularity (wrist pitch through zero). Each runs at 100 and 500 Hz through
fabrik_ros.jog.Jogger, through the IK controller's jog as the node ticks it (the limits in
force and the stream's bookkeeping on top) and through a Servo-like loop: the damped
pseudo-inverse of the Jacobian, open loop, slowed linearly from condition number 17 and
halted at 30 while approaching a singularity, velocity limits by uniform scaling; all of
them under the same per-joint velocity, acceleration and position limits, so the comparison
is about the singularity handling.

Reported per stream, rate and loop, after a 0.2 s start-up ramp: the error of the achieved
tool velocity against the command (linear: relative, and its direction in degrees;
angular: rad/s), median and max; the share of the command kept along the directions that
stay well conditioned (median, min), the largest joint velocity, acceleration and jerk as a
share of the limits (jerk per unit of acceleration limit per second), the time to rest
after the stream stops and its bound (the 0.1 s timeout plus the fastest joint's braking
time at its acceleration limit), and CPU and wall time per command (median, p99). Run:

    python3 bench/jog_bench.py

It prints a table and writes bench/results/jog_bench.json with the commit and command.
Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

from pathlib import Path
import sys
import time
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabrik_ros.chain import Chain  # noqa: E402
from fabrik_ros.config import chain_from_parameters, load_config  # noqa: E402
from fabrik_ros.controller import IkController, Settings  # noqa: E402
from fabrik_ros.jog import achieved_twist, Jogger, JogSettings  # noqa: E402
from fabrik_ros.motion import braking_speed, MotionLimits  # noqa: E402
from ik_bench import _commit, publish, REPO  # noqa: E402
import numpy as np  # noqa: E402

ACCELERATION = 8.0  # rad/s^2, every joint
STREAM_S = 3.0  # s of commands, then silence
SILENCE_S = 1.0  # s
RAMP_S = 0.2  # s skipped before errors are measured
RATES = (100.0, 500.0)  # Hz
SERVO_DECELERATE, SERVO_HALT = 17.0, 30.0  # MoveIt Servo's condition number defaults
SERVO_DAMPING = 1e-3  # m/rad, the pseudo-inverse's damping


def _circle(t: float) -> np.ndarray:
    omega = 2.0 * np.pi / 2.0  # rad/s: one turn of radius 0.08 m every 2 s
    return np.array([-0.08 * omega * np.sin(omega * t), 0.08 * omega * np.cos(omega * t),
                     0.0, 0.0, 0.0, 0.0])


def _stretch_stream(chain: Chain, start: np.ndarray) -> Callable[[float], np.ndarray]:
    outward = chain.tip_position(start) - chain.joint_positions(start)[1]
    twist = np.concatenate([0.15 * outward / np.linalg.norm(outward) + [0.0, 0.05, 0.0],
                            np.zeros(3)])
    return lambda t: twist


def _wrist_stream(chain: Chain, start: np.ndarray) -> Callable[[float], np.ndarray]:
    pitch_axis = chain.forward(start).axes[4]
    twist = np.concatenate([[0.0, 0.03, 0.0], -0.4 * pitch_axis])
    return lambda t: twist


def streams(chain: Chain) -> dict[str, tuple[np.ndarray, Callable[[float], np.ndarray]]]:
    """
    Return each stream's start configuration and twist (base frame) as a function of t.

    Every start is conditioned better than 17 (Servo's first threshold), so both loops
    start at full speed and meet the singularity on the way.
    """
    stretch_start = np.array([0.0, 0.2, 0.9, 0.0, 1.2, 0.0])
    wrist_start = np.array([0.3, 0.5, 1.0, 0.4, 0.9, 0.0])
    return {'circles': (np.array([0.0, 0.5, 1.0, 0.0, 0.8, 0.0]), _circle),
            'stretch': (stretch_start, _stretch_stream(chain, stretch_start)),
            'wrist': (wrist_start, _wrist_stream(chain, wrist_start))}


def _jacobian(chain: Chain, q: np.ndarray) -> np.ndarray:
    """Return the (6, n) tool Jacobian of a serial revolute arm (unit length scale)."""
    kinematics = chain.forward(q)
    linear = np.cross(kinematics.axes, chain.tip_position(q) - kinematics.positions)
    return np.vstack([linear.T, kinematics.axes.T])


def _condition(jacobian: np.ndarray) -> float:
    sigma = np.linalg.svd(jacobian, compute_uv=False)
    return float(sigma[0] / max(sigma[-1], 1e-300))


class ServoLike:
    """An open-loop damped pseudo-inverse jogger that slows at 17 and halts at 30."""

    def __init__(self, chain: Chain, limits: MotionLimits, position: np.ndarray,
                 dt: float) -> None:
        """Start at rest at ``position``."""
        self.chain, self.limits, self.dt = chain, limits, dt
        self.position, self.velocity = position.copy(), np.zeros(chain.dof)
        self.stamp = -np.inf

    def on_twist(self, twist: np.ndarray, now: float) -> None:
        """Take a base-frame twist."""
        self.twist, self.stamp = twist, now

    def tick(self, now: float) -> None:
        """Advance one period."""
        wanted = np.zeros(self.chain.dof)
        if now - self.stamp <= 0.1:
            jacobian = _jacobian(self.chain, self.position)
            u, sigma, vt = np.linalg.svd(jacobian)
            wanted = vt.T @ ((sigma / (sigma ** 2 + SERVO_DAMPING ** 2)) * (u.T @ self.twist))
            condition = _condition(jacobian)
            # Servo: slow down only while the step makes the conditioning worse.
            ahead = _condition(_jacobian(self.chain, self.position + wanted * self.dt))
            if ahead > condition and condition > SERVO_DECELERATE:
                wanted *= max(0.0, 1.0 - (condition - SERVO_DECELERATE)
                              / (SERVO_HALT - SERVO_DECELERATE))
            over = np.max(np.abs(wanted) / self.limits.max_velocity)
            wanted /= max(1.0, over)
        self.position, self.velocity = guard(self.position, self.velocity, wanted,
                                             self.limits, self.dt)


class ControllerLoop:
    """The jogger as the node runs it: through IkController's jog, a tick per command."""

    def __init__(self, chain: Chain, limits: MotionLimits, position: np.ndarray,
                 dt: float) -> None:
        """Start at rest at ``position``, streaming every ``dt`` seconds."""
        self.controller = IkController(Settings(chain=chain, motion=limits), 0.0,
                                       command_period=dt, feedback=False)
        self.controller.stream.start(position)
        self.dt = dt

    def on_twist(self, twist: np.ndarray, now: float) -> None:
        """Take a base-frame twist."""
        self.controller.jog.on_twist(0, twist, now, 'base')

    def tick(self, now: float) -> None:
        """Advance one period."""
        self.controller.tick(now)

    @property
    def position(self) -> np.ndarray:
        """Return the commanded joints."""
        return self.controller.stream.position

    @property
    def velocity(self) -> np.ndarray:
        """Return the commanded joint velocities."""
        return self.controller.stream.velocity


def guard(position: np.ndarray, velocity: np.ndarray, wanted: np.ndarray,
          limits: MotionLimits, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the next position and velocity: per joint, velocity, braking, acceleration."""
    room_up = np.where(np.isfinite(limits.upper), limits.upper - position, 1e9)
    room_down = np.where(np.isfinite(limits.lower), position - limits.lower, 1e9)
    high = np.minimum(limits.max_velocity,
                      braking_speed(np.maximum(room_up, 0.0), limits.max_acceleration, dt))
    low = -np.minimum(limits.max_velocity,
                      braking_speed(np.maximum(room_down, 0.0), limits.max_acceleration, dt))
    reach = limits.max_acceleration * dt
    new_velocity = np.clip(np.clip(wanted, low, high), velocity - reach, velocity + reach)
    new_position = np.clip(position + new_velocity * dt, limits.lower, limits.upper)
    return new_position, (new_position - position) / dt


def _remaining(chain: Chain, q: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """Return ``twist`` less its parts along directions conditioned worse than 17."""
    u, sigma, _ = np.linalg.svd(_jacobian(chain, q))
    weak = u[:, sigma * SERVO_DECELERATE < sigma[0]]
    return twist - weak @ (weak.T @ twist)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms < 1e-12:
        return float('nan')
    return float(np.degrees(np.arccos(np.clip(np.dot(a, b) / norms, -1.0, 1.0))))


def _relative(error: np.ndarray, wanted: np.ndarray) -> float:
    norm = np.linalg.norm(wanted)
    return float(np.linalg.norm(error) / norm) if norm > 1e-9 else float('nan')


def run(chain: Chain, loop: str, rate: float, start: np.ndarray,
        stream: Callable[[float], np.ndarray]) -> dict[str, Any]:
    """Run one stream through one loop at one rate; return its figures."""
    dt = 1.0 / rate
    limits = MotionLimits.create(chain.lower, chain.upper, chain.max_velocity, ACCELERATION)
    loops = {'jog': lambda: Jogger(chain, limits, start, JogSettings(command_period=dt)),
             'controller': lambda: ControllerLoop(chain, limits, start, dt),
             'servo-like': lambda: ServoLike(chain, limits, start, dt)}
    jogger = loops[loop]()
    ticks = int(round((STREAM_S + SILENCE_S) * rate))
    last_command = int(round(STREAM_S * rate)) - 1
    positions, cpu, wall = [start.copy()], [], []
    linear, angular, turned, kept, rest_tick, braking = [], [], [], [], None, 0.0
    for tick in range(ticks):
        now = tick * dt
        twist = stream(now)
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        if tick <= last_command:
            jogger.on_twist(twist, now)
        jogger.tick(now)
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
        positions.append(jogger.position.copy())
        if RAMP_S <= now and tick <= last_command:
            achieved = achieved_twist(chain, positions[-2], positions[-1], dt)
            linear.append(_relative(achieved[:3] - twist[:3], twist[:3]))
            angular.append(float(np.linalg.norm(achieved[3:] - twist[3:])))
            turned.append(_angle_deg(achieved[:3], twist[:3]))
            remaining = _remaining(chain, positions[-2], twist)
            norm = np.linalg.norm(remaining)
            kept.append(float(np.dot(achieved, remaining) / norm ** 2) if norm > 1e-9
                        else float('nan'))
        if tick == last_command:  # the joints' braking time from here
            braking = float(np.max(np.abs(jogger.velocity)) / ACCELERATION)
        if tick > last_command and rest_tick is None and not np.any(jogger.velocity):
            rest_tick = tick
    q = np.array(positions)
    velocity = np.diff(q, axis=0) / dt
    acceleration = np.diff(velocity, axis=0) / dt
    jerk = np.diff(acceleration, axis=0) / dt

    def finite(values: list[float], how: Callable) -> float:
        values = [v for v in values if np.isfinite(v)]
        return float(how(values)) if values else float('nan')
    return {
        'linear_error_median': finite(linear, np.median), 'linear_error_max': finite(linear, max),
        'linear_direction_deg_median': finite(turned, np.median),
        'linear_direction_deg_max': finite(turned, max),
        'angular_error_rad_s_median': finite(angular, np.median),
        'angular_error_rad_s_max': finite(angular, max),
        'kept_median': finite(kept, np.median), 'kept_min': finite(kept, min),
        'velocity_share': float(np.max(np.abs(velocity) / limits.max_velocity)),
        'acceleration_share': float(np.max(np.abs(acceleration) / ACCELERATION)),
        'jerk_share_per_s': float(np.max(np.abs(jerk)) / ACCELERATION),
        'rest_after_s': None if rest_tick is None else (rest_tick - last_command) * dt,
        'rest_bound_s': 0.1 + braking,  # the timeout, then braking at the limits
        'cpu_ms_median': 1e3 * float(np.median(cpu)),
        'cpu_ms_p99': 1e3 * float(np.percentile(cpu, 99)),
        'wall_ms_median': 1e3 * float(np.median(wall)),
        'wall_ms_p99': 1e3 * float(np.percentile(wall, 99)),
        'finite': bool(np.isfinite(q).all()),
    }


def table(results: dict[str, Any]) -> str:
    """Return the markdown table of the results."""
    lines = ['| stream | Hz | loop | lin err med/max | lin dir deg med/max '
             '| ang err rad/s med/max | kept med/min | vel/acc share | jerk /s | rest s (bound) '
             '| cpu ms med/p99 | wall ms med/p99 |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for row in results['runs']:
        rest = '-' if row['rest_after_s'] is None else \
            f"{row['rest_after_s']:.3f} ({row['rest_bound_s']:.3f})"
        lines.append(
            f"| {row['stream']} | {row['rate']:.0f} | {row['loop']} "
            f"| {row['linear_error_median']:.1%} / {row['linear_error_max']:.1%} "
            f"| {row['linear_direction_deg_median']:.1f} / {row['linear_direction_deg_max']:.1f} "
            f"| {row['angular_error_rad_s_median']:.3f} / {row['angular_error_rad_s_max']:.2f} "
            f"| {row['kept_median']:.2f} / {row['kept_min']:.2f} "
            f"| {row['velocity_share']:.2f} / {row['acceleration_share']:.2f} "
            f"| {row['jerk_share_per_s']:.0f} | {rest} "
            f"| {row['cpu_ms_median']:.2f} / {row['cpu_ms_p99']:.2f} "
            f"| {row['wall_ms_median']:.2f} / {row['wall_ms_p99']:.2f} |")
    return '\n'.join(lines)


def main() -> None:
    """Run every stream, rate and loop; print the table and write the JSON."""
    chain = chain_from_parameters(load_config(REPO / 'config' / 'arm.yaml'), REPO)
    runs = []
    for name, (start, stream) in streams(chain).items():
        for rate in RATES:
            for loop in ('jog', 'controller', 'servo-like'):
                runs.append({'stream': name, 'rate': rate, 'loop': loop,
                             **run(chain, loop, rate, start, stream)})
    results = {'commit': _commit(),
               'command': ' '.join(['python3', 'bench/jog_bench.py', *sys.argv[1:]]),
               'acceleration_limit': ACCELERATION, 'stream_s': STREAM_S, 'runs': runs}
    publish(results, table(results), 'jog_bench.json')


if __name__ == '__main__':
    main()
