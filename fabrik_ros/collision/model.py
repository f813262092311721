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
The collision model: link capsules, the pairs worth checking, and clearance from FK frames.

Links are capsules that contain their collision geometry (fabrik_ros.collision.capsules),
obstacles exact primitives (fabrik_ros.collision.shapes), so a reported clearance is never
above the true distance between the real geometries. Pairs checked: every two links but
adjacent ones (a joint between them, links without geometry passed through), those an
SRDF disables, and those that never or always touch over seeded random configurations,
as MoveIt's setup assistant finds them. Works on the FK frames (chain.world_frames: base, then
each joint), so a caller that has them pays no second FK. Imports numpy and the standard
library only.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Sequence
import xml.etree.ElementTree as ElementTree

from fabrik_ros.collision.distance import (segment_box, segment_box_bounds,
                                           segment_box_distance, segment_distances,
                                           segment_segment, segment_slab)
from fabrik_ros.collision.shapes import Obstacle, Scene
import numpy as np

SAMPLES = 2000          # random configurations that sort the pairs


class Body(NamedTuple):
    """A named capsule in a frame of the FK frames (row 0 the base, k + 1 joint k)."""

    name: str
    frame: int
    start: np.ndarray       # (3,) metres, in the frame
    end: np.ndarray
    radius: float


class Clearance(NamedTuple):
    """The smallest distance over the checked pairs, which pair, and its closest points."""

    distance: float         # metres; < 0 penetration; inf with nothing to check
    names: tuple[str, str]  # link, then link or obstacle ('obstacle 2 (box)')
    points: np.ndarray      # (2, 3) closest points on each, base frame


class PairDistances(NamedTuple):
    """Every checked pair's distance and closest points, self pairs then obstacle pairs."""

    distances: np.ndarray   # (k,) metres, radii subtracted
    first: np.ndarray       # (k,) body index
    second: np.ndarray      # (k,) body index for self pairs, obstacle index otherwise
    points_first: np.ndarray   # (k, 3) on the body's surface, base frame
    points_second: np.ndarray  # (k, 3)
    self_pairs: int         # the first self_pairs rows are body-body


class CollisionModel:
    """Capsules of a chain's links and the self pairs to check; keeps the last scene's gathers."""

    def __init__(self, bodies: Sequence[Body], pairs: Iterable[tuple[int, int]]) -> None:
        """Keep the bodies and the checked self pairs (indices into bodies)."""
        self.bodies = tuple(bodies)
        self.names = [body.name for body in self.bodies]
        pairs = np.array(sorted(set(pairs)), dtype=int).reshape(-1, 2)
        self.pairs = pairs
        self._frames = np.array([body.frame for body in self.bodies], dtype=int)
        ends = np.ones((len(self.bodies), 4, 2))
        for row, body in enumerate(self.bodies):
            ends[row, :3, 0], ends[row, :3, 1] = body.start, body.end
        self._ends = ends
        self.lengths_squared = np.sum((ends[:, :3, 1] - ends[:, :3, 0]) ** 2, axis=1)
        self.radii = np.array([body.radius for body in self.bodies])
        self._pair_radii = self.radii[pairs[:, 0]] + self.radii[pairs[:, 1]]
        # Bodies on the base frame never move: no configuration changes their distance to
        # an obstacle (a table the base stands on touches it always), so only the moving
        # bodies are checked against obstacles.
        self.moving = np.flatnonzero(self._frames > 0)
        self.described = False  # from a URDF's <collision> geometry (see build)
        self._last_rows: tuple[Scene, _Rows] | None = None
        self._last_scene: tuple[tuple[int, ...], Scene] | None = None

    @property
    def pair_names(self) -> list[tuple[str, str]]:
        """Return the checked self pairs by link name."""
        return [(self.names[a], self.names[b]) for a, b in self.pairs]

    def segments(self, world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each body's segment ends (b, 3) and (b, 3) in the base frame from FK frames."""
        placed = world[self._frames, :3] @ self._ends
        return placed[:, :, 0], placed[:, :, 1]

    def pair_distances(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                       ) -> PairDistances:
        """Return every checked pair's distance and closest points at FK frames `world`."""
        scene = self.scene(scene)
        starts, ends = self.segments(world)
        moving = self.moving
        bodies, rounds, boxes = len(moving), len(scene.round_index), len(scene.box_index)
        first, second = self.pairs[:, 0], self.pairs[:, 1]
        body_rows = np.repeat(moving, rounds)
        round_rows = np.tile(np.arange(rounds), bodies)
        axis, on_first, on_second = segment_segment(
            np.concatenate([starts[first], starts[body_rows]]),
            np.concatenate([ends[first], ends[body_rows]]),
            np.concatenate([starts[second], scene.round_starts[round_rows]]),
            np.concatenate([ends[second], scene.round_ends[round_rows]]))
        radius_second = np.concatenate([self.radii[second], scene.round_radii[round_rows]])
        if len(scene.cylinder_rows):
            _raise_to_end_planes(scene, starts[moving], ends[moving], len(first),
                                 (axis, on_first, on_second, radius_second))
        firsts = [first, body_rows]
        seconds = [second, scene.round_index[round_rows]]
        if boxes:
            box_axis, box_first, box_second = _boxes(scene, starts[moving], ends[moving])
            axis = np.concatenate([axis, box_axis])
            on_first = np.concatenate([on_first, box_first])
            on_second = np.concatenate([on_second, box_second])
            radius_second = np.concatenate([radius_second, np.zeros(bodies * boxes)])
            firsts.append(np.repeat(moving, boxes))
            seconds.append(np.tile(scene.box_index, bodies))
        first_all = np.concatenate(firsts)
        radius_first = self.radii[first_all]
        surface_first, surface_second = _surfaces(on_first, on_second, radius_first,
                                                  radius_second)
        return PairDistances(axis - radius_first - radius_second, first_all,
                             np.concatenate(seconds), surface_first, surface_second,
                             len(first))

    def min_distance(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                     ) -> float:
        """
        Return the smallest checked distance at FK frames `world` (metres), the hot check.

        Equal to clearance(...).distance, with less work: a box row is refined only where
        its cheap bounds (distance.segment_box_bounds) neither agree nor rule it out
        against the other rows' minimum; then, with a separating axis, its distance is the
        nearer of its ends' and the box edges' (the closest point of a face to a segment
        that misses the box is at an end of it or over an edge), else segment_box's.
        """
        return self.nearest(world, scene)[0]

    def nearest_names(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                      ) -> tuple[float, tuple[str, str]]:
        """Return min_distance and the names of its pair (as Clearance.names), same cost."""
        scene = self.scene(scene)
        distance, first, second = self.nearest(world, scene)
        if first < 0:
            return distance, ('', '')
        bodies = len(self.bodies)
        other = self.names[second] if second < bodies else scene.name(second - bodies)
        return distance, (self.names[first], other)

    def nearest(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                ) -> tuple[float, int, int]:
        """
        Return min_distance, the body of its pair and the other: a body, or bodies + obstacle.

        (inf, -1, -1) with nothing to check.
        """
        scene = self.scene(scene)
        rows = self._rows(scene)
        placed = world[self._frames, :3] @ self._ends                  # (b, 3, 2)
        starts, ends = placed[:, :, 0], placed[:, :, 1]
        best = (float('inf'), -1, -1)
        if len(rows.first):
            all_starts = np.concatenate((starts.T, rows.round_starts), axis=1)   # (3, b + r)
            all_directions = np.concatenate(((ends - starts).T, rows.round_directions),
                                            axis=1)
            distance = segment_distances(      # take: cheaper than fancy indexing
                all_starts.take(rows.first, axis=1), all_directions.take(rows.first, axis=1),
                rows.first_squared, all_starts.take(rows.second, axis=1),
                all_directions.take(rows.second, axis=1), rows.second_squared) - rows.radii
            if len(scene.cylinder_rows):
                moving = self.moving
                z_start = starts[moving] @ scene.cylinder_axes.T - rows.cylinder_offsets
                z_end = ends[moving] @ scene.cylinder_axes.T - rows.cylinder_offsets
                slab = np.maximum(np.maximum(np.minimum(z_start, z_end),
                                             -np.maximum(z_start, z_end))
                                  - scene.cylinder_half_lengths, 0.0) - self.radii[moving, None]
                distance[rows.cylinder_rows] = np.maximum(distance[rows.cylinder_rows],
                                                          slab.ravel())
            row = int(distance.argmin())
            best = (float(distance[row]), int(rows.first[row]), int(rows.second_body[row]))
        if not len(scene.box_index):
            return best
        return self._nearest_box(starts[self.moving], ends[self.moving], rows, best)

    def _nearest_box(self, starts: np.ndarray, ends: np.ndarray, rows: _Rows,
                     best: tuple[float, int, int]) -> tuple[float, int, int]:
        """Return best or a nearer moving body-box row (see min_distance), as nearest does."""
        moving, radii = self.moving, self.radii[self.moving]
        local_start = starts @ rows.box_rotations + rows.box_translations   # (k, b, 3)
        local_end = ends @ rows.box_rotations + rows.box_translations
        lower, upper = segment_box_bounds(local_start, local_end, rows.half_sizes)
        lower = np.where(lower > 0.0, lower - radii, -np.inf)
        upper = upper - radii
        if not upper.size:
            return best
        box, body = np.unravel_index(int(upper.argmin()), upper.shape)
        if upper[box, body] < best[0]:
            best = (float(upper[box, body]), int(moving[body]), int(rows.box_second[box]))
        open_rows = (lower < best[0]) & (upper > lower + 1e-12)
        if not open_rows.any():
            return best
        radii = np.broadcast_to(radii, lower.shape)
        apart = open_rows & (lower > -np.inf)       # a separating axis: the edges decide
        candidates = []
        if apart.any():
            box = rows.box_of_row[apart]
            edges = segment_distances(
                *_repeat_segments(local_start[apart], local_end[apart], len(_EDGE_SIGNS)),
                rows.edge_starts[box].reshape(-1, 3).T,
                rows.edge_directions[box].reshape(-1, 3).T,
                rows.edge_squared[box].ravel()).reshape(len(box), -1).min(axis=1)
            candidates.append((edges - radii[apart], apart))
        touching = open_rows & (lower == -np.inf)
        if touching.any():
            half_sizes = np.broadcast_to(rows.half_sizes, local_start.shape)[touching]
            exact = segment_box_distance(local_start[touching], local_end[touching],
                                         half_sizes) - radii[touching]
            candidates.append((exact, touching))
        for values, mask in candidates:
            row = int(values.argmin())
            if values[row] < best[0]:
                box, body = (index[row] for index in np.nonzero(mask))
                best = (float(values[row]), int(moving[body]), int(rows.box_second[box]))
        return best

    def scene(self, obstacles: Scene | Sequence[Obstacle]) -> Scene:
        """
        Return obstacles as a Scene; the same obstacle objects as last time reuse the last.

        The scene holds the obstacles, so their identities stay theirs while it is kept.
        """
        if isinstance(obstacles, Scene):
            return obstacles
        key = tuple(map(id, obstacles))
        cached = self._last_scene           # one read: other threads may replace it
        if cached is None or cached[0] != key:
            cached = self._last_scene = (key, Scene(obstacles))
        return cached[1]

    def _rows(self, scene: Scene) -> _Rows:
        """Return the index arrays of the rows against `scene`, kept for the last scene."""
        cached = self._last_rows            # one read: other threads may replace it
        if cached is None or cached[0] is not scene:
            cached = self._last_rows = (scene, _Rows(self, scene))
        return cached[1]

    def clearance(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                  ) -> Clearance:
        """Return the smallest checked distance at FK frames `world`, naming the pair."""
        scene = self.scene(scene)
        pairs = self.pair_distances(world, scene)
        if not len(pairs.distances):
            return Clearance(float('inf'), ('', ''), np.full((2, 3), np.nan))
        row = int(np.argmin(pairs.distances))
        other = (self.names[pairs.second[row]] if row < pairs.self_pairs
                 else scene.name(int(pairs.second[row])))
        return Clearance(float(pairs.distances[row]), (self.names[pairs.first[row]], other),
                         np.stack([pairs.points_first[row], pairs.points_second[row]]))


_EDGE_AXES = np.repeat(np.eye(3), 4, axis=0)                        # (12, 3)
_EDGE_SIGNS = np.array([[-1.0 if k == axis else (u if k == (axis + 1) % 3 else v)
                         for k in range(3)]
                        for axis in range(3) for u in (-1.0, 1.0) for v in (-1.0, 1.0)])


def _repeat_segments(start: np.ndarray, end: np.ndarray, times: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (m, 3) segments each repeated `times`, as segment_distances' rows."""
    direction = end - start
    squared = np.einsum('ij,ij->i', direction, direction)
    return (np.repeat(start, times, axis=0).T, np.repeat(direction, times, axis=0).T,
            np.repeat(squared, times))


class _Rows:
    """The gathers of min_distance against one scene: self rows, then body-round rows."""

    def __init__(self, model: CollisionModel, scene: Scene) -> None:
        """Index segments stacked as [bodies, round obstacles]; boxes as (k, 1, ...) frames."""
        bodies, moving = len(model.bodies), len(model.moving)
        self.rounds = len(scene.round_index)
        body_rows = np.repeat(model.moving, self.rounds)
        round_rows = np.tile(np.arange(self.rounds), moving)
        self.first = np.concatenate([model.pairs[:, 0], body_rows])
        self.second = np.concatenate([model.pairs[:, 1], bodies + round_rows])
        self.radii = np.concatenate([model.radii[model.pairs[:, 1]] + model.radii[
            model.pairs[:, 0]], model.radii[body_rows] + scene.round_radii[round_rows]])
        self.round_starts = scene.round_starts.T.copy()
        self.round_directions = (scene.round_ends - scene.round_starts).T.copy()
        squared = np.concatenate([model.lengths_squared,
                                  np.sum(self.round_directions ** 2, axis=0)])
        # The other of each row as nearest names it: a body, or bodies + obstacle index.
        self.second_body = np.concatenate([model.pairs[:, 1],
                                           bodies + scene.round_index[round_rows]])
        self.box_second = bodies + scene.box_index
        self.first_squared = squared[self.first]
        self.second_squared = squared[self.second]
        self.cylinder_rows = (len(model.pairs) + np.arange(moving)[:, None] * self.rounds
                              + scene.cylinder_rows).ravel()
        self.cylinder_offsets = np.einsum('ij,ij->i', scene.cylinder_centres,
                                          scene.cylinder_axes)
        # x_local = R^T (x - t): as row vectors x @ R + (-t @ R), one matmul per box.
        self.box_rotations = scene.box_rotations
        self.box_translations = -np.einsum('ki,kij->kj', scene.box_translations,
                                           scene.box_rotations)[:, None, :]
        self.half_sizes = scene.half_sizes[:, None, :]
        self.box_of_row = np.repeat(np.arange(len(scene.box_index)), moving).reshape(-1, moving)
        # Each box's 12 edges in its frame: 4 along each axis, from the -h end.
        self.edge_starts = _EDGE_SIGNS * scene.half_sizes[:, None, :]          # (k, 12, 3)
        self.edge_directions = _EDGE_AXES * (2.0 * scene.half_sizes[:, None, :])
        self.edge_squared = np.sum(self.edge_directions ** 2, axis=2)


def _raise_to_end_planes(scene: Scene, starts: np.ndarray, ends: np.ndarray, offset: int,
                         rows_out: tuple[np.ndarray, ...]) -> None:
    """
    Replace a body-cylinder row's capsule bound by its end-plane bound where that is larger.

    The cylinder lies in the capsule about its axis and in the slab between its end planes,
    so both distances are lower bounds of the true one; the larger is kept, in place.
    """
    axis, on_first, on_second, radius_second = rows_out
    bodies, rounds, cylinders = len(starts), len(scene.round_index), len(scene.cylinder_rows)
    rows = (offset + np.arange(bodies)[:, None] * rounds + scene.cylinder_rows).ravel()
    body = np.repeat(np.arange(bodies), cylinders)
    tile = np.tile(np.arange(cylinders), bodies)
    slab, point, face = segment_slab(starts[body], ends[body], scene.cylinder_centres[tile],
                                     scene.cylinder_axes[tile],
                                     scene.cylinder_half_lengths[tile])
    better = slab > axis[rows] - radius_second[rows]
    rows = rows[better]
    axis[rows], on_first[rows], on_second[rows] = slab[better], point[better], face[better]
    radius_second[rows] = 0.0


def _boxes(scene: Scene, starts: np.ndarray, ends: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return body-box rows (body-major) of segment-box distances and base-frame points."""
    rotation = scene.box_inverse[:, None, :3, :3]
    translation = scene.box_inverse[:, None, :3, 3]
    local_start = (rotation @ starts[None, :, :, None])[..., 0] + translation
    local_end = (rotation @ ends[None, :, :, None])[..., 0] + translation
    distance, point, surface = segment_box(local_start, local_end,
                                           scene.half_sizes[:, None, :])
    box_rotation = scene.box_rotations[:, None]
    box_translation = scene.box_translations[:, None]
    point = (box_rotation @ point[..., None])[..., 0] + box_translation
    surface = (box_rotation @ surface[..., None])[..., 0] + box_translation
    return (distance.T.ravel(), point.transpose(1, 0, 2).reshape(-1, 3),
            surface.transpose(1, 0, 2).reshape(-1, 3))


def _surfaces(on_first: np.ndarray, on_second: np.ndarray, radius_first: np.ndarray,
              radius_second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the closest points moved from the axes onto the capsules' surfaces."""
    gap = on_second - on_first
    length = np.linalg.norm(gap, axis=1)
    unit = gap / np.where(length > 0.0, length, 1.0)[:, None]
    return on_first + radius_first[:, None] * unit, on_second - radius_second[:, None] * unit


def checked_pairs(model: CollisionModel, adjacent: Iterable[tuple[str, str]],
                  disabled: Iterable[tuple[str, str]], world_of: Callable[[np.ndarray],
                                                                          np.ndarray],
                  lower: np.ndarray, upper: np.ndarray, samples: int = SAMPLES,
                  seed: int = 0) -> list[tuple[int, int]]:
    """
    Return the self pairs worth checking: all but adjacent, disabled, never and always touching.

    world_of maps a joint vector to FK frames; configurations are drawn uniformly within
    lower..upper (+-pi where unlimited) from a generator seeded with `seed`, so the same
    model always gets the same pairs.
    """
    skip = {frozenset(pair) for pair in list(adjacent) + list(disabled)}
    candidates = [(a, b) for a in range(len(model.names)) for b in range(a + 1, len(model.names))
                  if frozenset((model.names[a], model.names[b])) not in skip]
    if not candidates or samples <= 0:
        return candidates
    low = np.where(np.isfinite(lower), lower, -np.pi)
    high = np.where(np.isfinite(upper), upper, np.pi)
    generator = np.random.default_rng(seed)
    placed = [model.segments(world_of(generator.uniform(low, high))) for _ in range(samples)]
    starts = np.array([start for start, _ in placed])        # (samples, bodies, 3)
    ends = np.array([end for _, end in placed])
    first, second = np.array(candidates).T
    distance = segment_segment(starts[:, first].reshape(-1, 3), ends[:, first].reshape(-1, 3),
                               starts[:, second].reshape(-1, 3),
                               ends[:, second].reshape(-1, 3))[0].reshape(samples, -1)
    touching = np.sum(distance < model.radii[first] + model.radii[second], axis=0)
    keep = (touching > 0) & (touching < samples)
    return [pair for pair, kept in zip(candidates, keep) if kept]


def srdf_disabled_pairs(srdf_xml: str | None) -> list[tuple[str, str]]:
    """Return the (link1, link2) of an SRDF's <disable_collisions> elements (none if None)."""
    if not srdf_xml:
        return []
    root = ElementTree.fromstring(srdf_xml)
    return [(element.get('link1', ''), element.get('link2', ''))
            for element in root.iter('disable_collisions')]
