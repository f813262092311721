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
Velocity commands in the IK controller, without ROS: the latest source wins, never a jump.

`JogInput` is the controller's `jog` (fabrik_ros.controller, which hands itself in). A tool
twist or a joint jog takes over from pose targets: every target is forgotten and a
fabrik_ros.jog.Jogger starts from the command stream's position and velocity, so the
switch never jumps. While it jogs, each tick is the jogger's, within the limits the
stream has in force (a narrowed limit is reached within the old ones, as for targets, and
max_joint_step caps the speed at max_joint_step / command period), and the stream keeps
the jogger's position and velocity: a pose target solved later, a hold, disable, stale
feedback or a new model brake or head on from exactly there, through the stream. Jog
commands older than the jog timeout brake the arm to rest within its limits; once it is at
rest the jogging ends and the stream holds there.

Commands are refused, with a reason, like targets: while disabled or without fresh
feedback; also without a command rate (a velocity needs a period to integrate) and when
stamped beyond the jog timeout in the past or the future.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from fabrik_ros.controller_types import Update
from fabrik_ros.jog import Jogger, JogSettings, JogStatus
from fabrik_ros.motion import braking_speed, MotionLimits
import numpy as np

if TYPE_CHECKING:  # the controller hands itself in: no import circle at run time
    from fabrik_ros.controller import IkController

# What a twist's frame may be: 'base', 'tool' (the effector's own) or the (3, 3) rotation
# from the twist's frame to the base frame.
Frame = str | np.ndarray


class JogInput:
    """The controller's velocity commands: twists and joint jogs; see the module docstring."""

    def __init__(self, controller: IkController,
                 settings: JogSettings = JogSettings()) -> None:
        """Start without jogging; its command period is the stream's, not the settings'."""
        self._controller = controller
        self.settings = settings
        self.jogger: Jogger | None = None  # this jogging's, built when it starts
        self.status = JogStatus.NO_WARNING  # of the last tick
        self.source = ''  # 'twist' or 'joint' while jogging, '' otherwise
        self.refused = 0
        self._ceiling: np.ndarray | None = None  # rad/s^2 per joint, see _limits

    @property
    def active(self) -> bool:
        """Tell whether jogging drives the command stream."""
        return self.jogger is not None

    def configure(self, settings: JogSettings) -> None:
        """Use new jog settings from the next jogging on; the current one ends (braking)."""
        self.end()
        self.settings = settings

    def on_twist(self, effector: int, twist: np.ndarray, now: float, frame: Frame = 'tool',
                 age: float | None = None) -> Update:
        """
        Take a tool twist (vx, vy, vz m/s, wx, wy, wz rad/s) for `effector` (index).

        frame: 'base', 'tool' or the rotation from the twist's frame to the base frame.
        age: seconds since the command's stamp, None when unstamped.
        """
        reason = self._refusal(now, age)
        chain = self._controller.settings.chain
        if not reason and not 0 <= effector < len(chain.effectors):
            reason = f'unknown effector {effector}; the chain has {len(chain.effectors)}'
        if reason:
            return self._refuse(reason)
        jogger = self._current_jogger()
        try:
            jogger.on_twist(twist, now, frame, chain.effector_names[effector])
        except ValueError as error:
            return self._refuse(str(error))
        self._begin(jogger, 'twist')
        return Update()

    def on_joint_jog(self, velocities: Mapping[str, float], now: float,
                     age: float | None = None) -> Update:
        """Take joint velocities (name -> rad/s or m/s); joints not named are held."""
        reason = self._refusal(now, age)
        if reason:
            return self._refuse(reason)
        jogger = self._current_jogger()
        try:
            jogger.on_joint_jog(velocities, now)
        except ValueError as error:
            return self._refuse(str(error))
        self._begin(jogger, 'joint')
        return Update()

    def step(self, now: float) -> np.ndarray:
        """Advance the jogging one command period; return the command (the stream's too)."""
        stream, jogger = self._controller.stream, self.jogger
        if not (np.array_equal(stream.position, jogger.position)
                and np.array_equal(stream.velocity, jogger.velocity)):
            jogger.reset(stream.position, stream.velocity)  # a stalled tick stood still
        jogger.set_limits(self._limits())
        command = jogger.tick(now, stream.slowdown)
        stream.position, stream.velocity = command.position, command.velocity
        self.status = command.status
        if jogger.at_rest and not self._fresh(now):
            self.end()  # at rest after the last command: the stream holds here
        return stream.position

    def end(self) -> None:
        """Stop jogging: the stream brakes from the jogger's state and holds (no jump)."""
        if self.jogger is None:
            return
        self.jogger = None
        self.source = ''
        self.status = JogStatus.NO_WARNING
        self._ceiling = None
        stream = self._controller.stream
        if stream.position is not None and stream.goal is None:
            stream.hold('')  # the stop point from the position and speed it has now

    # ---- internals ----------------------------------------------------------------

    def _refusal(self, now: float, age: float | None) -> str:
        controller = self._controller
        timeout = self.settings.timeout
        if controller.stream.dt is None:
            return 'jogging needs a command rate (command_rate > 0)'
        if not controller.enabled or controller._disabling:
            return 'the node is disabled (call ~/enable)'
        if controller.feedback_stale(now) or controller.stream.position is None:
            return f'no fresh feedback ({controller.feedback_age(now)})'
        if age is not None and not abs(age) <= timeout:
            return (f'jog command stamped {abs(age):.3f} s in the '
                    f'{"past" if age > 0 else "future"}, beyond jog_timeout {timeout} s')
        return ''

    def _refuse(self, reason: str) -> Update:
        self.refused += 1
        return self._controller.refuse('jog', reason)

    def _current_jogger(self) -> Jogger:
        """Return the jogging's jogger, or a new one at the stream's state (not yet used)."""
        if self.jogger is not None:
            return self.jogger
        stream = self._controller.stream
        settings = replace(self.settings, command_period=stream.dt)
        jogger = Jogger(self._controller.settings.chain, self._limits(), stream.position,
                        settings)
        jogger.reset(stream.position, stream.velocity)
        return jogger

    def _begin(self, jogger: Jogger, source: str) -> None:
        """Jog with `jogger` (a command was taken): pose targets lose, none is solved again."""
        self.source = source
        controller = self._controller
        if jogger is self.jogger and controller.solve_due is None:
            return
        self.jogger = None  # taken over below, not ended: _forget must not brake it
        controller._forget()  # targets of a window that came while jogging lose too
        controller.stream.goal, controller.stream.hold_reason = None, ''
        self.jogger = jogger

    def _limits(self) -> MotionLimits:
        """
        Return the limits the jogger moves under this tick, max_joint_step as a velocity.

        A joint that can still stop within the position range (set_limits: the new one)
        at the acceleration in force gets that range; where it needs the acceleration that
        was in force since it last stood still (a narrowed limit is reached within the old
        ones), it gets that. One that cannot, moving toward a narrowed bound it is too fast
        for, brakes within the range the stream has in force (spanning where it stops), as
        the stream would.
        """
        stream = self._controller.stream
        target, in_force = stream.limits, stream.limits_in_force()
        dt, position, velocity = stream.dt, stream.position, stream.velocity
        acceleration = in_force.max_acceleration
        # The acceleration in force since each joint last stood still: the stream lowers its
        # own toward a narrowed limit by a continuous estimate, which a joint braking tick
        # by tick may still need to exceed.
        if self.jogger is None or self._ceiling is None \
                or self._ceiling.shape != acceleration.shape:
            self._ceiling = acceleration  # a jogging starts from the stream's
        self._ceiling = np.where(
            velocity == 0.0, acceleration, np.maximum(self._ceiling, acceleration))
        room = np.where(velocity > 0.0, target.upper - position, position - target.lower)
        room = np.where(np.isfinite(room), room, 1e300)  # a continuous joint: never near
        speed = np.abs(velocity)

        def stopping(acceleration: np.ndarray) -> np.ndarray:
            # Slack for rounding: a joint that landed on its bound last tick stops there.
            return (velocity == 0.0) | ((room >= 0.0) & (
                speed - acceleration * dt * (1.0 + 1e-9)
                <= braking_speed(np.maximum(room, 0.0), acceleration, dt)))
        acceleration = np.where(stopping(acceleration), acceleration, self._ceiling)
        stops = stopping(acceleration)
        braking = acceleration * dt
        inside = (position >= target.lower) & (position <= target.upper) & stops
        top = np.minimum(target.max_velocity, in_force.max_step / dt)
        return MotionLimits(np.where(inside, target.lower, in_force.lower),
                            np.where(inside, target.upper, in_force.upper),
                            np.where(stops, top, np.maximum(speed - braking, 0.0)),
                            acceleration, in_force.max_step)

    def _fresh(self, now: float) -> bool:
        """Tell whether the jogger still has a command within the timeout."""
        return self.jogger is not None and self.jogger.has_fresh_command(now)
