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
Collisions in the command stream, without ROS: each command and the motion to it checked.

`StreamCollision` is the controller's `collision` (fabrik_ros.controller); `guarded_step`
advances the command stream (or the jogging) one command through it. It checks what the
solver checks (ik.collisions.Collisions: the links against each other where self-collision
is on, and against the obstacles with a pinned root) with the same collision_margin m.

The rule, with c0 the clearance of the command before and ESCAPE_DIP = 0.5 mm:

- every command is at least min(m, c0) clear: a clear stream stays clear, and an arm
  already closer than m (an obstacle put on it, a start in collision) never gets closer;
- the straight joint motion from one command to the next stays at least
  min(m, c0 - ESCAPE_DIP) clear. The allowance lets an arm that stands at the margin, or
  inside it, move along or away: a bound on how fast the clearance may fall cannot prove
  any motion clear from exactly the bound.

The proof is conservative advancement (fabrik_ros.stream_bounds): each row (a moving link
against every obstacle, a self pair) falls at most its rate times |dq| along a straight
joint motion dq, by the joints' reaches. A measured check (the anchor) keeps a lower
bound of every pair's distance: exact for the pairs within HORIZON of the closest, for
the others the bound carried from the check before (less its row's fall since), and the
larger of that and the broad phase's ball bound once the carried bounds have fallen
HORIZON since the balls'. A command is sent without a measurement where
every pair stays at least the margin along the motion from the anchor: by its bound
less its row's fall (|q - anchor.q| along the motion is at most the larger end's, per
coordinate), or, for the few pairs that bound does not clear, by their separating
planes: those fall only as the segments' ends move toward each other along the normal
(to first order, within a second-order term), so a motion along or away from an
obstacle keeps its bound. Else, where the start is clear, the end is measured and the
motion proven from it the same way (the next command then starts at its anchor). Else
the motion is measured: from a measured point each row stays above the motion's floor
for (d - floor) / rate of the motion; the next check starts at the least of these, or
the command's end is proven by them, at most MAX_CHECKS checks per command. A command
the checks cannot take to its end stops at the farthest proven point: a collision stop,
the one case where the command slows down faster than the acceleration limit (as MoveIt
Servo halts).

Slowing down keeps those stops rare: within collision_slowdown_distance D of the margin,
the joints whose motion lowers the clearance (dc/dq_i * v_i < 0, from the closest pair's
points; v_i of a joint at rest: toward the stream's heading, or a jog's last solved
velocity: else a jog held into an obstacle is cut short again every command) move at
f = (c - m) / D of the speed they would have (the stream's velocity limit, a jog's
solved velocity), and at most at the speed from which they still stop, at the
acceleration limit, before using up the room c - m by the same bound. Joints that move
away or along keep their speed, but for one cap on every joint close to the margin: the
next command's motion stays within what PROVEN_CHECKS checks can prove from the room left
(else it would end in a collision stop). The limiter brakes to the caps at the
acceleration limit. c is the last command's bound from the anchor while it has lost at
most REFRESH of the room c - m since, or at most REFRESH_LEAST (a measurement would win
back no more than that), else measured; the points are the anchor's. Where the reaches
alone take c below that within the anchor's first motion (sliding along an obstacle),
the planes bound the pairs that set c too, up to that level (StreamBounds.motion_bound):
else such a stream is measured about every other command. Room below
REFRESH_LEAST counts as none: the approaching joints stop at the margin there, rather
than creep on at a speed that halves from command to command, each command measured.
With nothing to check (no obstacles, self-collision off) nothing here runs: the stream is
exactly as without it.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from operator import mul
from typing import TYPE_CHECKING

from fabrik_ros.collision.closest import closest_points
from fabrik_ros.collision.nearest import pair_bodies, pair_bounds
from fabrik_ros.collision.shapes import Scene
from fabrik_ros.ik.collisions import Collisions
from fabrik_ros.jog import JogStatus
from fabrik_ros.stream_bounds import StreamBounds
import numpy as np

if TYPE_CHECKING:  # the controller hands itself in: no import circle at run time
    from fabrik_ros.controller import IkController

ESCAPE_DIP = 0.0005     # m: how far the motion between commands may dip below its start
MAX_CHECKS = 8          # clearance checks along one command's motion
PROVEN_CHECKS = 6       # the slowdown keeps a command's motion provable in this many
HORIZON = 0.02          # m beyond the closest pair: pairs measured exactly for later bounds
REFRESH = 0.5           # share of the room a slowdown may take from a bound before a check
REFRESH_LEAST = 1e-5    # m: a bound that lost no more than this is kept, whatever the room


@dataclass
class _Check:
    """The clearance at one configuration: measured, or a lower bound from the anchor."""

    q: np.ndarray
    distance: float     # metres: exact, or a lower bound
    first: int          # body index, -1: nothing checked (a bound: the anchor's pair)
    second: int         # body index, or bodies + obstacle index
    world: np.ndarray | None = None     # measured: the FK frames
    rows: np.ndarray | None = None      # measured: a lower bound of each row's distance
    pairs: np.ndarray | None = None     # measured: a lower bound of each pair's distance
    worn: float = 0.0   # measured: how far its bounds fell since the balls' (at most)
    pair: int = -1                      # measured: the closest pair (CheckRows.pairs)
    points: list | None = None          # measured: the placed points (nearest.bounds)
    gradient: list[float] | None = None  # dc/dq, computed when first needed
    exact: bool = True  # False: distance is a lower bound
    axes: tuple | None = None           # measured: the joints' axes and origins, when needed
    planes: object = None               # measured: pairs' separating planes (Planes)
    slack: np.ndarray | None = None     # measured: [rows' rates | -rows], when needed
    sharpened: bool | None = None       # measured: planes beyond the margin (motion_bound)


class StreamCollision:
    """The stream's collision check and slowdown for one controller; see the module."""

    def __init__(self) -> None:
        """Start with nothing checked; `update` builds the check for the settings."""
        self._key: tuple | None = None   # the settings and obstacles checked
        self._collisions: Collisions | None = None
        self.active = False
        self.state = ''             # 'slowed', 'halted' (a collision stop) or '' (clear)
        self.cut = False            # the last command stopped short (a collision stop)
        self.clearance = math.inf   # m, at the last command (a lower bound unless exact)
        self.exact = True
        self.pair = ('', '')        # its closest pair's names
        self._last: _Check | None = None     # the last command's: the anchor or a bound from it
        self._anchor: _Check | None = None   # the measured check later bounds start from
        self._approaching: list[bool] = []  # joints the slowdown caps
        self._gradient_check: _Check | None = None   # the last measured check with dc/dq
        self._limits: tuple = (None, None)  # the motion limits and period _bounded_speed is of
        self._bounded_speed = False

    def update(self, controller: IkController) -> bool:
        """Follow the controller's settings and obstacles; return whether anything is checked."""
        settings = controller.settings
        obstacles = controller.obstacles if settings.root == 'pinned' else ()
        key = self._key   # the objects themselves: an id may be reused once one is freed
        if key is not None and key[0] is settings and key[1] is obstacles:
            return self.active
        self._key, self._last, self._anchor = (settings, obstacles), None, None
        self._gradient_check = None
        self.state, self.clearance, self.pair = '', math.inf, ('', '')
        collisions = Collisions(settings.chain, settings.collision_margin,
                                None if settings.self_collision else False)
        collisions.set_obstacles(Scene(obstacles, controller.obstacle_names))
        self.active = collisions.active
        self._collisions = collisions if self.active else None
        if self.active:
            self._margin = collisions.margin
            self._slowdown = settings.collision_slowdown_distance
            self._model, self._scene = collisions.model, collisions.scene
            self._rows = self._model.check_rows(self._scene)
            self._kinematics = StreamBounds(settings.chain, self._model, self._rows,
                                            len(self._scene) > 0)
        return self.active

    # ---- the slowdown ---------------------------------------------------------------

    def slowdown(self, position: np.ndarray, velocity: np.ndarray,
                 heading: np.ndarray | None, limits: object, dt: float
                 ) -> tuple[np.ndarray, np.ndarray] | None:
        """
        Return the next command's per-joint speed scale and cap (rad/s), None if none.

        Joints that approach get the scale (c - m) / D of the speed they would have (the
        stream's velocity limit, a jog's solved velocity) and a cap at the speed from which
        they still stop in the room left; the others 1. Every joint is capped so that the
        check can prove the next command in PROVEN_CHECKS checks. heading: where the stream
        goes, or where a jog's last solved velocity leads (joints at rest count as moving
        toward it).
        """
        check = self._check(position)
        room = check.distance - self._margin
        if not room < self._slowdown:
            return None     # a lower bound will do
        if not check.exact and not self._anchor.distance - check.distance <= max(
                REFRESH * room, REFRESH_LEAST):
            check = self._exact(check)
            room = check.distance - self._margin
        if check.first < 0:
            return None
        # Six numbers a joint: plain floats cost less than numpy's per-call overhead.
        speeds = velocity.tolist()
        direction = speeds if heading is None else [
            v if v != 0.0 else h - p
            for v, h, p in zip(speeds, heading.tolist(), position.tolist())]
        approaching = [g * d < 0.0 for g, d in zip(self._gradient(room), direction)]
        provable = self._provable(speeds, limits, dt, max(room, ESCAPE_DIP))
        count = sum(approaching)
        if not count and provable is None:
            return None
        self.state, self._approaching = 'slowed', approaching
        cap = [math.inf] * len(speeds) if provable is None else provable
        if not count:
            return np.ones(len(speeds)), np.array(cap)
        if room < REFRESH_LEAST:
            room = min(room, 0.0)   # at the margin: the approaching joints stop there
        fraction = min(max(room / self._slowdown, 0.0), 1.0) if self._slowdown > 0.0 \
            else 0.0    # no slowdown distance: inside the margin, nothing approaches
        # Each approaching joint may use up its share of the room by the motion bound.
        share = max(room, 0.0) / count
        stopping = self._kinematics.stopping(share, speeds, approaching, self._speed_steps,
                                             self._accelerations, dt)
        if stopping is not None:
            cap = [min(stop, top) if go else top
                   for go, stop, top in zip(approaching, stopping, cap)]
        return np.array([fraction if go else 1.0 for go in approaching]), np.array(cap)

    def _provable(self, velocity: list[float], limits: object, dt: float, room: float
                  ) -> list[float] | None:
        """
        Return speed caps under which the next command's motion bound stays provable.

        From the room above the motion's floor the checks prove about that much of the
        bound each, so the next step's fastest motion (a speed-up at the acceleration limit
        included) is held to PROVEN_CHECKS of them; None when it is within that anyway.
        """
        known, period = self._limits    # unlimited: nothing caps what the bound needs
        if known is not limits or period != dt:
            self._limits = (limits, dt)
            self._bounded_speed = bool(np.all(np.isfinite(limits.max_velocity)
                                              | np.isfinite(limits.max_acceleration)))
            self._speed_steps = (limits.max_acceleration * dt).tolist()
            self._speed_tops = list(zip(self._speed_steps, limits.max_velocity.tolist()))
            self._accelerations = limits.max_acceleration.tolist()
        if not self._bounded_speed:
            return None
        speeds = [min(abs(v) + step, top) for v, (step, top) in zip(velocity, self._speed_tops)]
        steps = [speed * dt for speed in speeds]
        allowed = PROVEN_CHECKS * room
        # Each row falls at most by the coordinates' largest rates: mostly within it anyway.
        if sum(map(mul, self._kinematics.reaches, steps)) <= allowed:
            return None
        needed = self._kinematics.fall(steps)
        if needed <= allowed:
            return None
        scale = allowed / needed
        return [speed * scale for speed in speeds]

    def settle(self, previous: np.ndarray, position: np.ndarray) -> None:
        """Call a slowdown that let no approaching joint move a halt; at rest, measured."""
        if self.state != 'slowed':
            return
        moved = [abs(a - b) > 1e-9 for a, b in zip(position.tolist(), previous.tolist())]
        if not any(m and a for m, a in zip(moved, self._approaching)):
            self.state = 'halted'
            if not any(moved):   # at rest (or creeping to it): measured once
                self._report(self._exact(self._last))

    def describe(self) -> str:
        """Say why the stream is slowed or halted, naming the pair ('' when clear)."""
        if not self.state:
            return ''
        first, second = self.pair
        return (f'{self.state} by a collision check: {first} and {second} '
                f"{'' if self.exact else 'at least '}{self.clearance:.4f} m apart "
                f'(collision_margin {self._margin} m)')

    # ---- the rule -------------------------------------------------------------------

    def clear_step(self, previous: np.ndarray, proposed: np.ndarray) -> np.ndarray:
        """Return the farthest point of previous -> proposed the rule allows (see module)."""
        start = self._check(previous)
        self.cut = False
        if previous.tolist() == proposed.tolist():
            self._report(start)
            return proposed
        if self._proven(previous, proposed, start):
            return proposed
        delta = proposed - previous
        start = self._exact(start)
        floor = min(self._margin, start.distance)        # of the command
        dip = min(self._margin, start.distance - ESCAPE_DIP)  # of the motion
        rates = self._kinematics.rows @ np.abs(delta)    # each row's fall per unit of t
        moving = rates > 0.0    # a row no joint moves keeps its distance, at least c0
        check, t = start, 0.0
        best, best_t, anchor = start, 0.0, start
        for _ in range(MAX_CHECKS):
            # From check, every row keeps above dip along this share of the motion.
            reach = float(np.minimum.reduce((check.rows[moving] - dip) / rates[moving],
                                            initial=np.inf))
            if not reach > 0.0:
                break
            if t + reach >= 1.0:
                lowest = float(np.minimum.reduce(check.rows - rates * (1.0 - t)))
                if lowest >= floor:     # the rest and the end proven from check
                    best, best_t, anchor = _Check(proposed.copy(), lowest, check.first,
                                                  check.second, exact=False), 1.0, check
                    break
            t = min(t + reach, 1.0)
            following = self._evaluate(proposed if t == 1.0 else previous + t * delta)
            closer = following.distance < check.distance
            check = following
            if check.distance >= floor:
                best, best_t, anchor = check, t, check
            elif closer:
                break   # heading in below the floor: no farther point will be sent
            if t == 1.0:
                break
        self._last, self._anchor = best, anchor
        self._report(best)
        if best_t == 1.0:
            return proposed
        self.cut, self.state = True, 'halted'
        return best.q.copy()

    # ---- internals ------------------------------------------------------------------

    def _report(self, check: _Check) -> None:
        """Keep the clearance and pair of the command sent, for the diagnostics."""
        self.clearance, self.exact = check.distance, check.exact
        self.pair = self._model.body_names(self._scene, check.first, check.second)

    def _exact(self, check: _Check) -> _Check:
        """Return check itself, or a measurement at its q where it only bounds the clearance."""
        if not check.exact:
            check = self._last = self._anchor = self._evaluate(check.q)
        return check

    def _check(self, q: np.ndarray) -> _Check:
        """Return the check of q: the last command's when it is q, else a measurement."""
        last = self._last
        if last is not None and last.q.tobytes() == q.tobytes():
            return last
        self._last = self._anchor = self._evaluate(q)
        return self._last

    def _proven(self, previous: np.ndarray, proposed: np.ndarray, start: _Check) -> bool:
        """
        Return whether the motion is at least the margin clear by bounds; if so, it is sent.

        From the anchor, else (the start clear by them, the end not) from a measurement
        at the end: the next command's motion then starts at its anchor.
        """
        bound = self._motion_bound(previous, proposed)
        if bound >= self._margin:
            self._last = _Check(proposed.copy(), bound, self._anchor.first,
                                self._anchor.second, exact=False)
        elif start.distance >= self._margin:
            anchor = self._anchor
            end = self._evaluate(proposed)
            self._anchor = end
            if end.distance < self._margin or self._kinematics.motion_bound(
                    end, previous, proposed, self._margin) < self._margin:
                self._anchor = anchor
                return False
            self._last = end
        else:
            return False
        self._report(self._last)
        return True

    def _motion_bound(self, start: np.ndarray, end: np.ndarray) -> float:
        """Return a lower bound of the clearance along start -> end from the anchor."""
        anchor, margin = self._anchor, self._margin
        kept = (anchor.distance + REFRESH * margin) / (1.0 + REFRESH)  # by the slowdown
        return self._kinematics.motion_bound(anchor, start, end, margin,
                                             min(kept, margin + self._slowdown))

    def _evaluate(self, q: np.ndarray) -> _Check:
        """
        Return the measured check of q, with each row's and pair's bound for later commands.

        The pairs are bounded from the anchor's (their rows' fall since); once those have
        fallen more than HORIZON since the balls bounded them, by the larger of that and
        the balls' again (both lower bounds: a pair measured near the margin keeps the
        better one, not the balls' slack, and need not be measured again).
        """
        kinematics, anchor = self._kinematics, self._anchor
        world = kinematics.chain.world_frames(q)
        lower, worn = None, 0.0
        if anchor is not None:
            fall = kinematics.rows @ [abs(a - b) for a, b in zip(q.tolist(), anchor.q.tolist())]
            worn = anchor.worn + float(np.maximum.reduce(fall))
            lower = anchor.pairs - fall.take(kinematics.row_of_pair)
        balls = lower is None or worn > HORIZON
        distance, pair, points, lower = pair_bounds(self._rows, world, HORIZON, lower, balls)
        worn = 0.0 if balls else worn
        first, second = pair_bodies(self._rows, pair)
        return _Check(np.array(q, dtype=float), float(distance), first, second, world,
                      kinematics.row_bounds(lower), lower, worn, pair, points)

    def _gradient(self, room: float) -> list[float]:
        """
        Return dc/dq of the anchor's closest pair (zero where it has no normal).

        The last one measured serves while its pair is the anchor's and the motion since
        has lost at most REFRESH of the room by the bound: it only sorts the joints into
        those that approach and the others, which the proof does not rely on.
        """
        anchor, last = self._anchor, self._gradient_check
        if last is anchor:
            return last.gradient
        if last is not None and last.pair == anchor.pair and (
                self._kinematics.fall([abs(a - b) for a, b in zip(
                    anchor.q.tolist(), last.q.tolist())]) <= REFRESH * room):
            return last.gradient
        if anchor.gradient is None:
            found = closest_points(self._rows, anchor.points, anchor.pair)
            if found is None:   # a segment through a box: the batched kernel's points
                points = self._model.clearance(anchor.world, self._scene).points.tolist()
                inward = anchor.distance < 0.0  # surface points: their gap turns inside
            else:   # the axes' points: their gap points out, inside or not
                points, inward = found[1:3], False
            anchor.gradient = self._kinematics.gradient(anchor, points, inward,
                                                        len(self._model.names))
        self._gradient_check = anchor
        return anchor.gradient


def guarded_step(controller: IkController, now: float) -> np.ndarray:
    """
    Advance the stream (or the jogging) one command within the collision rule.

    The stream's position and velocity become the command's; a collision stop carries
    the jogger on from it too, its commands kept.
    """
    stream, jog, collision = controller.stream, controller.jog, controller.collision
    collision.state, collision.cut = '', False
    if not collision.update(controller):
        return jog.step(now) if jog.active else stream.step()
    previous = stream.position.copy()
    if stream.dt is not None:
        stream.slowdown = collision.slowdown(
            previous, stream.velocity,
            previous + jog.jogger.wanted if jog.active else stream.heading,
            stream.limits, stream.dt)
    try:
        proposed = jog.step(now) if jog.active else stream.step()
    finally:
        stream.slowdown = None
    position = collision.clear_step(previous, proposed)
    collision.settle(previous, position)
    if collision.cut:
        velocity = stream.velocity if stream.dt is None else (position - previous) / stream.dt
        stream.take(position, velocity)
        if jog.jogger is not None:
            jog.jogger.take(position, velocity)
    if jog.active and collision.cut:
        jog.status = JogStatus.HALT_FOR_COLLISION
    elif jog.active and collision.state and jog.status == JogStatus.NO_WARNING:
        jog.status = JogStatus.DECELERATE_FOR_COLLISION if collision.state == 'slowed' \
            else JogStatus.HALT_FOR_COLLISION
    return stream.position
