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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
import math
import time

from fabrik_ros.chain import Chain
from fabrik_ros.command import CommandStream, joint_order, measured_positions
from fabrik_ros.config import LIMIT_FIELDS, LIMITS_PREFIX, with_limit_overrides
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.motion import MotionLimits
import numpy as np

# Names of the parameters Settings are made from (the node declares them).
SETTING_NAMES = ('tolerance', 'max_iterations', 'max_restarts', 'max_joint_step',
                 'target_timeout', 'feedback_timeout', 'target_window',
                 'default_max_velocity', 'default_max_acceleration')


@dataclass(frozen=True)
class Target:
    """One effector's target in the base frame."""

    position: np.ndarray  # (3,) metres
    # (4,) unit quaternion x, y, z, w, or None for position only. Carried for the
    # orientation-aware solve; the controller solves positions only for now.
    orientation: np.ndarray | None = None


@dataclass(frozen=True)
class Settings:
    """What solves and commands are made from; replaced whole when a parameter changes."""

    chain: Chain  # the model with the joint limit overrides applied
    motion: MotionLimits
    tolerance: float = 1e-4  # metres
    max_iterations: int = 100
    max_restarts: int = 24
    target_timeout: float = 0.0  # seconds, 0: never
    feedback_timeout: float = 0.5  # seconds
    target_window: float = 0.0  # seconds, trees only

    @classmethod
    def from_parameters(cls, model: Chain, values: Mapping[str, object]) -> Settings:
        """
        Return the settings of the flat node parameters `values` for the chain `model`.

        `values` holds SETTING_NAMES and any joint_limits.<joint>.<field> overrides
        (position and velocity may only narrow the model). ValueError names what is
        unusable: an unknown joint or field, a widening, a bad acceleration.
        """
        limits = {name: value for name, value in values.items()
                  if name.startswith(LIMITS_PREFIX)}
        chain = with_limit_overrides(model, limits)
        velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity,
                            values['default_max_velocity'])
        acceleration = np.array([
            float(limits.get(f'{LIMITS_PREFIX}{joint}.max_acceleration',
                             values['default_max_acceleration']))
            for joint in chain.joint_names])
        for joint, number in zip(chain.joint_names, acceleration):
            if not 0.0 < number < math.inf:  # inf would switch the acceleration limit off
                raise ValueError(f'{LIMITS_PREFIX}{joint}.max_acceleration must be a finite '
                                 f'positive number, rad/s^2, got {number}')
        return cls(chain=chain,
                   motion=MotionLimits.create(chain.lower, chain.upper, velocity,
                                              acceleration, values['max_joint_step']),
                   tolerance=float(values['tolerance']),
                   max_iterations=int(values['max_iterations']),
                   max_restarts=int(values['max_restarts']),
                   target_timeout=float(values['target_timeout']),
                   feedback_timeout=float(values['feedback_timeout']),
                   target_window=float(values['target_window']))


def model_limits(model: Chain, default_max_velocity: float,
                 default_max_acceleration: float) -> dict[str, float]:
    """Return every joint_limits.<joint>.<field> of the model before any override."""
    columns = {'min_position': model.lower, 'max_position': model.upper,
               'max_velocity': np.where(np.isfinite(model.max_velocity), model.max_velocity,
                                        default_max_velocity),
               'max_acceleration': np.full(model.dof, default_max_acceleration)}
    return {f'{LIMITS_PREFIX}{joint}.{name}': float(columns[name][index])
            for index, joint in enumerate(model.joint_names) for name in LIMIT_FIELDS}


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


@dataclass(frozen=True)
class Status:
    """The controller's state for diagnostics."""

    level: str  # 'OK' or 'WARN'
    message: str
    values: dict[str, object]


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
        self._measured_time = -math.inf
        self.result: IkResult | None = None
        self.solved_targets: np.ndarray | None = None  # (m, 3) of the last solve, NaN: none
        self._solver: IkSolver | None = None  # built on the next solve after a change
        self.solves = 0
        self._window_solves = 0  # since the last status()
        self._solve_seconds = 0.0  # of the last solve
        self._window_max_seconds = 0.0
        self.refused = 0
        self.last_refusal = ''
        if not feedback:
            self.stream.start(chain.neutral())

    # ---- settings -------------------------------------------------------------------

    def configure(self, settings: Settings, command_joints: Sequence[str] = ()) -> None:
        """Use new settings (same model); limits take force as CommandStream says."""
        chain = settings.chain
        self.command_order = joint_order(chain.joint_names,
                                         list(command_joints) or chain.joint_names)
        self.settings = settings
        self._solver = None
        self.stream.set_limits(settings.motion)

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
                tips = self.settings.chain.effector_positions(self.stream.position)
                effector = int(np.argmin(np.linalg.norm(tips - target.position, axis=1)))
        self.targets[effector] = target
        self._target_time = now
        if len(self.targets) > 1 and self.settings.target_window > 0.0:
            if self._window_start is None:
                self._window_start = now
            return Update()
        return self._solve()

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
        return update if update is not None else self._solve()

    def on_feedback(self, names: Sequence[str], positions: Sequence[float],
                    now: float) -> Update:
        """
        Take a measured joint state; after a gap (or at first) restart where it is.

        The command restarts at rest at the measured pose, every target forgotten: the arm
        may have been moved while nothing was measured.
        """
        try:
            measured = measured_positions(names, positions, self.settings.chain.joint_names)
        except ValueError as error:
            return Update(warnings=[('feedback', f'feedback ignored: {error}')])
        gap = self._feedback_stale(now)
        self.measured = measured
        self._measured_time = now
        if gap:
            self._forget()
            self.stream.start(measured)
        return Update()

    def tick(self, now: float) -> Update:
        """Check the watchdogs, then return the next command (stream) or the held one."""
        if self.stream.position is None:
            return Update()
        update = self._watchdogs(now) or Update()
        update.command = self._step()
        return update

    def _watchdogs(self, now: float) -> Update | None:
        """Hold, every target forgotten, on stale feedback or a stale target; else None."""
        timeout = self.settings.target_timeout
        if self._feedback_stale(now):
            return self._forget_and_hold(f'no fresh feedback ({self._feedback_age(now)})')
        if (timeout > 0.0 and now - self._target_time > timeout
                and (self.stream.goal is not None or any(self.targets))):
            return self._forget_and_hold(f'no target for {timeout} s (target_timeout)')
        return None

    def enable(self, now: float) -> tuple[bool, str]:
        """Start sending commands, from where the arm is (or was last commanded)."""
        if self.enabled:  # restarting the stream now would stop it without braking
            self._disabling = False
            return True, 'enabled (holding)'
        if self._feedback_stale(now):
            return False, f'cannot enable: no fresh feedback ({self._feedback_age(now)})'
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

    def target_positions(self) -> np.ndarray:
        """Return the (m, 3) targets in the base frame, NaN rows for effectors without."""
        return np.array([target.position if target is not None else [np.nan] * 3
                         for target in self.targets], dtype=float)

    def status(self, now: float, period: float) -> Status:
        """Return the diagnostics of the last `period` seconds (and start a new window)."""
        result = self.result
        values: dict[str, object] = {
            'enabled': self.enabled, 'targets_refused': self.refused,
            'last_refusal': self.last_refusal,
            'solve_rate_hz': f'{self._window_solves / period:.1f}'}
        holding = self.stream.hold_reason
        if self._feedback_stale(now):
            level, message = 'WARN', f'holding: no fresh feedback ({self._feedback_age(now)})'
        elif not self.enabled:
            level, message = 'OK', 'disabled: no commands are sent'
        elif holding:
            level, message = 'WARN', f'holding: {holding}'
        elif result is None:
            level, message = 'OK', 'waiting for a target'
        else:
            level = 'OK' if result.reached else 'WARN'
            message = (f'{"target reached" if result.reached else "target out of reach"}, '
                       f'{result.error:.4f} m from it')
        if result is not None:  # all of the last solve, whenever it was
            values.update({
                'reached': result.reached, 'error_m': f'{result.error:.6f}',
                'iterations': result.iterations, 'restarts': result.restarts,
                'solve_time_ms': f'{1e3 * self._solve_seconds:.3f}',
                'solve_time_max_ms': f'{1e3 * self._window_max_seconds:.3f}'})
        if self.feedback:
            values['feedback_age_s'] = f'{now - self._measured_time:.3f}'
        values['tolerance_m'] = self.settings.tolerance
        values['max_iterations'] = self.settings.max_iterations
        self._window_solves = 0
        self._window_max_seconds = self._solve_seconds if result is not None else 0.0
        return Status(level, message, values)

    # ---- internals --------------------------------------------------------------------

    def _why_not_moving(self, now: float, age: float | None) -> str:
        """Return why a target cannot be taken now ('' if it can)."""
        if not self.enabled or self._disabling:
            return 'the node is disabled (call ~/enable)'
        if self._feedback_stale(now):
            return f'no fresh feedback ({self._feedback_age(now)})'
        timeout = self.settings.target_timeout
        if timeout > 0.0 and age is not None:
            if age > timeout:
                return f'target stamped {age:.3f} s ago, older than target_timeout {timeout} s'
            if -age > timeout:
                return (f'target stamped {-age:.3f} s in the future, further than '
                        f'target_timeout {timeout} s (clocks out of sync?)')
        return ''

    def _feedback_stale(self, now: float) -> bool:
        """Tell whether feedback is expected but missing or older than feedback_timeout."""
        return self.feedback and now - self._measured_time > self.settings.feedback_timeout

    def _feedback_age(self, now: float) -> str:
        if self.measured is None:
            return 'nothing measured yet'
        return f'last measured {now - self._measured_time:.3f} s ago'

    def refuse(self, kind: str, reason: str) -> Update:
        """Count an input refused (by the controller or the node: a frame) of `kind`."""
        self.refused += 1
        self.last_refusal = reason
        return Update(refusal=(kind, reason))

    def _forget(self) -> None:
        """Forget every target, and a pending window: none may be solved again."""
        self.targets = [None] * len(self.targets)
        self._window_start = None

    def _forget_and_hold(self, reason: str) -> Update:
        """Forget the targets and brake to a stop; warn once, as the hold begins."""
        self._forget()
        starts = self.stream.goal is not None or not self.stream.hold_reason
        self.stream.hold(reason)
        return Update(warnings=[('holding', f'holding: {reason}')] if starts else [])

    def _solve(self) -> Update:
        """Solve the current targets once and head for the solution."""
        self._window_start = None
        settings, stream = self.settings, self.stream
        if self._solver is None:
            self._solver = IkSolver(settings.chain, tolerance=settings.tolerance,
                                    max_iterations=settings.max_iterations,
                                    max_restarts=settings.max_restarts)
        targets = self.target_positions()
        # Closed loop: start from where the arm is when it is measured.
        seed = self.measured if self.feedback else stream.goal
        start = time.perf_counter()
        try:
            result = self._solver.solve(targets[0] if len(targets) == 1 else targets,
                                        seed=stream.position if seed is None else seed)
        except ValueError as error:
            self._forget()  # refused targets must not block the next ones
            return self.refuse('solver', str(error))
        seconds = time.perf_counter() - start
        if not np.all(np.isfinite(result.q)):
            self._forget()
            return self.refuse(
                'solver', f'solver returned non-finite joint angles {result.q.tolist()}')
        self.solves += 1
        self._window_solves += 1
        self._solve_seconds = seconds
        self._window_max_seconds = max(self._window_max_seconds, seconds)
        self.result = result
        self.solved_targets = targets
        stream.follow(result.q)  # clipped into the limits
        update = Update()
        if stream.dt is None:
            update.command = self._step()
        if not result.reached:
            update.warnings.append(('reach', 'target out of reach: stretched toward it, '
                                    f'{result.error:.4f} m remaining'))
        return update

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
