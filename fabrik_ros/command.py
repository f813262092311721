"""
Joint-command bookkeeping of the IK node, without ROS.

Joint orders for controllers that take bare arrays, measured positions out of a
JointState that may carry other joints, and where a moving command can stop.
"""

from collections.abc import Sequence

from fabrik_ros.motion import limit_step, MotionLimits, time_to_reach
import numpy as np


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
    missing = [joint for joint in joints if joint not in index]
    if missing:
        raise ValueError(f'joints {missing} are not measured')
    measured = np.array([positions[index[joint]] for joint in joints], dtype=float)
    if not np.all(np.isfinite(measured)):
        raise ValueError(f'measured positions {measured.tolist()} are not finite')
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
    held back only by the position limits and the max joint step. Commands never leave
    the position limits.
    """

    def __init__(self, limits: MotionLimits, dt: float | None) -> None:
        """Start with no command: nothing is sent until start() gives a position."""
        self.dt = dt  # seconds between commands, None: a command per solution
        self.position: np.ndarray | None = None  # last command, radians
        self.velocity = np.zeros(limits.size)  # of the last step, rad/s
        self.goal: np.ndarray | None = None
        self.hold_reason = ''  # why it holds; '' while it follows a goal or has none
        self._stop: np.ndarray | None = None  # where it holds
        self.set_limits(limits)

    def set_limits(self, limits: MotionLimits) -> None:
        """Use new limits from the next step; the command is clipped into them now."""
        self.limits = limits
        # Without a command rate, velocity and acceleration are the controller's business.
        self._jump_limits = MotionLimits.create(limits.lower, limits.upper,
                                                max_step=limits.max_step)
        self._unguarded = bool(np.all(np.isinf(limits.max_step)))
        if self.position is not None:
            self.position = np.clip(self.position, limits.lower, limits.upper)
            self._stop = np.clip(self._stop, limits.lower, limits.upper)
        if self.goal is not None:
            self.goal = np.clip(self.goal, limits.lower, limits.upper)

    def start(self, position: np.ndarray) -> None:
        """(Re)start at rest at `position` (e.g. measured), holding it, with no goal."""
        self.position = np.clip(np.asarray(position, dtype=float), self.limits.lower,
                                self.limits.upper)
        self.velocity = np.zeros(self.limits.size)
        self._stop = self.position.copy()
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

    def step(self) -> np.ndarray:
        """Advance one command; return the new position (the stream must be started)."""
        target = self.goal if self.goal is not None else self._stop
        if self.dt is None and self._unguarded:
            self.position = target  # already within the limits: the jump is the command
        elif self.dt is None:
            self.position, _ = limit_step(self.position, np.zeros(self.limits.size), target,
                                          1.0, self._jump_limits)
        else:
            self.position, self.velocity = limit_step(self.position, self.velocity, target,
                                                      self.dt, self.limits)
        return self.position

    def duration(self, previous: np.ndarray) -> float:
        """Return how long the last step takes: dt, or the limits' time from `previous`."""
        if self.dt is not None:
            return self.dt
        return time_to_reach(previous, self.position, self.limits)
