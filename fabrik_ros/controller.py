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
The IK node's brain without ROS: targets in, joint commands out, safely.

`IkController` owns what the node decides: the targets of each effector, the settings,
enable/disable/hold, the feedback and target watchdogs, the target window of a tree and
the command stream. Time is an argument (seconds of one monotonic clock), so tests drive
it event by event, in microseconds, and the ROS node only maps topics, services,
parameters and timers onto these calls.

The safety contract (README, "Safety contract"; proven in test/test_controller.py):

- every command lies within the position limits in force;
- consecutive commands (with a command rate) stay within the velocity and acceleration
  limits in force; a limit that narrows is reached within the old ones, never jumped to;
- when feedback goes stale the command brakes to a stop and takes no target; when it
  comes back the command restarts where the arm is measured;
- a target forgotten (hold, disable, stale feedback or target, a new chain) is never
  solved again;
- velocity commands (`jog`: tool twists, joint jogs; controller_jog) take over from the
  commanded position and velocity and hand back the same way, so no source switch jumps;
  once they go stale the arm brakes to rest within the limits.

With a free root (`Settings.root == 'free'`) the base slides toward the targets too. The
controller then keeps the body pose, the base's position in the odometry frame: targets
are in that frame, the solver's base displacement sets the body's goal, and the body heads
there in a straight line at most `max_body_velocity` m/s, moving whenever a command goes
out (each tick, and each solution without a command rate). Until it arrives, the joints
keep the targets from where it is (a pinned solve each time it moves), so feet stay on
theirs instead of riding with it. The body pose is the node's estimate of where the base
goes (published as TF), not a command to hardware.
"""

from __future__ import annotations

from collections.abc import Sequence
import math

from fabrik_ros.chain import rotation_from_quaternion
from fabrik_ros.command import CommandStream, joint_order, measured_positions, STALLED_PERIODS
from fabrik_ros.controller_collision import guarded_step, StreamCollision
from fabrik_ros.controller_jog import JogInput
from fabrik_ros.controller_model import change_model
from fabrik_ros.controller_solve import follow_body, move_body, solve, target_refusal
from fabrik_ros.controller_status import SolveStats, Status, status_of
from fabrik_ros.controller_types import Command, Target, Update
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.settings import Settings
import numpy as np

__all__ = ['Command', 'IkController', 'Settings', 'Status', 'Target', 'Update']


class IkController:
    """Targets in, joint commands out, within the limits; see the module docstring."""

    def __init__(self, settings: Settings, now: float, *, command_period: float | None,
                 feedback: bool, enabled: bool = True,
                 command_joints: Sequence[str] = ()) -> None:
        """
        Start for one chain (a new chain gets a new controller).

        command_period: seconds between streamed commands (tick), None for a command per
        solution. feedback: measured joint states are expected (on_feedback); commands
        then start where the arm is measured, else at the chain's neutral pose.
        command_joints: joint order of array commands; empty: chain order.
        """
        chain = settings.chain
        self.settings = settings
        self.stream = CommandStream(settings.motion, command_period)
        self.feedback = feedback
        self.enabled = enabled
        self.command_order = joint_order(chain.joint_names,
                                         list(command_joints) or chain.joint_names)
        self._disabling = False  # disabled, still braking to a stop
        self.targets: list[Target | None] = [None] * len(chain.effectors)
        self._target_time = -math.inf  # of the newest target
        self._window_start: float | None = None  # first unsolved target of a window
        self.measured: np.ndarray | None = None  # radians
        self._feedback: tuple[Sequence[str], Sequence[float]] | None = None  # last taken
        self._tick_time = now
        self._measured_time = -math.inf
        self.result: IkResult | None = None
        self.solved_targets: np.ndarray | None = None  # (m, 3) of the last solve, NaN: none
        self._solver: IkSolver | None = None  # built on the next solve after a change
        self.obstacles: tuple = ()  # solves keep clear of them (pinned root: set_obstacles)
        self.obstacle_names: tuple[str, ...] = ()  # how messages name them ('' : by index)
        self._pinned: IkSolver | None = None  # a free body's joints where it is: follow_body
        # A free body's last solved targets and orientations, which its joints keep while it
        # slides (controller_solve.follow_body); None once they are forgotten.
        self._solved: tuple[np.ndarray, np.ndarray | None] | None = None
        self.stats = SolveStats()
        self.refused = 0
        self.last_refusal = ''
        # The free root's position in the odometry frame, metres (zero while pinned): where
        # it is, where the last solve sent it, and when it last moved (seconds).
        self.body = np.zeros(3)
        self.body_goal = np.zeros(3)
        self._body_time = now
        self.jog = JogInput(self)  # twists and joint jogs: controller_jog
        self.collision = StreamCollision()  # the stream's collision check: controller_collision
        if not feedback:
            self.stream.start(chain.neutral())

    # ---- settings -------------------------------------------------------------------

    def configure(self, settings: Settings, command_joints: Sequence[str] = ()) -> None:
        """
        Use new settings (same model); limits take force as CommandStream says.

        ValueError for a joint order that is no order of the chain's joints, or that changes
        while the command moves: each slot of an array command drives one joint, so a new
        order waits until the arm is at rest (~/hold).
        """
        chain = settings.chain
        order = joint_order(chain.joint_names, list(command_joints) or chain.joint_names)
        if not np.array_equal(order, self.command_order) and not self.stream.at_rest:
            raise ValueError('command_joints cannot change while the arm moves (each slot of '
                             '~/commands drives one joint): call ~/hold, then set it at rest')
        self.command_order = order
        self.settings = settings
        self._solver = self._pinned = None
        self.stream.set_limits(settings.motion)

    def set_obstacles(self, obstacles: Sequence[object], names: Sequence[str] = ()) -> None:
        """
        Keep the next solves clear of obstacles (Box, Sphere, Cylinder; base frame).

        names: how messages and the status name them, in order (the scene's names); those
        left out are named by kind and place ('obstacle 2 (box)').
        """
        self.obstacles, self._solver = tuple(obstacles), None
        self.obstacle_names = tuple(names)[:len(self.obstacles)]

    def change_model(self, settings: Settings, now: float,
                     command_joints: Sequence[str] = ()) -> Update:
        """Take a new model (robot_description published again): controller_model's rules."""
        return change_model(self, settings, now, command_joints)

    # ---- events -----------------------------------------------------------------------

    def on_target(self, effector: int | None, target: Target, now: float,
                  age: float | None = None) -> Update:
        """
        Take a target for `effector` (None: the one nearest to it) and solve when due.

        `age`: seconds since the target's stamp, None when unstamped. With a target_timeout,
        a target older than it, or stamped further than it in the future, is refused.
        """
        reason = target_refusal(self, now, age)
        if reason:
            return self.refuse('state', reason)
        if effector is None:
            effector = 0
            if len(self.targets) > 1:  # RViz tools on a tree: move the nearest effector
                tips = self.settings.chain.effector_positions(self.stream.position) \
                    + self.body
                effector = int(np.argmin(np.linalg.norm(tips - target.position, axis=1)))
        self.targets[effector] = target
        self._target_time = now
        if len(self.targets) > 1 and self.settings.target_window > 0.0:
            if self._window_start is None:
                self._window_start = now
            return Update()
        return solve(self, now)

    @property
    def solve_due(self) -> float | None:
        """Return when the pending window of targets is due to be solved, or None."""
        if self._window_start is None:
            return None
        return self._window_start + self.settings.target_window

    def solve_pending(self, now: float) -> Update:
        """Solve the targets of a window once, if the window is still pending."""
        if self._window_start is None:
            return Update()
        update = self._watchdogs(now)  # the node may have lost feedback in the window
        return update if update is not None else solve(self, now)

    def on_feedback(self, names: Sequence[str], positions: Sequence[float],
                    now: float, age: float | None = None) -> Update:
        """
        Take a measured joint state; after a gap (or at first) restart where it is.

        The command restarts at rest at the measured pose, every target forgotten: the arm
        may have been moved while nothing was measured. `age`: seconds since the state's
        stamp (None: unstamped, counts as new); one stamped further than feedback_timeout
        in the past or the future is ignored, as are repeated joints and positions that are
        not finite or absurd (command.MAX_MEASURED_POSITION).
        """
        timeout = self.settings.feedback_timeout
        try:
            if age is not None and not abs(age) <= timeout:
                raise ValueError(f'stamped {abs(age):.3f} s in the '
                                 f'{"past" if age > 0 else "future"}, beyond feedback_timeout '
                                 f'{timeout} s (clocks out of sync?)')
            measured = measured_positions(names, positions, self.settings.chain.joint_names)
        except ValueError as error:
            return Update(warnings=[('feedback', f'feedback ignored: {error}')])
        gap = self.feedback_stale(now)
        self._feedback = (names, positions)
        self.measured = measured
        self._measured_time = now
        if gap:
            self._forget()
            self.stream.start(measured)
        return Update()

    def tick(self, now: float) -> Update:
        """Check the watchdogs, move the body, return the next command or the held one."""
        update = Update() if self.stream.position is None else self._watchdogs(now) or Update()
        if move_body(self, now) and self._solved is not None:
            follow_body(self)
        stream = self.stream
        if stream.position is not None:
            if stream.dt is not None and now - self._tick_time > STALLED_PERIODS * stream.dt:
                stream.stalled()  # the arm stood at the last command meanwhile
            update.command = self._step(now)
        self._tick_time = now
        return update

    def _watchdogs(self, now: float) -> Update | None:
        """Hold, every target forgotten, on stale feedback or a stale target; else None."""
        timeout = self.settings.target_timeout
        if self.feedback_stale(now):
            return self._forget_and_hold(f'no fresh feedback ({self.feedback_age(now)})')
        if (timeout > 0.0 and now - self._target_time > timeout
                and (self.stream.goal is not None or any(self.targets))):
            return self._forget_and_hold(f'no target for {timeout} s (target_timeout)')
        return None

    def enable(self, now: float) -> tuple[bool, str]:
        """Start sending commands, from where the arm is (or was last commanded)."""
        if self.enabled:  # restarting the stream now would stop it without braking
            self._disabling = False
            return True, 'enabled (holding)'
        if self.feedback_stale(now):
            return False, f'cannot enable: no fresh feedback ({self.feedback_age(now)})'
        self._forget()
        self.stream.start(self.measured if self.feedback else self.stream.position)
        self.enabled = True
        return True, 'enabled'

    def disable(self, now: float) -> tuple[bool, str]:
        """Stop sending commands: at once when at rest, else after braking to a stop."""
        self._forget()
        if self.stream.position is None or self.stream.dt is None:
            self.enabled = False  # nothing moves between commands: silent at once
        elif self.enabled:
            self._disabling = True
            self.stream.hold('disabled (~/enable false)')
        return True, 'disabled: no commands are sent once the arm is at rest'

    def hold(self, now: float) -> tuple[bool, str]:
        """Brake to a stop and stay, every target forgotten, until the next target."""
        if self.stream.position is None:
            return False, 'nothing to hold: no command yet'
        self._forget()
        self.stream.hold('hold requested (~/hold)')
        return True, 'holding until the next target'

    # ---- what the node shows ----------------------------------------------------------

    def duration(self, command: Command) -> float:
        """Return how long a command takes, seconds: the period, or the limits' time."""
        return self.stream.duration(command.previous)

    @property
    def free(self) -> bool:
        """Tell whether the root is free: targets and the body are in the odometry frame."""
        return self.settings.root == 'free'

    def tool_frames(self) -> np.ndarray:
        """Return the (m, 4, 4) commanded tool frames (neutral before any command)."""
        chain, q = self.settings.chain, self.stream.position
        frames = chain.effector_poses(chain.neutral() if q is None else q)
        frames[:, :3, 3] += self.body
        return frames

    def target_frame(self, effector: int) -> np.ndarray:
        """Return effector's (4, 4) target frame; its commanded orientation if it has none."""
        target = self.targets[effector]
        frame = self.settings.chain.tip_pose(self.stream.position, effector)
        frame[:3, 3] = target.position
        if target.orientation is not None:
            frame[:3, :3] = rotation_from_quaternion(target.orientation)
        return frame

    def effector_of(self, target: Target) -> int | None:
        """Return the effector holding this very target (by identity), None if none."""
        return next((index for index, taken in enumerate(self.targets) if taken is target),
                    None)

    def status(self, now: float, period: float) -> Status:
        """Return the diagnostics of the last `period` seconds (and start a new window)."""
        return status_of(self, now, period)

    # ---- internals --------------------------------------------------------------------

    @property
    def solves(self) -> int:
        """Return how many solves there were."""
        return self.stats.solves

    def feedback_seconds(self, now: float) -> float:
        """Return the age of the last measurement, seconds (inf before any)."""
        return now - self._measured_time

    def feedback_stale(self, now: float) -> bool:
        """Tell whether feedback is expected but missing or older than feedback_timeout."""
        return self.feedback and now - self._measured_time > self.settings.feedback_timeout

    def feedback_age(self, now: float) -> str:
        """Say how old the last measurement is."""
        if self.measured is None:
            return 'nothing measured yet'
        return f'last measured {now - self._measured_time:.3f} s ago'

    def refuse(self, kind: str, reason: str) -> Update:
        """Count an input refused (by the controller or the node: a frame) of `kind`."""
        self.refused += 1
        self.last_refusal = reason
        return Update(refusal=(kind, reason))

    def _forget(self) -> None:
        """Forget every target, and a pending window: none may be solved again; stay."""
        self.jog.end()  # brakes through the stream from the jogger's state
        self.targets = [None] * len(self.targets)
        self._window_start = None
        self._solved = None
        self.result = None  # what it reached is not in force any more (diagnostics)
        self.body_goal = self.body.copy()

    def _forget_and_hold(self, reason: str) -> Update:
        """Forget the targets and brake to a stop; warn once, as the hold begins."""
        self._forget()
        starts = self.stream.goal is not None or not self.stream.hold_reason
        self.stream.hold(reason)
        return Update(warnings=[('holding', f'holding: {reason}')] if starts else [])

    def _step(self, now: float = -math.inf) -> Command | None:
        """Advance the command stream (or jogging) a step; None while disabled (none sent)."""
        if not self.enabled:
            return None
        stream = self.stream
        previous = stream.position
        position = guarded_step(self, now)  # jogging or the stream, collisions checked
        command = Command(position, None if stream.dt is None else stream.velocity, previous)
        if self._disabling and not np.any(stream.velocity):
            self.enabled = self._disabling = False  # at rest: from now on, silence
        return command
