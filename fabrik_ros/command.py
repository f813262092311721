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
Joint-command bookkeeping of the IK node, without ROS.

Joint orders for controllers that take bare arrays, measured positions out of a
JointState that may carry other joints, and where a moving command can stop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from fabrik_ros.motion import limit_step, MotionLimits, time_to_reach
import numpy as np

# radians (metres): a measured position beyond it is absurd, not a pose (1e305 overflows
# the braking arithmetic); a continuous joint gets there after 160,000 turns.
MAX_MEASURED_POSITION = 1e6
# A tick this many command periods late: the last command was held meanwhile, so the arm
# is at rest there (forward_command) or arrived (joint_trajectory) and restarts from rest.
STALLED_PERIODS = 10


def joint_order(names: Sequence[str], wanted: Sequence[str]) -> np.ndarray:
    """
    Return the indices into `names` that list the joints in the order `wanted`.

    `wanted` must name every joint of `names` exactly once (a controller commanding a bare
    array has to move every solved joint); ValueError names what is missing or unknown.
    """
    unknown = sorted(set(wanted) - set(names))
    missing = [name for name in names if name not in wanted]
    duplicated = sorted({name for name in wanted if list(wanted).count(name) > 1})
    if unknown or missing or duplicated:
        raise ValueError(f'joint order {list(wanted)} must list each of {list(names)} once '
                         f'(unknown: {unknown}, missing: {missing}, repeated: {duplicated})')
    return np.array([list(names).index(name) for name in wanted], dtype=int)


def measured_positions(names: Sequence[str], positions: Sequence[float],
                       joints: Sequence[str]) -> np.ndarray:
    """
    Return the (n,) positions of `joints` out of a measured JointState (names, positions).

    The message may carry other joints too. ValueError when names and positions differ
    in length, a joint is missing, or a position is not finite.
    """
    if len(names) != len(positions):
        raise ValueError(f'{len(names)} names but {len(positions)} positions')
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        repeated = sorted(name for name, count in Counter(names).items() if count > 1)
        raise ValueError(f'joints {repeated} are listed more than once')
    missing = [joint for joint in joints if joint not in index]
    if missing:
        raise ValueError(f'joints {missing} are not measured')
    measured = np.array([positions[index[joint]] for joint in joints], dtype=float)
    absurd = ~(np.abs(measured) <= MAX_MEASURED_POSITION)  # NaN and inf too
    if absurd.any():
        bad = {joint: float(value) for joint, value, no in zip(joints, measured, absurd) if no}
        raise ValueError(f'measured positions {bad} are not finite or beyond '
                         f'±{MAX_MEASURED_POSITION:g}')
    return measured


def stopping_point(position: np.ndarray, velocity: np.ndarray, limits: MotionLimits,
                   dt: float) -> np.ndarray:
    """
    Return where each joint comes to rest braking at its acceleration limit, radians.

    Commands of `dt` seconds braking from `velocity` cover v^2/(2a) plus up to half a step
    (v dt/2), so heading for this point stops a moving command without a jump or a turn
    back; without an acceleration limit it is where the joint is. Clipped into the limits.
    """
    with np.errstate(divide='ignore', invalid='ignore'):
        braking = np.where(np.isinf(limits.max_acceleration), 0.0,
                           velocity * np.abs(velocity) / (2.0 * limits.max_acceleration)
                           + velocity * dt / 2.0)
    return np.clip(position + braking, limits.lower, limits.upper)


class CommandStream:
    """
    The joint command the node sends, one step at a time.

    It heads for the latest IK solution (the goal) within the motion limits, or holds:
    brakes to a stop at the acceleration limit and stays there, the goal forgotten, until
    a new goal comes. With `dt` None (no command rate) each step jumps toward the goal,
    held back only by the position limits and the max joint step.

    Limits that change take force without a jump: a joint outside a narrowed position
    range, or too fast for a narrowed velocity or acceleration limit, moves into the new
    limits within the old ones (the range in force spans the joint and where it can stop,
    and shrinks to the new range as the joint gets there). Commands never leave the
    widest of the old and new position ranges.
    """

    def __init__(self, limits: MotionLimits, dt: float | None) -> None:
        """Start with no command: nothing is sent until start() gives a position."""
        self.dt = dt  # seconds between commands, None: a command per solution
        self.position: np.ndarray | None = None  # last command, radians
        self.velocity = np.zeros(limits.size)  # of the last step, rad/s
        self.goal: np.ndarray | None = None
        self.hold_reason = ''  # why it holds; '' while it follows a goal or has none
        self._stop: np.ndarray | None = None  # where it holds
        # Acceleration in force while new limits take over (None: the limits are in force).
        self._acceleration: np.ndarray | None = None
        # The widest of the old and new position ranges while new limits take over.
        self._outer = (limits.lower, limits.upper)
        self.limits = limits
        # The collision slowdown of the next step only: per joint, a scale of the velocity
        # limit and a cap (rad/s); None: none (fabrik_ros.controller_collision).
        self.slowdown: tuple[np.ndarray, np.ndarray] | None = None
        self.set_limits(limits)

    def set_limits(self, limits: MotionLimits) -> None:
        """Head into new limits from the next step on (see the class docstring)."""
        in_force = self.limits.max_acceleration if self._acceleration is None \
            else self._acceleration
        lower, upper = (self.limits.lower, self.limits.upper) if self._acceleration is None \
            else self._outer
        self._outer = (np.minimum(lower, limits.lower), np.maximum(upper, limits.upper))
        self.limits = limits
        # Without a command rate, velocity and acceleration are the controller's business.
        self._jump_limits = MotionLimits.create(limits.lower, limits.upper,
                                                max_step=limits.max_step)
        self._unguarded = bool(np.all(np.isinf(limits.max_step)))
        if self.position is not None:
            self._acceleration = np.maximum(in_force, limits.max_acceleration)
            # Holding: brake from here under the new limits (into a narrowed range).
            self._stop = stopping_point(self.position, self.velocity, limits, self.dt or 0.0)
        if self.goal is not None:
            self.goal = np.clip(self.goal, limits.lower, limits.upper)

    @classmethod
    def resumed(cls, before: MotionLimits, limits: MotionLimits, dt: float | None,
                position: np.ndarray, velocity: np.ndarray, reason: str) -> CommandStream:
        """
        Return a stream at `position` moving at `velocity` under `before`, holding.

        It brakes to a stop, heading into `limits` as after set_limits: a stream carried
        over to another joint list (a new model) without a jump.
        """
        stream = cls(before, dt)
        stream.position = np.asarray(position, dtype=float).copy()
        stream.velocity = np.asarray(velocity, dtype=float).copy()
        stream.hold_reason = reason
        stream.set_limits(limits)
        return stream

    @property
    def at_rest(self) -> bool:
        """Tell whether the command stands still and stays (no goal elsewhere)."""
        return self.position is None or (not np.any(self.velocity) and (
            self.goal is None or np.array_equal(self.goal, self.position)))

    def stalled(self) -> None:
        """Take the last command as reached and at rest: it was held for many periods."""
        self.velocity = np.zeros(self.limits.size)
        if self.position is not None and self.goal is None:
            self._stop = self.position.copy()

    def start(self, position: np.ndarray) -> None:
        """(Re)start at rest at `position` (e.g. measured), holding it, with no goal."""
        self.position = np.clip(np.asarray(position, dtype=float), self.limits.lower,
                                self.limits.upper)
        self.velocity = np.zeros(self.limits.size)
        self._stop = self.position.copy()
        self._acceleration = None
        self.goal = None
        self.hold_reason = ''

    def follow(self, goal: np.ndarray) -> None:
        """Head for `goal` (radians, clipped into the limits) from the next step on."""
        self.goal = np.clip(goal, self.limits.lower, self.limits.upper)
        self.hold_reason = ''

    def hold(self, reason: str) -> None:
        """Forget the goal and brake to a stop; `reason` says why (for diagnostics)."""
        if self.position is None or (self.goal is None and self.hold_reason):
            return
        self.goal = None
        self.hold_reason = reason
        self._stop = stopping_point(self.position, self.velocity, self.limits,
                                    self.dt or 0.0)

    @property
    def heading(self) -> np.ndarray | None:
        """Return where the next steps head: the goal, or where it holds (None unstarted)."""
        return self.goal if self.goal is not None else self._stop

    def take(self, position: np.ndarray, velocity: np.ndarray) -> None:
        """
        Go on from the command actually sent (a collision stop cut the step short).

        A hold brakes from there: its stop point moves with the command.
        """
        self.position, self.velocity = np.array(position, dtype=float), np.array(velocity)
        if self.goal is None:
            self._stop = stopping_point(self.position, self.velocity, self.limits,
                                        self.dt or 0.0)

    def step(self) -> np.ndarray:
        """Advance one command; return the new position (the stream must be started)."""
        target = self.goal if self.goal is not None else self._stop
        limits = self.limits if self._acceleration is None else self._limits_in_force()
        if self.slowdown is not None and self.dt is not None:  # reached at the acceleration
            scale, cap = self.slowdown
            top = np.where(scale > 0.0, limits.max_velocity * scale, 0.0)
            limits = replace(limits, max_velocity=np.minimum(top, cap))
        if self.dt is None and self._unguarded:
            self.position = target  # already within the limits: the jump is the command
        elif self.dt is None:
            jump = self._jump_limits if limits is self.limits else MotionLimits(
                limits.lower, limits.upper, self._jump_limits.max_velocity,
                self._jump_limits.max_acceleration, limits.max_step)
            self.position, _ = limit_step(self.position, np.zeros(self.limits.size), target,
                                          1.0, jump)
        else:
            self.position, self.velocity = limit_step(self.position, self.velocity, target,
                                                      self.dt, limits)
            if self.goal is None and self.slowdown is not None:
                # A slowdown may brake a hold harder than planned: its stop point moves
                # with the command (as after a collision stop), or the joint would speed up
                # again toward the old one.
                self._stop = stopping_point(self.position, self.velocity, self.limits,
                                            self.dt)
        return self.position

    def limits_in_force(self) -> MotionLimits:
        """Return the limits the next step moves under (see set_limits)."""
        return self.limits if self._acceleration is None else self._limits_in_force()

    def _limits_in_force(self) -> MotionLimits:
        """
        Return the limits of this step while new ones take over (after set_limits).

        Per joint, the acceleration in force falls to the new limit as soon as that still
        stops the joint within the new range, never rising above the one before; the
        position range in force spans the new range, the joint and where it stops at that
        acceleration. Once the new limits hold for every joint they are in force alone.
        """
        limits, position, velocity = self.limits, self.position, self.velocity
        dt = self.dt or 0.0
        with np.errstate(divide='ignore', invalid='ignore'):
            room = np.where(velocity > 0.0, limits.upper - position, position - limits.lower)
            room = room - np.abs(velocity) * dt / 2.0
            needed = np.where(velocity == 0.0, 0.0, np.where(
                room > 0.0, velocity * velocity / (2.0 * room), np.inf))
            acceleration = np.minimum(self._acceleration,
                                      np.maximum(limits.max_acceleration, needed))
            braking = np.where(np.isinf(acceleration), 0.0,
                               velocity * np.abs(velocity) / (2.0 * acceleration)
                               + velocity * dt / 2.0)
        # Braked otherwise (a jog's own braking) a stop may round past the widest range.
        stop = np.clip(position + braking, *self._outer)
        lower = np.minimum(limits.lower, np.minimum(position, stop))
        upper = np.maximum(limits.upper, np.maximum(position, stop))
        self._acceleration = acceleration
        if (np.array_equal(acceleration, limits.max_acceleration)
                and np.array_equal(lower, limits.lower) and np.array_equal(upper, limits.upper)):
            self._acceleration = None  # the new limits hold: from now on they alone apply
            return limits
        return MotionLimits(lower, upper, limits.max_velocity, acceleration, limits.max_step)

    def duration(self, previous: np.ndarray) -> float:
        """Return how long the last step takes: dt, or the limits' time from `previous`."""
        if self.dt is not None:
            return self.dt
        return time_to_reach(previous, self.position, self.limits)
