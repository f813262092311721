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
How fast a chain's checked distances can change: the command stream's motion bounds.

First order by the joints' reaches (any configuration): a point of a link moves at most
sum |dq_i| R_i along the straight joint motion dq, R_i the farthest any surface of the
link can be from joint i moving it (1 for a prismatic joint), so each row (a moving link
against every obstacle, a self pair) falls at most its rate times |dq|.

Direction-aware near a measured configuration (`Planes`): along a straight joint
motion a point's acceleration is at most sum_i |dq_i| R_i (3 W_i + |dq_i|), W_i the sum
of |dq_j| over the joints before joint i (on its path from the base). Joint i's term
dq_i a_i x (p - o_i) changes as its axis turns (at most W_i: only the joints before it
turn it) and as the point moves relative to its origin (at most W_i R_i by the joints
before it, sum_j>=i |dq_j| R_j by it and those after); summed, each joint's R_j meets
the |dq| of itself and of the joints before it. So the point's motion along a fixed
normal is its Jacobian's first-order term within half that. A pair's
separating plane (fabrik_ros.collision.separation) follows its segments' ends: the
bound falls only as fast as those ends move toward each other along its normal, not by
the reach bound, so a motion along or away from an obstacle keeps it.
"""

from __future__ import annotations

import math
from operator import mul

from fabrik_ros.collision.separation import separating_plane
from fabrik_ros.motion import braking_speed_of
import numpy as np

INF = float('inf')
PLANE_PAIRS = 8     # pairs a check's bounds follow by their separating planes, at most
SUMS = 4            # a plane's end sums: two ends of its body, two (or one) of the other


class Planes:
    """
    A measured check's pairs' separating planes, stacked: one product bounds them all.

    Each plane's bound is the least over the other's ends of n.f (plus its side) and over
    the body's ends of -(n.e + radius), each linear in the joint motion since the check:
    kept as the least of SUMS sums of one of each (a side and its dq speeds; a plane with
    fewer repeats them), each with its plane's second order, so that one product and one
    least bound every plane.
    """

    def __init__(self, joint_reach: np.ndarray) -> None:
        """Start without planes; joint_reach: StreamBounds.joint_reach (second order)."""
        self.index: dict[int, bool] = {}    # pair -> whether it has a plane
        self.pairs: list[int] = []
        self._joint_reach = joint_reach
        self._sums: list[tuple[float, list[float]]] = []     # SUMS per plane
        self._rates: list[np.ndarray] = []   # per plane: its bodies' joint reaches, summed
        self._stack: tuple | None = None

    def add(self, pair: int, plane: tuple | None) -> None:
        """Keep a pair's plane (StreamBounds.plane), None: the pair has none."""
        self.index[pair] = plane is not None
        if plane is None:
            return
        near, far, (body, other) = plane
        self.pairs.append(pair)
        sums = [(side - near_side, [v - u for u, v in zip(near_speeds, speeds)]
                 if speeds is not None else [-u for u in near_speeds])
                for near_side, near_speeds in near for side, speeds in far]
        self._sums += (sums * SUMS)[:SUMS]
        self._rates.append(self._joint_reach[body] + self._joint_reach[other])
        self._stack = None

    def raise_bounds(self, lows: np.ndarray, motions: list[list[float]]) -> None:
        """
        Raise each plane's pair in lows (every pair's bound) to its plane's where higher.

        motions: per end of the motion its joint motion since the check, then per joint
        |dq_i| (3 W_i + |dq_i|) at the motion's spread (the second order), then 1: the
        planes' sums, their second order and their sides in one product.
        """
        if self._stack is None:     # per sum: its dq speeds, its plane's curvature, side
            rates = -0.5 * np.repeat(np.array(self._rates), SUMS, axis=0)
            self._stack = (np.hstack((np.array([speeds for _, speeds in self._sums]), rates,
                                      np.array([[side] for side, _ in self._sums]))),
                           np.array(self.pairs))
        stack, index = self._stack
        ends = stack.dot(np.array(motions).T)
        bounds = np.minimum.reduce(ends.reshape(len(index), -1), axis=1)
        lows[index] = np.maximum(lows[index], bounds)


class StreamBounds:
    """A chain's joint reaches (the motion bounds), its pairs' planes and the gradient."""

    def __init__(self, chain: object, model: object, check_rows: object, obstacles: bool
                 ) -> None:
        """
        Bound, per checked row and coordinate, how fast the row's distance can fall.

        A row: a moving link against every obstacle, or a self pair (rows in that order).

        A link against an obstacle: every joint that moves the link, at its reach to it. Two
        links: the joints that move one of them but not the other; a joint moving both
        turns them together, which keeps their distance.
        """
        self.chain, self.check_rows = chain, check_rows
        joints = chain.joints
        count = len(joints)
        prismatic = [joint.prismatic for joint in joints]
        self.axes_local = np.array([joint.axis for joint in joints], dtype=float)
        moves = np.zeros((count + 1, count), dtype=bool)     # frame row -> joints moving it
        for index, joint in enumerate(joints):
            moves[index + 1] = moves[joint.parent + 1]
            moves[index + 1, index] = True
        length = np.array([np.linalg.norm(joint.origin_xyz) + (
            max(abs(joint.lower), abs(joint.upper)) if joint.prismatic else 0.0)
            for joint in joints])
        # reach[b, j]: the farthest a surface point of body b lies from joint j moving it.
        reach = np.zeros((len(model.bodies), count))
        for row, body in enumerate(model.bodies):
            extent = max(np.linalg.norm(body.start), np.linalg.norm(body.end)) + body.radius
            joint, path = body.frame - 1, 0.0
            while joint >= 0:
                reach[row, joint] = 1.0 if joints[joint].prismatic else path + extent
                path += length[joint]
                joint = joints[joint].parent
        self.body_frames = np.array([body.frame for body in model.bodies], dtype=int)
        rows = [reach[model.moving]] if obstacles else []
        if len(model.pairs):
            first, second = model.pairs[:, 0], model.pairs[:, 1]
            moves_first = moves[self.body_frames[first]]
            moves_second = moves[self.body_frames[second]]
            rows.append(np.where(moves_first & ~moves_second, reach[first], 0.0)
                        + np.where(moves_second & ~moves_first, reach[second], 0.0))
        coupling = np.zeros((count, chain.dof))
        coupling[np.arange(count), chain.coordinate_of_joint] = (
            chain.multipliers if chain.coupled else 1.0)
        # joint rates to coordinate rates (None: one joint per coordinate, in order)
        # Per joint: its coordinate and multiplier; per body: the joints moving it.
        self.coordinate_of = [(int(c), float(coupling[j, c])) for j, c in enumerate(
            chain.coordinate_of_joint.tolist())]
        self.prismatic_joints = prismatic
        self.body_joints = [np.flatnonzero(row).tolist() for row in moves[self.body_frames]]
        # Per checked row (a link and the obstacles, a self pair) and coordinate.
        self.rows = np.concatenate(rows) @ np.abs(coupling) if rows \
            else np.zeros((1, chain.dof))
        self.reaches = self.rows.max(axis=0).tolist()  # per coordinate, over every pair
        self._slack = np.hstack((self.rows, np.zeros((len(self.rows), 1))))  # motion_bound's
        # Second order: each body's reach per joint (a last row of zeros: an obstacle), and
        # per joint its parent joint (-1: the base), coordinate and |multiplier|.
        self.joint_reach = np.vstack((reach, np.zeros(count)))
        self._joint_steps = [(joint.parent, c, abs(m)) for joint, (c, m) in zip(
            joints, self.coordinate_of)]
        # The check's pairs (CheckRows.pairs: self pairs, then links against obstacles)
        # grouped by row, for each row's least bound.
        moving = {body: row for row, body in enumerate(model.moving.tolist())}
        first_self = len(moving) if obstacles else 0
        row_of = np.array([first_self + index if kind == 0 else moving[body]
                           for index, (kind, body, _) in enumerate(check_rows.pairs)], dtype=int)
        self.row_of_pair = row_of
        self._pair_order = np.argsort(row_of, kind='stable')
        self._row_starts = np.searchsorted(row_of[self._pair_order], np.arange(len(self.rows)))
        self._row_count = len(self.rows)

    def row_bounds(self, pair_bounds: np.ndarray) -> np.ndarray:
        """Return each row's least pair bound (inf for a row without pairs)."""
        if not len(pair_bounds):
            return np.full(self._row_count, np.inf)
        return np.minimum.reduceat(pair_bounds.take(self._pair_order), self._row_starts)

    def stopping(self, share: float, speeds: list[float], approaching: list[bool],
                 speed_steps: list[float], accelerations: list[float], dt: float
                 ) -> list[float] | None:
        """
        Return per coordinate the speed from which it stops within `share` m by the bound.

        None where every approaching joint stops within its share from any speed it
        reaches: a joint at speed s stops within s dt + s^2 / 2a (this step, then at most
        the continuous braking distance); within one step it gets no faster than
        |v| + a dt. So where its share of the room by the bound holds that from
        |v| + 2 a dt, its stopping speed is above what the limiter can reach and the cap
        could not bind (a jogger's acceleration in force after a narrowed limit: up to
        twice it).
        """
        for v, go, step, acceleration, reach in zip(speeds, approaching, speed_steps,
                                                    accelerations, self.reaches):
            fastest = abs(v) + 2.0 * step
            if go and not (reach > 0.0 and acceleration < INF and share / reach
                           >= fastest * dt + fastest * fastest / (2.0 * acceleration)):
                return [INF if reach <= 0.0 else braking_speed_of(share / reach, acceleration, dt)
                        for reach, acceleration in zip(self.reaches, accelerations)]
        return None

    def fall(self, spread: list[float] | np.ndarray) -> float:
        """Return how far (m) the clearance may fall over a motion of |dq| <= spread."""
        return float(np.maximum.reduce(self.rows @ spread))

    def motion_bound(self, anchor: object, start: np.ndarray, end: np.ndarray, margin: float,
                     kept: float = -INF) -> float:
        """
        Return a lower bound of the clearance along the straight motion start -> end.

        From a measured check (the anchor): each pair's bound less its row's rate times
        the larger end's |q - anchor.q| (along the motion |q - anchor.q| is at most that,
        per coordinate); where that is below the margin, also its separating plane's:
        concave along the motion but for its second order, which holds for the same
        larger ends, so its least is at an end. kept: the least bound the caller keeps
        without a measurement, for a motion away from the anchor. Where the reaches
        alone fall below it within the anchor's first such motion, the caller would
        measure about every other command (an arm sliding along an obstacle: the reaches
        fall far faster than such a motion brings it closer), so from then on the planes
        sharpen the anchor's bounds up to it (a few products a command, against a
        measurement); elsewhere up to the margin.
        """
        # Six numbers a joint: plain floats cost less than numpy's per-call overhead.
        starts, ends, anchored = start.tolist(), end.tolist(), anchor.q.tolist()
        spread = [max(abs(s - a), abs(e - a)) for s, e, a in zip(starts, ends, anchored)]
        if anchor.slack is None:    # each row's fall less its bound in one product
            anchor.slack = self._slack.copy()
            np.negative(anchor.rows, out=anchor.slack[:, -1])
        least = -float(np.maximum.reduce(anchor.slack @ (spread + [1.0])))   # rows' least
        if anchor.sharpened is None and kept > margin:
            anchor.sharpened = least < kept
        level = max(kept, margin) if anchor.sharpened else margin
        if least >= level:
            return least
        lows = anchor.pairs - (self.rows @ spread).take(self.row_of_pair)
        if anchor.planes is None:
            anchor.planes = Planes(self.joint_reach)
        planes = anchor.planes
        curvature = self.curvature(spread) + [1.0]
        motions = [[u - a for u, a in zip(point, anchored)] + curvature
                   for point in (starts, ends)]
        if planes.pairs:
            planes.raise_bounds(lows, motions)
        # A plane for the least pair while it is below the level: only the pairs that
        # set the bound pay for one, nearest first.
        pair = int(lows.argmin())
        while lows[pair] < level and pair not in planes.index and \
                len(planes.pairs) < PLANE_PAIRS:
            plane = self.plane(anchor, pair)
            planes.add(pair, plane)
            if plane is None:
                break
            planes.raise_bounds(lows, motions)
            pair = int(lows.argmin())
        return float(lows[pair])

    def curvature(self, spread: list[float]) -> list[float]:
        """Return per joint |dq_i| (3 W_i + |dq_i|) at |dq| <= spread (see the module)."""
        moved, before = [], []     # per joint: its |dq|, and the sum of those before it
        for parent, coordinate, multiplier in self._joint_steps:
            before.append(before[parent] + moved[parent] if parent >= 0 else 0.0)
            moved.append(multiplier * spread[coordinate])
        return [u * (3.0 * w + u) for u, w in zip(moved, before)]

    def plane(self, check: object, pair: int) -> tuple | None:
        """
        Return a measured check's pair's plane: its body's ends, its other's, the bodies.

        Each end: n.x (plus the radius, or the other's side) and its dq speeds along n;
        a fixed obstacle: its side and None. None where the pair has no normal there.
        """
        rows = self.check_rows
        found = separating_plane(rows, check.points, pair)
        if found is None:
            return None
        normal, ends, radius, other_ends, side = found
        _, body, other = rows.pairs[pair]
        frames = self._frames(check)
        near = [(sum(map(mul, normal, end)) + radius, speeds) for end, speeds in zip(
            ends, self._normal_speeds(frames, normal, ends, body))]
        if other_ends is None:
            return near, [(side, None)], (body, -1)
        far = [(sum(map(mul, normal, end)) + side, speeds) for end, speeds in zip(
            other_ends, self._normal_speeds(frames, normal, other_ends, other))]
        return near, far, (body, other)

    def gradient(self, check: object, points: list, inward: bool, bodies: int
                 ) -> list[float]:
        """
        Return dc/dq from the closest pair's points (two of x, y, z), base frame.

        The points: on the links' axes, or on their surfaces (inward: their gap points
        into the other body). Either gives the same normal speeds: a body's points on one
        normal move alike along it.
        """
        first, second = list(points[0]), list(points[1])
        gap = [b - a for a, b in zip(first, second)]
        length = math.sqrt(sum(g * g for g in gap))
        if not length > 1e-12:
            return [0.0] * self.chain.dof
        sign = -1.0 if inward else 1.0
        normal = [g / length * sign for g in gap]
        frames = self._frames(check)
        rate = [-v for v in self._normal_speeds(frames, normal, [first], check.first)[0]]
        if check.second < bodies:
            rate = [a + b for a, b in zip(rate, self._normal_speeds(
                frames, normal, [second], check.second)[0])]
        return rate

    def _frames(self, check: object) -> tuple[list, list]:
        """Return a measured check's joint axes and origins (base frame), kept on it."""
        if check.axes is None:
            world = check.world
            check.axes = (np.einsum('nij,nj->ni', world[1:, :3, :3], self.axes_local).tolist(),
                          world[1:, :3, 3].tolist())
        return check.axes

    def _normal_speeds(self, frames: tuple, normal: list, points: list, body: int
                       ) -> list[list[float]]:
        """Return d(normal . point)/dq of each point (base frame) as a body's, per coordinate."""
        axes, origins = frames
        x, y, z = normal
        speeds = [[0.0] * self.chain.dof for _ in points]
        for joint in self.body_joints[body]:
            ax, ay, az = axes[joint]
            coordinate, multiplier = self.coordinate_of[joint]
            if self.prismatic_joints[joint]:
                along = multiplier * (x * ax + y * ay + z * az)
                for row in speeds:
                    row[coordinate] += along
            else:   # normal . (axis x (point - origin)) = (point - origin) . (normal x axis)
                tx, ty, tz = y * az - z * ay, z * ax - x * az, x * ay - y * ax
                ox, oy, oz = origins[joint]
                offset = ox * tx + oy * ty + oz * tz
                for row, (px, py, pz) in zip(speeds, points):
                    row[coordinate] += multiplier * (px * tx + py * ty + pz * tz - offset)
        return speeds
