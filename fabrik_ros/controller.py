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
  solved again.

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
from dataclasses import dataclass, field
import math
import time

from fabrik_ros.chain import rotation_from_quaternion
from fabrik_ros.command import (CommandStream, joint_order, measured_positions,
                                STALLED_PERIODS)
from fabrik_ros.controller_status import angle_text, SolveStats, Status, status_of
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.model_change import carried_state, same_kinematics, same_model
from fabrik_ros.motion import MotionLimits
from fabrik_ros.settings import Settings
import numpy as np

__all__ = ['Command', 'IkController', 'Settings', 'Status', 'Target', 'Update']


@dataclass(frozen=True)
class Target:
    """One effector's target in the base frame."""

    position: np.ndarray  # (3,) metres
    orientation: np.ndarray | None = None  # (4,) unit quaternion x, y, z, w; None: position


@dataclass(frozen=True)
class Command:
    """One joint command to send, in chain joint order."""

    position: np.ndarray  # radians
    velocity: np.ndarray | None  # rad/s of this step with a command rate, else None
    previous: np.ndarray  # the command before, radians (see IkController.duration)


@dataclass
class Update:
    """What an event asks the node to do: send a command, report refusals and warnings."""

    command: Command | None = None
    refusal: tuple[str, str] | None = None  # (kind, reason) of a refused input
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)


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
        self._pinned: IkSolver | None = None  # a free body's joints where it is: _follow_body
        # A free body's last solved targets and orientations, which its joints keep while it
        # slides (_follow_body); None once they are forgotten.
        self._solved: tuple[np.ndarray, np.ndarray | None] | None = None
        self.stats = SolveStats()
        self.refused = 0
        self.last_refusal = ''
        # The free root's position in the odometry frame, metres (zero while pinned): where
        # it is, where the last solve sent it, and when it last moved (seconds).
        self.body = np.zeros(3)
        self.body_goal = np.zeros(3)
        self._body_time = now
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

    def change_model(self, settings: Settings, now: float,
                     command_joints: Sequence[str] = ()) -> Update:
        """
        Take a new model (robot_description published again) without a jump.

        The same robot (same kinematics and limits) changes nothing. The same kinematics
        with other limits is a limit change (configure): the targets stay. Otherwise
        every target is forgotten and the command brakes to a stop from where it is: each
        joint of both models keeps its command and speed, within the old limits until the
        new ones hold; a new joint starts at rest where it is measured (open loop: the
        neutral pose). Closed loop, without a measurement of every new joint the stream
        waits for one (as at start-up). ValueError (nothing changes) for a bad joint order.
        """
        old, chain = self.settings.chain, settings.chain
        order = joint_order(chain.joint_names, list(command_joints) or chain.joint_names)
        if same_model(old, chain) and np.array_equal(order, self.command_order):
            return Update()
        if same_kinematics(old, chain):
            self.configure(settings, command_joints)
            return Update()
        self._forget()
        self.targets = [None] * len(chain.effectors)
        self.command_order, self.settings = order, settings
        self._solver = self._pinned = None
        self.measured = self._measured_of(chain.joint_names)
        if self.measured is None:
            self._measured_time = -math.inf
        self.stream = self._carried_stream(old.joint_names, settings)
        return Update(warnings=[('model', 'new robot model: targets forgotten, braking to a '
                                 'stop')])

    def _carried_stream(self, old_names: Sequence[str], settings: Settings) -> CommandStream:
        """Return the command stream of the new joints, carried over from the current one."""
        names, motion, stream = settings.chain.joint_names, settings.motion, self.stream
        dt = stream.dt
        if stream.position is None or (self.feedback and self.measured is None):
            fresh = CommandStream(motion, dt)
            if not self.feedback:
                fresh.start(settings.chain.neutral())
            return fresh
        start = self.measured if self.feedback else np.clip(
            settings.chain.neutral(), motion.lower, motion.upper)
        before = stream.limits_in_force()
        vectors = {name: carried_state(old_names, names, getattr(before, name),
                                       getattr(motion, name))
                   for name in ('lower', 'upper', 'max_velocity', 'max_acceleration',
                                'max_step')}
        return CommandStream.resumed(
            MotionLimits(**vectors), motion, dt,
            carried_state(old_names, names, stream.position, start),
            carried_state(old_names, names, stream.velocity, np.zeros(len(names))),
            'new robot model')

    def _measured_of(self, joints: Sequence[str]) -> np.ndarray | None:
        """Return the last measurement of `joints` if it has them all, else None."""
        if self._feedback is None:
            return None
        try:
            return measured_positions(*self._feedback, joints)
        except ValueError:
            return None

    # ---- events -----------------------------------------------------------------------

    def on_target(self, effector: int | None, target: Target, now: float,
                  age: float | None = None) -> Update:
        """
        Take a target for `effector` (None: the one nearest to it) and solve when due.

        `age`: seconds since the target's stamp, None when unstamped. With a target_timeout,
        a target older than it, or stamped further than it in the future, is refused.
        """
        reason = self._why_not_moving(now, age)
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
        return self._solve(now)

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
        return update if update is not None else self._solve(now)

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
        if self._move_body(now) and self._solved is not None:
            self._follow_body()
        stream = self.stream
        if stream.position is not None:
            if stream.dt is not None and now - self._tick_time > STALLED_PERIODS * stream.dt:
                stream.stalled()  # the arm stood at the last command meanwhile
            update.command = self._step()
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

    def target_positions(self) -> np.ndarray:
        """Return the (m, 3) targets (base or odometry frame), NaN rows for none."""
        return np.array([target.position if target is not None else [np.nan] * 3
                         for target in self.targets], dtype=float)

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

    def target_orientations(self) -> np.ndarray:
        """Return the (m, 4) target quaternions, NaN rows for effectors without one."""
        return np.array([target.orientation if target is not None
                         and target.orientation is not None else [np.nan] * 4
                         for target in self.targets], dtype=float)

    def status(self, now: float, period: float) -> Status:
        """Return the diagnostics of the last `period` seconds (and start a new window)."""
        return status_of(self, now, period)

    # ---- internals --------------------------------------------------------------------

    def _why_not_moving(self, now: float, age: float | None) -> str:
        """Return why a target cannot be taken now ('' if it can)."""
        if not self.enabled or self._disabling:
            return 'the node is disabled (call ~/enable)'
        if self.feedback_stale(now):
            return f'no fresh feedback ({self.feedback_age(now)})'
        timeout = self.settings.target_timeout
        if timeout > 0.0 and age is not None:
            if age > timeout:
                return f'target stamped {age:.3f} s ago, older than target_timeout {timeout} s'
            if -age > timeout:
                return (f'target stamped {-age:.3f} s in the future, further than '
                        f'target_timeout {timeout} s (clocks out of sync?)')
        return ''

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
        self.targets = [None] * len(self.targets)
        self._window_start = None
        self._solved = None
        self.result = None  # what it reached is not in force any more (diagnostics)
        self.body_goal = self.body.copy()

    def _move_body(self, now: float) -> bool:
        """
        Move the body toward its goal, in a straight line at most max_body_velocity.

        Return whether it moved.
        """
        elapsed, self._body_time = max(now - self._body_time, 0.0), now
        if self._disabling or not self.enabled:  # no command moves the joints: nor the body
            self.body_goal = self.body.copy()
            return False
        offset = self.body_goal - self.body
        distance = float(np.linalg.norm(offset))
        if distance == 0.0:
            return False
        reach = self.settings.max_body_velocity * elapsed
        self.body = self.body_goal.copy() if distance <= reach \
            else self.body + offset * (reach / distance)
        return reach > 0.0

    def _forget_and_hold(self, reason: str) -> Update:
        """Forget the targets and brake to a stop; warn once, as the hold begins."""
        self._forget()
        starts = self.stream.goal is not None or not self.stream.hold_reason
        self.stream.hold(reason)
        return Update(warnings=[('holding', f'holding: {reason}')] if starts else [])

    def _solve(self, now: float) -> Update:
        """Solve the current targets once and head for the solution (body: from now)."""
        self._window_start = None
        settings, stream = self.settings, self.stream
        if self._solver is None:
            self._solver = settings.solver()
        targets = self.target_positions()
        orientations = None  # position-only: the solve exactly as without orientations
        if settings.orientation_mode != 'position' and any(
                target is not None and target.orientation is not None
                for target in self.targets):
            orientations = self.target_orientations()
            if len(orientations) == 1:
                orientations = orientations[0]
        # Closed loop: start from where the arm is when it is measured; the body from
        # where it is (its pose is not measured) or, open loop, where it is heading.
        seed = self.measured if self.feedback else stream.goal
        if self.free:  # up to now toward the goal in force: the new goal starts from here
            self._move_body(now)
        origin = self.body if self.feedback or seed is None else self.body_goal
        relative = targets - origin  # the solver's base starts at its origin
        start = time.perf_counter()
        try:
            result = self._solver.solve(relative[0] if len(targets) == 1 else relative,
                                        seed=stream.position if seed is None else seed,
                                        orientation=orientations)
        except ValueError as error:
            self._forget()  # refused targets must not block the next ones
            return self.refuse('solver', str(error))
        seconds = time.perf_counter() - start
        if not (np.isfinite(result.q).all() and np.isfinite(result.base_position).all()):
            self._forget()
            return self.refuse('solver', f'solver returned non-finite joint angles '
                               f'{result.q.tolist()} or base {result.base_position.tolist()}')
        self.stats.record(seconds)
        self.result = result
        self.solved_targets = targets
        stream.follow(result.q)  # clipped into the limits
        if self.free:
            self.body_goal = origin + result.base_position
            self._solved = (targets, orientations)
            if stream.dt is None:  # a command per solution: the body moves with it
                self._move_body(now)
            self._follow_body()
        update = Update()
        if stream.dt is None:
            update.command = self._step()
        if not result.reached:
            update.warnings.append(('reach', 'target out of reach: stretched toward it, '
                                    f'{result.error:.4f} m remaining' + angle_text(result)))
        return update

    def _follow_body(self) -> None:
        """
        Command the joints that keep the solved targets where the body is now (free root).

        A solve sends the body to body_goal with the joints for it there, but the body takes
        its time (max_body_velocity): until it arrives, the joints come from a pinned solve
        of the same targets from where it is, so feet stay on their targets (as far as they
        reach from there) while it slides instead of being carried along with it. At the
        goal, the solve's own joints.
        """
        if np.array_equal(self.body, self.body_goal):
            self.stream.follow(self.result.q)
            return
        targets, orientations = self._solved
        relative = targets - self.body
        if self._pinned is None:  # from the last joints on, no other branch: no restarts
            self._pinned = self.settings.solver(root='pinned', max_restarts=0)
        seed = self.stream.goal if self.stream.goal is not None else self.result.q
        # At most half a command period, so a body sliding at every tick leaves the node its
        # time (a leg out of reach from where the body is takes a stretched solve).
        budgets = [b for b in (self.settings.solve_timeout, (self.stream.dt or 0.0) / 2.0) if b]
        try:
            result = self._pinned.solve(relative[0] if len(targets) == 1 else relative,
                                        seed=seed, orientation=orientations,
                                        timeout=min(budgets, default=None))
        except ValueError:  # the free solve's joints stay
            return
        if np.isfinite(result.q).all():
            self.stream.follow(result.q)

    def _step(self) -> Command | None:
        """Advance the command stream one step; None while disabled (nothing is sent)."""
        if not self.enabled:
            return None
        stream = self.stream
        previous = stream.position
        position = stream.step()
        command = Command(position, None if stream.dt is None else stream.velocity, previous)
        if self._disabling and not np.any(stream.velocity):
            self.enabled = self._disabling = False  # at rest: from now on, silence
        return command
