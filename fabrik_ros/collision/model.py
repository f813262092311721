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
from weakref import WeakKeyDictionary
import xml.etree.ElementTree as ElementTree

from fabrik_ros.collision.closest import closest_points
from fabrik_ros.collision.distance import segment_box, segment_segment, segment_slab
from fabrik_ros.collision.nearest import (bounds, CheckRows, clear_of, nearest,
                                          nearest_pair)
from fabrik_ros.collision.shapes import Box, Cylinder, Obstacle, Scene
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
        self.body_frames = np.array([body.frame for body in self.bodies], dtype=int)
        ends = np.ones((len(self.bodies), 4, 2))
        for row, body in enumerate(self.bodies):
            ends[row, :3, 0], ends[row, :3, 1] = body.start, body.end
        self.local_ends = ends
        self.lengths_squared = np.sum((ends[:, :3, 1] - ends[:, :3, 0]) ** 2, axis=1)
        self.radii = np.array([body.radius for body in self.bodies])
        self._pair_radii = self.radii[pairs[:, 0]] + self.radii[pairs[:, 1]]
        # Bodies on the base frame never move: no configuration changes their distance to
        # an obstacle (a table the base stands on touches it always), so only the moving
        # bodies are checked against obstacles.
        self.moving = np.flatnonzero(self.body_frames > 0)
        self.described = False  # from a URDF's <collision> geometry (see build)
        # Per scene while it lives: a solver's scene and a caller's list (its scene) can
        # alternate without rebuilding either.
        self._rows_of: WeakKeyDictionary[Scene, CheckRows] = WeakKeyDictionary()
        self._last_scene: tuple[tuple[int, ...], Scene] | None = None

    @property
    def pair_names(self) -> list[tuple[str, str]]:
        """Return the checked self pairs by link name."""
        return [(self.names[a], self.names[b]) for a, b in self.pairs]

    def segments(self, world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return each body's segment ends (b, 3) and (b, 3) in the base frame from FK frames."""
        placed = world[self.body_frames, :3] @ self.local_ends
        return placed[:, :, 0], placed[:, :, 1]

    def pair_distances(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = (),
                       within: float | None = None) -> PairDistances:
        """
        Return every checked pair's distance and closest points at FK frames `world`.

        within (metres): only the pairs closer than that, in the same order; the check's
        bounds rule out most of the others without measuring them, the rest are measured
        one by one (fabrik_ros.collision.closest). Where closest points are not unique
        (parallel segments, a segment parallel to a box face) either may be given.
        """
        scene = self.scene(scene)
        if within is not None:
            return self._near_pairs(world, scene, within)
        moving = self.moving
        rounds, boxes = len(scene.round_index), len(scene.box_index)
        return self._distances(
            world, scene, self.pairs,
            (np.repeat(moving, rounds), np.tile(np.arange(rounds), len(moving))),
            (np.repeat(moving, boxes), np.tile(np.arange(boxes), len(moving))))

    def _near_pairs(self, world: np.ndarray, scene: Scene, within: float) -> PairDistances:
        """Return pair_distances' rows closer than `within`, measured one pair at a time."""
        rows = self._rows(scene)
        flat, points = bounds(rows, world)
        kept, meets_box = [], []
        for pair in sorted(set(rows.entry_pairs[flat < within].tolist())):
            found = closest_points(rows, points, pair)
            if found is None:
                meets_box.append(pair)
            elif found[0] - self.radii[rows.pairs[pair][1]] - found[3] < within:
                kept.append((pair, found))
        firsts = [rows.pairs[pair][1] for pair, _ in kept]
        seconds = [other if kind == 0 else (scene.round_index if kind == 1 else
                                            scene.box_index)[other]
                   for kind, _, other in (rows.pairs[pair] for pair, _ in kept)]
        radius_first = self.radii[np.array(firsts, dtype=int)]
        radius_second = np.array([found[3] for _, found in kept])
        on_first = np.array([found[1] for _, found in kept]).reshape(-1, 3)
        on_second = np.array([found[2] for _, found in kept]).reshape(-1, 3)
        surface_first, surface_second = _surfaces(on_first, on_second, radius_first,
                                                  radius_second)
        near = PairDistances(
            np.array([found[0] for _, found in kept]) - radius_first - radius_second,
            np.array(firsts, dtype=int), np.array(seconds, dtype=int), surface_first,
            surface_second, sum(rows.pairs[pair][0] == 0 for pair, _ in kept))
        if not meets_box:   # a body through a box: the batched kernel's depth rules
            return near
        boxes = self._distances(world, scene, self.pairs[:0], (self.moving[:0],) * 2, (
            np.array([rows.pairs[pair][1] for pair in meets_box], dtype=int),
            np.array([rows.pairs[pair][2] for pair in meets_box], dtype=int)))
        closer = boxes.distances < within
        order = [pair for pair, _ in kept] + [pair for pair, keep in zip(meets_box, closer)
                                              if keep]
        merged = np.argsort(np.array(order), kind='stable')
        return PairDistances(*(np.concatenate((mine, theirs[closer]))[merged]
                               for mine, theirs in zip(near[:5], boxes[:5])), near.self_pairs)

    def _distances(self, world: np.ndarray, scene: Scene, selves: np.ndarray,
                   round_pairs: tuple[np.ndarray, np.ndarray],
                   box_pairs: tuple[np.ndarray, np.ndarray]) -> PairDistances:
        """Return the distances of the given self, body-round and body-box pairs (rows)."""
        starts, ends = self.segments(world)
        first, second = selves[:, 0], selves[:, 1]
        body_rows, round_rows = round_pairs
        axis, on_first, on_second = segment_segment(
            np.concatenate([starts[first], starts[body_rows]]),
            np.concatenate([ends[first], ends[body_rows]]),
            np.concatenate([starts[second], scene.round_starts[round_rows]]),
            np.concatenate([ends[second], scene.round_ends[round_rows]]))
        radius_second = np.concatenate([self.radii[second], scene.round_radii[round_rows]])
        cylinders = np.flatnonzero(np.isin(round_rows, scene.cylinder_rows))
        if len(cylinders):
            _raise_to_end_planes(scene, starts[body_rows[cylinders]], ends[body_rows[cylinders]],
                                 np.searchsorted(scene.cylinder_rows, round_rows[cylinders]),
                                 len(first) + cylinders, (axis, on_first, on_second,
                                                          radius_second))
        firsts = [first, body_rows]
        seconds = [second, scene.round_index[round_rows]]
        box_bodies, box_rows = box_pairs
        if len(box_rows):
            box_axis, box_first, box_second = _boxes(scene, starts[box_bodies],
                                                     ends[box_bodies], box_rows)
            axis = np.concatenate([axis, box_axis])
            on_first = np.concatenate([on_first, box_first])
            on_second = np.concatenate([on_second, box_second])
            radius_second = np.concatenate([radius_second, np.zeros(len(box_rows))])
            firsts.append(box_bodies)
            seconds.append(scene.box_index[box_rows])
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

        Equal to clearance(...).distance to rounding, with less work: every pair bounded
        in one batch, only the pairs a bound cannot rule out measured exactly, no closest
        points (fabrik_ros.collision.nearest).
        """
        return self.nearest(world, scene)[0]

    def is_clear(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = (),
                 distance: float = 0.0) -> bool:
        """
        Return whether every checked pair is at least `distance` (metres) apart at `world`.

        The same as min_distance(world, scene) >= distance, cheaper: only the pairs whose
        bound is below `distance` are measured, and the first one found closer ends it.
        """
        return clear_of(self, self._rows(self.scene(scene)), world, float(distance))

    def nearest_names(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = (),
                      floor: float = -float('inf')) -> tuple[float, tuple[str, str]]:
        """
        Return min_distance and the names of its pair (as Clearance.names), same cost.

        floor (metres): where the smallest distance is below it, the first pair found
        below it instead (its distance and names), found with less work.
        """
        scene = self.scene(scene)
        distance, first, second = self.nearest(world, scene, floor)
        return distance, self.body_names(scene, first, second)

    def body_names(self, scene: Scene, first: int, second: int) -> tuple[str, str]:
        """Return the names of nearest's body and other (as Clearance.names; -1: '')."""
        if first < 0:
            return '', ''
        bodies = len(self.bodies)
        other = self.names[second] if second < bodies else scene.name(second - bodies)
        return self.names[first], other

    def nearest(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = (),
                floor: float = -float('inf')) -> tuple[float, int, int]:
        """
        Return min_distance, the body of its pair and the other: a body, or bodies + obstacle.

        (inf, -1, -1) with nothing to check; floor: as nearest_names takes it.
        """
        scene = self.scene(scene)
        return nearest(self, self._rows(scene), world, floor)

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

    def check_rows(self, obstacles: Scene | Sequence[Obstacle]) -> CheckRows:
        """Return the hot check's bounds and pairs against obstacles (nearest.CheckRows)."""
        return self._rows(self.scene(obstacles))

    def _rows(self, scene: Scene) -> CheckRows:
        """Return the bounds and exact pairs against `scene`, kept while the scene lives."""
        rows = self._rows_of.get(scene)
        if rows is None:
            rows = self._rows_of[scene] = CheckRows(self, scene)
        return rows

    def clearance(self, world: np.ndarray, scene: Scene | Sequence[Obstacle] = ()
                  ) -> Clearance:
        """
        Return the smallest checked distance at FK frames `world`, naming the pair.

        The distance is min_distance's; the closest points are found for that pair only.
        """
        scene = self.scene(scene)
        rows = self._rows(scene)
        if not rows.any:
            return Clearance(float('inf'), ('', ''), np.full((2, 3), np.nan))
        distance, pair, points = nearest_pair(rows, world)
        kind, first, second = rows.pairs[pair]
        found = closest_points(rows, points, pair)
        if kind == 0:
            other = self.names[second]
        else:
            second = (scene.round_index if kind == 1 else scene.box_index)[second]
            other = scene.name(second)
        if found is None:       # a body through a box: the batched kernel's depth rules
            starts, ends = self.segments(world)
            on_first, on_second, radius_second = _obstacle_points(
                scene, second, starts[[first]], ends[[first]])
        else:
            _, on_first, on_second, radius_second = found
        surfaces = _surfaces(np.reshape(on_first, (1, 3)), np.reshape(on_second, (1, 3)),
                             self.radii[[first]], np.array([radius_second]))
        return Clearance(distance, (self.names[first], other), np.concatenate(surfaces))


def _obstacle_points(scene: Scene, index: int, start: np.ndarray, end: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the closest points (1, 3) of a segment to obstacle `index`, and its radius."""
    obstacle = scene.obstacles[index]
    if isinstance(obstacle, Box):
        row = np.flatnonzero(scene.box_index == index)[:1]
        _, point, surface = _boxes(scene, start, end, row)
        return point, surface, 0.0
    row = int(np.flatnonzero(scene.round_index == index)[0])
    axis, on_first, on_second = segment_segment(start, end, scene.round_starts[[row]],
                                                scene.round_ends[[row]])
    if isinstance(obstacle, Cylinder):
        slab, point, face = segment_slab(start, end, obstacle.pose[None, :3, 3],
                                         obstacle.pose[None, :3, 2],
                                         np.array([obstacle.length / 2.0]))
        if slab[0] > axis[0] - obstacle.radius:
            return point, face, 0.0
    return on_first, on_second, obstacle.radius


def _raise_to_end_planes(scene: Scene, starts: np.ndarray, ends: np.ndarray,
                         cylinders: np.ndarray, rows: np.ndarray,
                         rows_out: tuple[np.ndarray, ...]) -> None:
    """
    Replace body-cylinder rows' capsule bounds by their end-plane bounds where larger.

    starts, ends: the rows' segments; cylinders: their cylinders (indices of the scene's
    cylinder arrays); rows: where they are in rows_out. The cylinder lies in the capsule
    about its axis and in the slab between its end planes, so both distances are lower
    bounds of the true one; the larger is kept, in place.
    """
    axis, on_first, on_second, radius_second = rows_out
    slab, point, face = segment_slab(starts, ends, scene.cylinder_centres[cylinders],
                                     scene.cylinder_axes[cylinders],
                                     scene.cylinder_half_lengths[cylinders])
    better = slab > axis[rows] - radius_second[rows]
    rows = rows[better]
    axis[rows], on_first[rows], on_second[rows] = slab[better], point[better], face[better]
    radius_second[rows] = 0.0


def _boxes(scene: Scene, starts: np.ndarray, ends: np.ndarray, boxes: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return segment-box distances of segments (k, 3) to boxes (k,), base-frame points."""
    rotation = scene.box_inverse[boxes, :3, :3]
    translation = scene.box_inverse[boxes, :3, 3]
    local_start = np.einsum('kij,kj->ki', rotation, starts) + translation
    local_end = np.einsum('kij,kj->ki', rotation, ends) + translation
    distance, point, surface = segment_box(local_start, local_end, scene.half_sizes[boxes])
    box_rotation = scene.box_rotations[boxes]
    box_translation = scene.box_translations[boxes]
    return (distance, np.einsum('kij,kj->ki', box_rotation, point) + box_translation,
            np.einsum('kij,kj->ki', box_rotation, surface) + box_translation)


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
