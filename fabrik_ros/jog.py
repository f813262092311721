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
Velocity jogging: tool twists and joint velocities in, limited joint commands out.

Pure numpy, time passed in as an argument (``on_twist(..., now)``, ``tick(now)``), so the
controller can own a Jogger beside its pose targets: ``reset(q, velocity)`` starts it from
the commanded state, so switching sources never jumps.

Each tick integrates the latest fresh command over the command period into a moving goal
(each effector's tool pose, or the joint positions for joint jogs) and steers toward it
with the feedforward command plus a proportional correction of the drift (a one-step
resolved-rate solve seeded by the previous answer). The goal is kept within a window of
the pose the arm achieves (anti-windup), so releasing the stick stops the tool where it
is. The step itself (jog_step) keeps every joint within its position, velocity and
acceleration limits, fades only the ill-conditioned directions near a singularity and
stops only the motion pushing a joint into its limit; a redundant arm drifts toward a
posture in the null space. A command older than ``timeout`` brakes the arm to rest
within its acceleration limits, all joints together.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import enum
from typing import Mapping

from fabrik_ros.chain import Chain
from fabrik_ros.jog_step import DirectionFilter, fit_scale, joint_step
from fabrik_ros.model.rotations import quaternion_from_rotation, rotation_about_axis
from fabrik_ros.motion import braking_speed, MotionLimits
import numpy as np


class JogStatus(enum.IntEnum):
    """MoveIt Servo's status codes, so existing dashboards read ours."""

    NO_WARNING = 0
    DECELERATE_FOR_APPROACHING_SINGULARITY = 1
    HALT_FOR_SINGULARITY = 2
    DECELERATE_FOR_COLLISION = 3
    HALT_FOR_COLLISION = 4
    JOINT_BOUND = 5
    DECELERATE_FOR_LEAVING_SINGULARITY = 6


@dataclass(frozen=True)
class JogSettings:
    """
    Jogging parameters (SI units).

    command_period: s between ticks, the integration step. timeout: s after which a command
    is stale. length_scale: m per rad weighing rotation against translation in the
    conditioning. goal_gain: 1/s, how fast drift from the goal is corrected. goal_window_m
    / goal_window_rad: how far the goal may run ahead of the achieved pose. posture: the
    redundant arm's preferred joint positions (None: mid-range of finite limits, no
    preference for continuous joints); posture_gain: 1/s. track_orientation: False jogs
    tool positions only (the twist's angular part is ignored, the tool turns as it must),
    as a chain with fewer than six joints per effector needs.
    """

    command_period: float = 0.01
    timeout: float = 0.1
    length_scale: float = 1.0
    goal_gain: float = 10.0
    goal_window_m: float = 0.005
    goal_window_rad: float = 0.03
    posture: tuple[float, ...] | None = None
    posture_gain: float = 1.0
    track_orientation: bool = True
    directions: DirectionFilter = field(default_factory=DirectionFilter)

    def __post_init__(self) -> None:
        """Refuse non-positive or non-finite settings, naming the culprit."""
        for name in ('command_period', 'timeout', 'length_scale', 'goal_gain',
                     'goal_window_m', 'goal_window_rad'):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be a positive finite number, got {value}')
        if not (np.isfinite(self.posture_gain) and self.posture_gain >= 0.0):
            raise ValueError(f'posture_gain must be finite and >= 0, got {self.posture_gain}')


@dataclass(frozen=True)
class JogCommand:
    """One tick's output: joint positions and velocities (chain order) and the status."""

    position: np.ndarray
    velocity: np.ndarray
    status: JogStatus


def _rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Return the (3,) axis times angle (rad) of a rotation matrix."""
    x, y, z, w = quaternion_from_rotation(rotation)
    sine = np.sqrt(x * x + y * y + z * z)
    if sine < 1e-12:
        return 2.0 * np.array([x, y, z])
    return 2.0 * np.arctan2(sine, w) / sine * np.array([x, y, z])


def _turned(rotation: np.ndarray, angular: np.ndarray) -> np.ndarray:
    """Return ``rotation`` turned by the base-frame rotation vector ``angular`` (rad)."""
    angle = float(np.linalg.norm(angular))
    if angle == 0.0:
        return rotation
    return rotation_about_axis(angular / angle, angle) @ rotation


def achieved_twist(chain: Chain, before: np.ndarray, after: np.ndarray, dt: float,
                   effector: int = 0) -> np.ndarray:
    """Return the (6,) base-frame tool twist (m/s, rad/s) from joints ``before`` to ``after``."""
    a, b = chain.tip_pose(before, effector), chain.tip_pose(after, effector)
    return np.concatenate([b[:3, 3] - a[:3, 3],
                           _rotation_vector(b[:3, :3] @ a[:3, :3].T)]) / dt


def _frame_rotation(frame: str | np.ndarray, tool: np.ndarray) -> np.ndarray:
    """Return the rotation from the twist's frame to the base frame, or raise ValueError."""
    if isinstance(frame, str):
        if frame not in ('base', 'tool'):
            raise ValueError(f"twist frame must be 'base', 'tool' or a rotation, got {frame!r}")
        return np.eye(3) if frame == 'base' else tool
    rotation = np.asarray(frame, dtype=float)
    if rotation.shape != (3, 3) or not np.isfinite(rotation).all() or \
            not np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-6):
        raise ValueError('twist frame rotation must be a finite orthonormal 3x3 matrix')
    return rotation


class Jogger:
    """Turns velocity commands into a limited joint command stream, one tick at a time."""

    def __init__(self, chain: Chain, limits: MotionLimits, position: np.ndarray,
                 settings: JogSettings = JogSettings()) -> None:
        """Start at rest at ``position`` (clipped into the limits) with no command."""
        self.chain = chain
        self.settings = settings
        self.limits = limits
        self._posture_target = self._posture(settings.posture)
        self._twists: dict[int, tuple[np.ndarray, float]] = {}
        self._joint_jog: tuple[np.ndarray, float] | None = None
        self._previous_sigma = np.inf
        self._slowdown: tuple[np.ndarray, np.ndarray] | None = None  # this tick's (tick)
        self.reset(position)

    # ------------------------------------------------------------------ commands

    def reset(self, position: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """
        Take over the commanded state (positions and velocities); forget every command.

        Positions are clipped into the limits; velocities are not, so a joint faster than a
        velocity limit slows down to it at the acceleration limit instead of jumping.
        """
        position = np.asarray(position, dtype=float)
        velocity = np.zeros(self.chain.dof) if velocity is None else \
            np.asarray(velocity, dtype=float)
        if position.shape != (self.chain.dof,) or velocity.shape != (self.chain.dof,) or \
                not (np.isfinite(position).all() and np.isfinite(velocity).all()):
            raise ValueError(f'reset needs {self.chain.dof} finite positions and velocities')
        self.position = np.clip(position, self.limits.lower, self.limits.upper)
        self.velocity = velocity.copy()
        self.wanted = np.zeros(self.chain.dof)  # rad/s: the last tick's, before a slowdown
        self.stop()

    def take(self, position: np.ndarray, velocity: np.ndarray) -> None:
        """
        Go on from the command actually sent (cut short by a collision stop), commands kept.

        The goals move onto what the arm achieves there: nothing catches up into the stop.
        """
        self.position = np.array(position, dtype=float)
        self.velocity = np.array(velocity, dtype=float)
        self._hold_here()

    def stop(self) -> None:
        """Forget every command: the next ticks brake to rest where the arm is."""
        self._twists.clear()
        self._joint_jog = None
        self._hold_here()

    def set_limits(self, limits: MotionLimits) -> None:
        """Use new limits from the next tick; a narrowed one is reached within the old."""
        if limits.size != self.chain.dof:
            raise ValueError(f'limits cover {limits.size} joints, the chain has '
                             f'{self.chain.dof}')
        self.limits = limits

    def on_twist(self, twist: np.ndarray, now: float, frame: str | np.ndarray = 'base',
                 effector: str | None = None) -> None:
        """
        Take a tool twist (vx, vy, vz m/s, wx, wy, wz rad/s) for one effector.

        frame: 'base', 'tool' (the effector's own frame) or the (3, 3) rotation from the
        twist's frame to the base frame. effector: its name, default the first. Replaces a
        joint jog (the goal restarts at the achieved pose). Raises ValueError, naming the
        culprit, for a non-finite twist or time, a bad frame or an unknown effector.
        """
        values = np.asarray(twist, dtype=float)
        if values.shape != (6,) or not np.isfinite(values).all():
            raise ValueError(f'twist must be 6 finite numbers, got {np.asarray(twist).tolist()}')
        _check_time(now)
        index = self._effector_index(effector)
        rotation = _frame_rotation(frame, self.chain.tip_pose(self.position, index)[:3, :3])
        if self._joint_jog is not None:
            self._joint_jog = None
            self._hold_here()
        self._twists[index] = (np.concatenate([rotation @ values[:3], rotation @ values[3:]]),
                               float(now))

    def on_joint_jog(self, velocities: Mapping[str, float], now: float) -> None:
        """
        Take joint velocities (name -> rad/s or m/s); unnamed joints are held.

        Replaces tool twists. Raises ValueError for an unknown name, a non-finite velocity
        or time.
        """
        _check_time(now)
        wanted = np.zeros(self.chain.dof)
        for name, value in velocities.items():
            if name not in self.chain.joint_names:
                raise ValueError(f'joint jog names unknown joint {name!r}')
            if not np.isfinite(value):
                raise ValueError(f'joint jog velocity for {name!r} is not finite: {value}')
            wanted[self.chain.joint_names.index(name)] = float(value)
        if self._twists:
            self._twists.clear()
            self._hold_here()
        self._joint_jog = (wanted, float(now))

    # ------------------------------------------------------------------ the tick

    def tick(self, now: float, slowdown: tuple[np.ndarray, np.ndarray] | None = None
             ) -> JogCommand:
        """
        Advance one command period; return the new command and the status.

        slowdown: per joint, a scale of the solved velocity and a cap (rad/s) for this tick
        (fabrik_ros.controller_collision), each reached at the joint's acceleration limit;
        joints with scale 1 and no cap keep their speed.
        """
        _check_time(now)
        self._slowdown = slowdown
        s = self.settings
        fresh = {i: t for i, (t, stamp) in self._twists.items() if now - stamp <= s.timeout}
        jog = self._joint_jog
        low, high, bounded = self._velocity_bounds()
        status = JogStatus.NO_WARNING
        if jog is not None and now - jog[1] <= s.timeout:
            wanted, status = self._joint_velocity(jog[0], low, high, bounded)
        elif fresh:
            wanted, status, prediction = self._tool_velocity(fresh, low, high, bounded)
            self._advance(wanted)
            self._follow_goals(*prediction)
            return JogCommand(self.position.copy(), self.velocity.copy(), status)
        else:
            wanted = np.zeros(self.chain.dof)
        self._advance(wanted)
        self._hold_here()
        return JogCommand(self.position.copy(), self.velocity.copy(), status)

    def has_fresh_command(self, now: float) -> bool:
        """Tell whether a twist or joint jog is at most ``timeout`` old at ``now``."""
        stamps = [stamp for _, stamp in self._twists.values()]
        if self._joint_jog is not None:
            stamps.append(self._joint_jog[1])
        return any(now - stamp <= self.settings.timeout for stamp in stamps)

    @property
    def at_rest(self) -> bool:
        """Return True when no joint moves."""
        return not self.velocity.any()

    # ------------------------------------------------------------------ internals

    def _effector_index(self, effector: str | None) -> int:
        if effector is None:
            return 0
        if effector not in self.chain.effector_names:
            raise ValueError(f'unknown effector {effector!r}; known: '
                             f'{self.chain.effector_names}')
        return self.chain.effector_names.index(effector)

    def _posture(self, posture: tuple[float, ...] | None) -> np.ndarray:
        lower, upper = self.limits.lower, self.limits.upper
        if posture is None:
            finite = np.isfinite(lower) & np.isfinite(upper)
            return np.where(finite, 0.5 * (np.where(finite, lower, 0.0)
                                           + np.where(finite, upper, 0.0)), np.nan)
        target = np.asarray(posture, dtype=float)
        if target.shape != (self.chain.dof,):
            raise ValueError(f'posture needs {self.chain.dof} joint positions, got '
                             f'{target.shape}')
        return target

    def _hold_here(self) -> None:
        """Put every goal on what the arm achieves now (no catching up later)."""
        poses = self.chain.effector_poses(self.position)
        self._goal_poses = [(pose[:3, 3].copy(), pose[:3, :3].copy()) for pose in poses]

    def _velocity_bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return per-joint velocity intervals and where a position limit narrows them."""
        limits, dt = self.limits, self.settings.command_period
        up = _braking(limits.upper - self.position, limits.max_acceleration, dt)
        down = _braking(self.position - limits.lower, limits.max_acceleration, dt)
        high = np.minimum(limits.max_velocity, up)
        low = -np.minimum(limits.max_velocity, down)
        return low, high, (up < limits.max_velocity) | (down < limits.max_velocity)

    def _joint_velocity(self, command: np.ndarray, low: np.ndarray, high: np.ndarray,
                        bounded: np.ndarray) -> tuple[np.ndarray, JogStatus]:
        scaled = fit_scale(np.zeros_like(command), command, -self.limits.max_velocity,
                           self.limits.max_velocity) * command
        velocity = np.clip(scaled, low, high)
        pushed = bounded & (np.abs(velocity - scaled) > 1e-12)
        return velocity, JogStatus.JOINT_BOUND if pushed.any() else JogStatus.NO_WARNING

    def _tool_velocity(self, fresh: dict[int, np.ndarray], low: np.ndarray, high: np.ndarray,
                       bounded: np.ndarray
                       ) -> tuple[np.ndarray, JogStatus, tuple[np.ndarray, np.ndarray]]:
        s = self.settings
        kinematics = self.chain.forward(self.position)
        poses = self.chain.effector_poses(self.position)
        jacobian = _pose_jacobian(self.chain, kinematics, s.length_scale)
        task, correction = np.zeros(6 * len(poses)), np.zeros(6 * len(poses))
        for index, pose in enumerate(poses):
            command = fresh.get(index, np.zeros(6))
            goal_p, goal_r = self._goal_poses[index]
            offset = _clamped(goal_p - pose[:3, 3], s.goal_window_m)
            turn = _clamped(_rotation_vector(goal_r @ pose[:3, :3].T), s.goal_window_rad)
            goal_p, goal_r = pose[:3, 3] + offset, _turned(pose[:3, :3], turn)
            rows = slice(6 * index, 6 * index + 6)
            correction[rows] = s.goal_gain * np.concatenate([offset, s.length_scale * turn])
            task[rows] = np.concatenate([command[:3], s.length_scale * command[3:]]) \
                + correction[rows]
            self._goal_poses[index] = (goal_p, goal_r)
        rows = np.ones(task.size, dtype=bool)
        if not s.track_orientation:
            rows[np.arange(task.size) % 6 >= 3] = False
            correction[~rows] = 0.0
        posture = self._posture_velocity()
        step = joint_step(jacobian[rows], task[rows], low, high, bounded, posture,
                          s.directions)
        status = JogStatus.NO_WARNING
        if step.strongest_weight < 1e-3:
            status = JogStatus.HALT_FOR_SINGULARITY
        elif step.locked.any():
            status = JogStatus.JOINT_BOUND
        elif step.weakest_weight < 1.0:
            status = JogStatus.DECELERATE_FOR_APPROACHING_SINGULARITY \
                if step.smallest_singular <= self._previous_sigma \
                else JogStatus.DECELERATE_FOR_LEAVING_SINGULARITY
        self._previous_sigma = step.smallest_singular
        return step.velocity, status, (jacobian, correction)

    def _follow_goals(self, jacobian: np.ndarray, correction: np.ndarray) -> None:
        """
        Move each goal by the twist the step makes, less the drift correction asked for.

        The arm's twist is predicted to first order, so the goal keeps only what that
        prediction misses (corrected at goal_gain on the next ticks) and never winds up:
        a blocked joint or a faded direction leaves the goal where the arm is.
        """
        s = self.settings
        twist = (jacobian @ self.velocity - correction) * s.command_period
        for index, (goal_p, goal_r) in enumerate(self._goal_poses):
            linear, angular = twist[6 * index:6 * index + 3], twist[6 * index + 3:6 * index + 6]
            self._goal_poses[index] = (goal_p + linear,
                                       _turned(goal_r, angular / s.length_scale))

    def _posture_velocity(self) -> np.ndarray | None:
        if self.settings.posture_gain == 0.0:
            return None
        error = np.nan_to_num(self._posture_target - self.position, nan=0.0)
        return self.settings.posture_gain * error

    def _advance(self, wanted: np.ndarray) -> None:
        """
        Step toward ``wanted`` within the limits, each joint at its own acceleration.

        Per joint, so that a joint braking hard (into a singularity, at a bound) does not
        hold back the others. Acceleration last: a velocity limit that just narrowed is
        reached at the acceleration limit, never jumped to.
        """
        limits, dt = self.limits, self.settings.command_period
        reach = limits.max_acceleration * dt
        low, high, _ = self._velocity_bounds()
        self.wanted = wanted
        if self._slowdown is not None:
            scale, cap = self._slowdown
            wanted = np.clip(wanted * scale, -cap, cap)
        velocity = np.clip(np.clip(wanted, low, high), self.velocity - reach,
                           self.velocity + reach)
        position = np.clip(self.position + velocity * dt, limits.lower, limits.upper)
        velocity = (position - self.position) / dt
        creeping = np.abs(velocity) < 1e-12  # rounding, not motion: stand still
        self.velocity = np.where(creeping, 0.0, velocity)
        self.position = np.where(creeping, self.position, position)


def _check_time(now: float) -> None:
    if not np.isfinite(now):
        raise ValueError(f'time must be finite, got {now}')


def _braking(room: np.ndarray, max_acceleration: np.ndarray, dt: float) -> np.ndarray:
    """Return the speed from which each joint stops within ``room`` (inf: no limit there)."""
    finite = np.isfinite(room)
    speed = braking_speed(np.where(finite, np.maximum(room, 0.0), 0.0), max_acceleration, dt)
    return np.where(finite, speed, np.inf)


def _clamped(vector: np.ndarray, radius: float) -> np.ndarray:
    """Return ``vector`` shortened to at most ``radius``."""
    length = float(np.linalg.norm(vector))
    return vector if length <= radius else vector * (radius / length)


def _pose_jacobian(chain: Chain, kinematics, length_scale: float) -> np.ndarray:
    """
    Return the (6m, dof) Jacobian of every effector: velocity rows, then angular rows.

    Angular rows are scaled by length_scale (m/rad). A prismatic joint turns no effector;
    a mimic follower adds its multiplier times its axis to its leader's column.
    """
    linear = chain.position_jacobian(kinematics)
    revolute = np.array([0.0 if joint.prismatic else 1.0 for joint in chain.joints])
    axes = kinematics.axes * (revolute * chain.multipliers)[:, None]
    per_coordinate = np.zeros((chain.dof, 3))
    np.add.at(per_coordinate, chain.coordinate_of_joint, axes)
    rows = []
    for effector in range(len(chain.effectors)):
        angular = per_coordinate.T * chain.moves_effector[effector]
        rows += [linear[effector], length_scale * angular]
    return np.vstack(rows)
