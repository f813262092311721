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
The hot check: the smallest checked distance of one configuration, bounded first.

numpy's cost on arrays this small is per call, not per element, and the exact distance of
a pair takes dozens of operations; most pairs are far apart. So a broad phase bounds every
pair from below in one batch of a dozen operations: each body's centre against every
segment (the other bodies, round obstacles) and against every box's slabs, minus the
body's half length and the radii (a body's points are within its half length of its
centre, and distances are 1-Lipschitz). Only pairs whose bound is below the best exact
distance found so far are measured exactly, in plain Python floats (cheaper than numpy
for one pair), in the bounds' order: the first exact distance that no remaining bound
undercuts is the minimum. The exact values are those of the batched formulas before
(Ericson's segment-segment with a guarded denominator, a cylinder's end planes where they
bound higher, a box's exact segment distance, the deeper end inside where a segment
enters it), so min_distance equals clearance's and pair_distances' minimum to rounding.
What depends only on the model and the scene is stacked once per scene in CheckRows.
Imports numpy and the standard library only.
"""

from __future__ import annotations

import math
from math import sqrt
from typing import Sequence, TYPE_CHECKING

from fabrik_ros.collision.shapes import Cylinder, Scene
import numpy as np

if TYPE_CHECKING:   # the model imports this module
    from fabrik_ros.collision.model import CollisionModel

_TINY = 1e-18       # as distance._TINY: the branch-free segment kernel's guard
_INF = float('inf')
BALL_SLACK = 0.06   # m: the balls of the bounds reach at most this beyond their capsule


class CheckRows:
    """
    One model's bounds and exact pairs against one scene, stacked once.

    Bounds: every body is covered by spheres along its segment (a capsule of length l and
    radius r lies in n balls of radius r + l / 2n centred on its n equal pieces), so are
    round obstacles (a sphere by itself, a cylinder by balls around its axis capsule);
    an entry is a ball of a body against a ball of a body or obstacle it is checked
    against (their centres' distance minus both radii), or a body's ball against a box's
    slabs (the largest of its centre's excesses over the half sizes, minus the radius).
    All centres and differences are one matmul of the FK frames. Exact pairs: a self
    pair, a body against a round obstacle or against a box.
    """

    def __init__(self, model: CollisionModel, scene: Scene) -> None:
        """Stack the balls, the entries' columns and offsets and the pairs' constants."""
        bodies = len(model.bodies)
        self.bodies, self.boxes = bodies, len(scene.box_index)
        local = model.local_ends                                       # (b, 4, 2)
        body_balls = [_balls(local[row, :3, 0], local[row, :3, 1], radius)
                      for row, radius in enumerate(model.radii)]
        round_balls = [_balls(start, end, radius) for start, end, radius in zip(
            scene.round_starts, scene.round_ends, scene.round_radii)]
        columns = [ball for balls in body_balls + round_balls for ball in balls]
        first_ball = np.cumsum([0] + [len(balls) for balls in body_balls + round_balls])
        self.balls = first_ball[bodies]        # the bodies' balls, then the obstacles'
        self.pairs: list[tuple[int, int, int]] = []     # (kind, body, other)
        first, second, self.entry_pair = [], [], []
        checked = [(0, a, c, c) for a, c in model.pairs.tolist()] + [
            (1, body, row, bodies + row) for body in model.moving.tolist()
            for row in range(len(round_balls))]
        for kind, body, other, owner in checked:
            for a in range(first_ball[body], first_ball[body + 1]):
                for c in range(first_ball[owner], first_ball[owner + 1]):
                    first.append(a)
                    second.append(c)
                    self.entry_pair.append(len(self.pairs))
            self.pairs.append((kind, body, other))
        self.first, self.second = np.array(first, dtype=int), np.array(second, dtype=int)
        radii = np.array([radius for _, radius in columns])
        self.offsets = -(radii[self.first] + radii[self.second]) if first else np.empty(0)
        fixed = np.array([centre for centre, _ in columns[self.balls:]]).reshape(-1, 3).T
        # Each ball entry's centre difference from the bodies' placed centres, one product:
        # +1 and -1 (at most two terms, the rest exact zeros: the subtraction's own
        # rounding), less a fixed centre.
        self.differences = np.zeros((self.balls, len(first)))
        self.fixed_differences = np.zeros((3, len(first)))
        for entry, (a, c) in enumerate(zip(first, second)):
            self.differences[a, entry] = 1.0
            if c < self.balls:
                self.differences[c, entry] = -1.0
            else:
                self.fixed_differences[:, entry] = -fixed[:, c - self.balls]
        frames = int(model.body_frames.max()) + 1 if bodies else 0
        self.frames = frames
        points = ([(row, centre, 1.0) for row, balls in enumerate(body_balls)
                   for centre, _ in balls]
                  + [(row, local[row, :3, 0], 1.0) for row in range(bodies)]
                  + [(row, local[row, :3, 1] - local[row, :3, 0], 0.0)
                     for row in range(bodies)])
        self.local = np.zeros((4 * frames, len(points)))
        for column, (row, xyz, w) in enumerate(points):
            frame = 4 * int(model.body_frames[row])
            self.local[frame:frame + 3, column], self.local[frame + 3, column] = xyz, w
        self.segment_local = self.local[:, self.balls:].copy()  # the starts, directions
        self._boxes(model, scene, body_balls, radii[:self.balls])
        self.any = bool(len(self.pairs))
        self.entry_pairs = np.array(self.entry_pair, dtype=int)
        # Each pair's entries that count (not a base body's against a box), side by side,
        # so that one reduce bounds every pair (pair_bounds).
        counted = np.flatnonzero(np.isfinite(self.offsets))
        self.pair_entries = counted[np.argsort(self.entry_pairs[counted], kind='stable')]
        self.pair_starts = np.searchsorted(self.entry_pairs[self.pair_entries],
                                           np.arange(len(self.pairs)))
        self._exact_constants(model, scene)

    def _boxes(self, model: CollisionModel, scene: Scene, body_balls: list,
               radii: np.ndarray) -> None:
        """Stack every box's frame as one affine map, and each ball-box entry's pair."""
        boxes, balls = self.boxes, self.balls
        # Every box's six face planes on homogeneous points, (6 k, 4): a point's largest
        # signed plane distance is the largest excess of its box coordinates, |x_i| - h_i.
        # Face-major (face f of box b in row f k + b): the largest is a reduce over rows.
        normals = np.concatenate((scene.box_rotations, -scene.box_rotations), axis=2)
        normals = normals.transpose(0, 2, 1)[:, [0, 3, 1, 4, 2, 5]]        # (k, 6, 3)
        heights = np.einsum('kfi,ki->kf', normals, scene.box_translations) + np.repeat(
            scene.half_sizes, 2, axis=1)
        self.planes = np.concatenate((normals, -heights[:, :, None]), axis=2).transpose(
            1, 0, 2).reshape(-1, 4)
        # Entries box-major, then ball by ball; balls of bodies on the base never count.
        offsets = np.full((boxes, balls), _INF)
        owner = np.repeat(np.arange(len(body_balls)), [len(b) for b in body_balls])
        moving = np.isin(owner, model.moving)
        offsets[:, moving] = radii[moving]
        self.offsets = np.concatenate((self.offsets, np.where(np.isfinite(offsets), -offsets,
                                                              _INF).ravel()))
        pairs = {}
        for body in (model.moving.tolist() if boxes else []):
            pairs[body] = len(self.pairs)
            self.pairs.extend((2, body, row) for row in range(boxes))
        self.entry_pair += [pairs.get(body, 0) + box for box in range(boxes)
                            for body in owner.tolist()]

    def _exact_constants(self, model: CollisionModel, scene: Scene) -> None:
        """Keep what the exact pairs need as Python floats."""
        self.radii = model.radii.tolist()
        self.squared = model.lengths_squared.tolist()
        self.round_rows = []
        for row, index in enumerate(scene.round_index.tolist()):
            obstacle = scene.obstacles[index]
            direction = scene.round_ends[row] - scene.round_starts[row]
            cylinder = None
            if isinstance(obstacle, Cylinder):
                cylinder = (tuple(obstacle.pose[:3, 3].tolist()),
                            tuple(obstacle.pose[:3, 2].tolist()), obstacle.length / 2.0)
            self.round_rows.append((tuple(scene.round_starts[row].tolist()),
                                    tuple(direction.tolist()), float(direction @ direction),
                                    float(scene.round_radii[row]), cylinder))
        self.box_rows = [(tuple(scene.box_rotations[row].ravel().tolist()),
                          tuple(scene.box_translations[row].tolist()),
                          tuple(scene.half_sizes[row].tolist()))
                         for row in range(len(scene.box_index))]
        self.round_index = scene.round_index.tolist()
        self.box_index = scene.box_index.tolist()


def _balls(start: np.ndarray, end: np.ndarray, radius: float) -> list[tuple[np.ndarray, float]]:
    """Return balls (centre, radius) that cover a capsule, BALL_SLACK beyond it at most."""
    length = float(np.linalg.norm(end - start))
    count = max(1, math.ceil(length / (2.0 * BALL_SLACK)))
    return [(start + (end - start) * (piece + 0.5) / count, radius + length / (2 * count))
            for piece in range(count)]


def _product(first: list, second: list) -> list:
    """Return every pair of one ball of first and one of second."""
    return [(a, c) for a in first for c in second]


def bounds(rows: CheckRows, world: np.ndarray) -> tuple[np.ndarray, list]:
    """
    Return every entry's lower bound, flat, and the bodies' starts and directions.

    Those: three lists (x, y, z) of the b starts, then the b directions, base frame.
    """
    return placed_bounds(rows, placed_points(rows, world))


def placed_points(rows: CheckRows, world: np.ndarray) -> np.ndarray:
    """Return the points of rows.local in the base frame (4, k) at FK frames `world`."""
    # Every point of every frame in one product: (4, 4 f) frames side by side, each
    # column of `local` a homogeneous point (or direction) in its frame's four rows.
    return world[:rows.frames].transpose(1, 0, 2).reshape(4, -1).dot(rows.local)


def placed_bounds(rows: CheckRows, placed: np.ndarray) -> tuple[np.ndarray, list]:
    """Return bounds' answer from the points of `local` placed in the base frame (4, k)."""
    return entry_bounds(rows, placed), placed[:3, rows.balls:].tolist()


def entry_bounds(rows: CheckRows, placed: np.ndarray) -> np.ndarray:
    """Return every entry's lower bound, flat, from the placed points (as placed_bounds)."""
    balls, count = rows.balls, len(rows.first)
    differences = placed[:3, :balls].dot(rows.differences)
    differences += rows.fixed_differences
    differences *= differences
    squared = differences[0] + differences[1]     # row by row: cheaper than a reduce
    squared += differences[2]
    bound = np.empty(len(rows.offsets))
    np.sqrt(squared, out=bound[:count])
    if rows.boxes:
        faces = rows.planes.dot(placed[:, :balls]).reshape(6, -1)
        np.maximum.reduce(faces, axis=0, out=bound[count:])
    bound += rows.offsets
    return bound


def nearest(model: CollisionModel, rows: CheckRows, world: np.ndarray,
            floor: float = -_INF) -> tuple[float, int, int]:
    """
    Return the smallest checked distance at FK frames `world`, its body and the other.

    The other: a body, or bodies + obstacle index; (inf, -1, -1) with nothing to check.
    floor: see nearest_pair.
    """
    if not rows.any:
        return _INF, -1, -1
    best, pair, _ = nearest_pair(rows, world, floor)
    return (best, *pair_bodies(rows, pair))


def pair_bodies(rows: CheckRows, pair: int) -> tuple[int, int]:
    """Return a pair's body and the other: a body, or bodies + obstacle index."""
    kind, body, other = rows.pairs[pair]
    if kind == 0:
        return body, other
    return body, rows.bodies + (rows.round_index[other] if kind == 1
                                else rows.box_index[other])


def nearest_pair(rows: CheckRows, world: np.ndarray | None, floor: float = -_INF,
                 placed: np.ndarray | None = None, suspects: Sequence[int] = ()
                 ) -> tuple[float, int, list]:
    """
    Return the smallest checked distance, its pair (rows.pairs) and the placed points.

    Exact pairs in the bounds' order, from the smallest bound, until no bound is below
    the best distance found. floor: the first pair found closer than it ends the search,
    its distance returned (below floor, not necessarily the smallest: a caller that only
    needs to know whether the smallest is below floor, and the smallest where it is not).
    placed: the points of rows.local in the base frame (placed_bounds), where the caller
    has them from frames of its own (world is then not read). suspects: pairs measured
    first, before any bound: the first closer than floor is returned as found (a caller's
    guess where one is). Needs a pair to check (rows.any).
    """
    placed = placed_points(rows, world) if placed is None else placed
    points = placed[:3, rows.balls:].tolist()
    for pair in suspects:
        distance = exact(rows, points, pair)
        if distance < floor:
            return distance, pair, points
    flat = entry_bounds(rows, placed)
    entry_pair = rows.entry_pair
    best_pair = entry_pair[int(flat.argmin())]
    best = exact(rows, points, best_pair)
    candidates = (flat < best).nonzero()[0] if best >= floor else ()
    if len(candidates) > 1:
        done = {best_pair}
        for bound, entry in sorted(zip(flat[candidates].tolist(), candidates.tolist())):
            if bound >= best:
                break
            pair = entry_pair[entry]
            if pair not in done:
                done.add(pair)
                distance = exact(rows, points, pair)
                if distance < best:
                    best, best_pair = distance, pair
                    if best < floor:
                        break
    return best, best_pair, points


def pair_bounds(rows: CheckRows, world: np.ndarray, horizon: float,
                lower: np.ndarray | None = None, balls: bool = False
                ) -> tuple[float, int, list, np.ndarray]:
    """
    Return nearest_pair's distance, pair and points, and a lower bound of every pair.

    The bounds (rows.pairs' order, metres): the pair's exact distance where its bound is
    below the smallest distance plus `horizon` (measured, from the smallest bound on),
    else its bound. The bounds measured from: `lower` (each pair's, from what the caller
    knows), else the balls'; with balls, the larger of both. Needs a pair to check
    (rows.any).
    """
    if balls or lower is None:
        flat, points = bounds(rows, world)
        spheres = np.minimum.reduceat(flat.take(rows.pair_entries), rows.pair_starts)
        lower = spheres if lower is None else np.maximum(lower, spheres)
    else:
        points = world[:rows.frames].transpose(1, 0, 2).reshape(4, -1).dot(
            rows.segment_local)[:3].tolist()
    first = best_pair = int(lower.argmin())
    best = exact(rows, points, first)
    measured = {first: best}
    candidates = (lower < best + horizon).nonzero()[0]
    for bound, pair in sorted(zip(lower[candidates].tolist(), candidates.tolist())):
        if bound >= best + horizon:
            break
        if pair != first:
            distance = measured[pair] = exact(rows, points, pair)
            if distance < best:
                best, best_pair = distance, pair
    for pair, distance in measured.items():  # a few: item by item costs less than a gather
        if distance > lower[pair]:
            lower[pair] = distance
    return best, best_pair, points, lower


def clear_of(model: CollisionModel, rows: CheckRows, world: np.ndarray,
             distance: float) -> bool:
    """Return whether every checked pair is at least `distance` apart (see nearest)."""
    if not rows.any:
        return True
    flat, points = bounds(rows, world)
    candidates = (flat < distance).nonzero()[0]
    done = set()
    for _, entry in sorted(zip(flat[candidates].tolist(), candidates.tolist())):
        pair = rows.entry_pair[entry]
        if pair not in done:
            done.add(pair)
            if exact(rows, points, pair) < distance:
                return False
    return True


def exact(rows: CheckRows, points: list, pair: int) -> float:
    """Return a pair's distance (metres, radii subtracted) from the placed points."""
    kind, body, other = rows.pairs[pair]
    xs, ys, zs = points
    bodies = rows.bodies
    sx, sy, sz = xs[body], ys[body], zs[body]
    dx, dy, dz = xs[bodies + body], ys[bodies + body], zs[bodies + body]
    radius = rows.radii[body]
    if kind == 0:
        return _segments(sx, sy, sz, dx, dy, dz, rows.squared[body], xs[other], ys[other],
                         zs[other], xs[bodies + other], ys[bodies + other],
                         zs[bodies + other], rows.squared[other]) - radius - rows.radii[other]
    if kind == 1:
        (px, py, pz), (ux, uy, uz), squared, round_radius, cylinder = rows.round_rows[other]
        distance = _segments(sx, sy, sz, dx, dy, dz, rows.squared[body], px, py, pz, ux, uy,
                             uz, squared) - radius - round_radius
        if cylinder is None:
            return distance
        (cx, cy, cz), (ax, ay, az), half_length = cylinder
        z_start = (sx - cx) * ax + (sy - cy) * ay + (sz - cz) * az
        z_end = z_start + dx * ax + dy * ay + dz * az
        low, high = min(z_start, z_end), max(z_start, z_end)
        slab = max(max(low, -high) - half_length, 0.0) - radius
        return slab if slab > distance else distance
    (r0, r1, r2, r3, r4, r5, r6, r7, r8), (tx, ty, tz), half = rows.box_rows[other]
    sx, sy, sz = sx - tx, sy - ty, sz - tz        # local = R^T (x - t)
    start = (sx * r0 + sy * r3 + sz * r6, sx * r1 + sy * r4 + sz * r7,
             sx * r2 + sy * r5 + sz * r8)
    direction = (dx * r0 + dy * r3 + dz * r6, dx * r1 + dy * r4 + dz * r7,
                 dx * r2 + dy * r5 + dz * r8)
    return _segment_box(start, direction, half) - radius


def _segments(px: float, py: float, pz: float, ux: float, uy: float, uz: float, a: float,
              qx: float, qy: float, qz: float, vx: float, vy: float, vz: float, e: float
              ) -> float:
    """
    Return the distance of segments p + s u and q + t v (s, t in 0..1), |u|^2 a, |v|^2 e.

    Ericson's closest points (Real-Time Collision Detection, 5.1.9) without branches on
    degenerate segments: a guarded denominator, then each parameter's best answer to the
    other, clamped (exact for parallel and zero-length segments too).
    """
    rx, ry, rz = px - qx, py - qy, pz - qz
    b = ux * vx + uy * vy + uz * vz
    c = ux * rx + uy * ry + uz * rz
    f = vx * rx + vy * ry + vz * rz
    s = (b * f - c * e) / (a * e - b * b + _TINY)
    s = 0.0 if s < 0.0 else 1.0 if s > 1.0 else s
    t = (b * s + f) / (e + _TINY)
    t = 0.0 if t < 0.0 else 1.0 if t > 1.0 else t
    s = (b * t - c) / (a + _TINY)
    s = 0.0 if s < 0.0 else 1.0 if s > 1.0 else s
    gx, gy, gz = rx + s * ux - t * vx, ry + s * uy - t * vy, rz + s * uz - t * vz
    return sqrt(gx * gx + gy * gy + gz * gz)


def _segment_box(start: tuple, direction: tuple, half: tuple) -> float:
    """
    Return a segment's distance to a centred box (its frame), or <= 0 where they meet.

    The squared distance along the segment is convex and piecewise quadratic, its slope
    piecewise linear and nondecreasing with breaks where a coordinate crosses a face
    plane: the minimum is at an end or where the slope crosses zero, found by walking the
    breaks. Where the segment meets the box: the deeper of its ends inside it (minus
    its depth), else zero.
    """
    sx, sy, sz = start
    dx, dy, dz = direction
    hx, hy, hz = half
    at = box_parameter(sx, sy, sz, dx, dy, dz, hx, hy, hz)
    x, y, z = abs(sx + at * dx) - hx, abs(sy + at * dy) - hy, abs(sz + at * dz) - hz
    squared = ((x * x if x > 0.0 else 0.0) + (y * y if y > 0.0 else 0.0)
               + (z * z if z > 0.0 else 0.0))
    if squared > 0.0:
        return sqrt(squared)
    depth = min(max(abs(sx) - hx, abs(sy) - hy, abs(sz) - hz),
                max(abs(sx + dx) - hx, abs(sy + dy) - hy, abs(sz + dz) - hz))
    return depth if depth < 0.0 else 0.0


def box_parameter(sx: float, sy: float, sz: float, dx: float, dy: float, dz: float,
                  hx: float, hy: float, hz: float) -> float:
    """Return where (0..1) along segment s + t d the squared distance to a box is least."""
    low_slope = _slope(sx, sy, sz, dx, dy, dz, hx, hy, hz, 0.0)
    if low_slope >= 0.0:
        return 0.0
    high_slope = _slope(sx, sy, sz, dx, dy, dz, hx, hy, hz, 1.0)
    if high_slope <= 0.0:
        return 1.0
    low = 0.0
    for high in sorted(t for t in (
            (hx - sx) / dx if dx else 2.0, (-hx - sx) / dx if dx else 2.0,
            (hy - sy) / dy if dy else 2.0, (-hy - sy) / dy if dy else 2.0,
            (hz - sz) / dz if dz else 2.0, (-hz - sz) / dz if dz else 2.0)
            if 0.0 < t < 1.0) + [1.0]:
        high_slope = _slope(sx, sy, sz, dx, dy, dz, hx, hy, hz, high)
        if high_slope >= 0.0:
            return low + (high - low) * (-low_slope / (high_slope - low_slope))
        low, low_slope = high, high_slope
    return 1.0


def _slope(sx: float, sy: float, sz: float, dx: float, dy: float, dz: float, hx: float,
           hy: float, hz: float, at: float) -> float:
    """Return half the slope of the squared box distance at segment parameter `at`."""
    x, y, z = sx + at * dx, sy + at * dy, sz + at * dz
    return (((x - hx) * dx if x > hx else (x + hx) * dx if x < -hx else 0.0)
            + ((y - hy) * dy if y > hy else (y + hy) * dy if y < -hy else 0.0)
            + ((z - hz) * dz if z > hz else (z + hz) * dz if z < -hz else 0.0))
