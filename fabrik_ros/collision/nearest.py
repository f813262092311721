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
The hot check: the smallest checked distance of one configuration in a few batched steps.

numpy's cost on arrays this small is per call, not per element, so every pair is one row
of the same few operations: all segment-segment rows at once (self pairs, bodies against
round obstacles, bodies against every box edge, in the base frame where the obstacles
stand still), then the segments' ends in every box's frame at once, then one minimum. All
that depends only on the model and the scene (the gathers, the edges, the squared lengths
and their products) is stacked once per scene in CheckRows. Imports numpy only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabrik_ros.collision.shapes import Scene
import numpy as np

if TYPE_CHECKING:   # the model imports this module
    from fabrik_ros.collision.model import CollisionModel

_TINY = 1e-18       # as distance._TINY: the branch-free segment kernel's guard
EDGES = 12
# Each box's 12 edges in its frame: 4 along each axis, from the -h end.
_EDGE_AXES = np.repeat(np.eye(3), 4, axis=0)                        # (12, 3)
_EDGE_SIGNS = np.array([[-1.0 if k == axis else (u if k == (axis + 1) % 3 else v)
                         for k in range(3)]
                        for axis in range(3) for u in (-1.0, 1.0) for v in (-1.0, 1.0)])


class CheckRows:
    """
    One model's rows against one scene: which segments each row pairs, and the constants.

    Segment columns: the bodies, then the round obstacles (spheres as points, cylinders as
    axes), then every box edge (base frame). Rows: self pairs, moving body x round
    obstacle, then moving body x box x edge (body-major), whose minimum over the edges
    joins the ends' distance to the box in the box's own rows.
    """

    def __init__(self, model: CollisionModel, scene: Scene) -> None:
        """Stack the scene's segments and the rows' gathers and constants."""
        bodies, moving = len(model.bodies), model.moving
        self.moving = moving
        self.moving_count = count = len(moving)
        rounds, boxes = len(scene.round_index), len(scene.box_index)
        self.boxes = boxes
        edge_starts, edge_directions = _box_edges(scene)
        self.fixed_starts = np.concatenate((scene.round_starts, edge_starts)).T.copy()
        self.fixed_directions = np.concatenate((scene.round_ends - scene.round_starts,
                                                edge_directions)).T.copy()
        squared = np.concatenate([model.lengths_squared,
                                  np.sum(self.fixed_directions ** 2, axis=0)])
        body_rows = np.repeat(moving, rounds)
        round_rows = np.tile(np.arange(rounds), count)
        edge_body = np.repeat(moving, EDGES * boxes)
        edge_rows = bodies + rounds + np.tile(np.arange(EDGES * boxes), count)
        self.first = np.concatenate([model.pairs[:, 0], body_rows, edge_body])
        self.second = np.concatenate([model.pairs[:, 1], bodies + round_rows, edge_rows])
        self.radii = np.concatenate([model.radii[model.pairs[:, 1]] + model.radii[
            model.pairs[:, 0]], model.radii[body_rows] + scene.round_radii[round_rows],
            np.zeros(len(edge_body))])
        first_squared, second_squared = squared[self.first], squared[self.second]
        self.second_squared = second_squared
        self.squared_product = first_squared * second_squared
        self.first_guarded = first_squared + _TINY
        self.second_guarded = second_squared + _TINY
        self.round_end = len(model.pairs) + count * rounds    # rows before the edges
        # Which pair each candidate is, as nearest names it: (body, body or
        # bodies + obstacle index); box candidates follow the round rows, body-major.
        self.names_first = np.concatenate([self.first[:self.round_end],
                                           np.repeat(moving, boxes)])
        self.names_second = np.concatenate([model.pairs[:, 1],
                                            bodies + scene.round_index[round_rows],
                                            bodies + np.tile(scene.box_index, count)])
        self.moving_radii = model.radii[moving, None]
        self.half_sizes = scene.half_sizes[None]                           # (1, k, 3)
        self.negative_half_sizes = -self.half_sizes
        # Per (body, box) row, so masks pick them without broadcast_to (slow in Python).
        self.row_half_sizes = np.broadcast_to(self.half_sizes, (count, boxes, 3)).copy()
        self.row_radii = np.broadcast_to(self.moving_radii, (count, boxes)).copy()
        self._projection(model, scene)

    def _projection(self, model: CollisionModel, scene: Scene) -> None:
        """
        Stack every box's frame and every cylinder's axis as one affine map of row vectors.

        x_local = R^T (x - t) is x @ R + (-t @ R); a cylinder's height along its axis is
        x @ a - a . centre: one matmul and one sum for all of them.
        """
        count, pairs = self.moving_count, len(model.pairs)
        self.cylinders = len(scene.cylinder_rows)
        self.cylinder_rows = (pairs + np.arange(count)[:, None] * len(scene.round_index)
                              + scene.cylinder_rows).ravel()
        self.cylinder_half_lengths = scene.cylinder_half_lengths
        self.box_columns = 3 * self.boxes
        rotations = scene.box_rotations.transpose(1, 0, 2).reshape(3, -1)    # (3, 3k)
        translations = -np.einsum('ki,kij->kj', scene.box_translations,
                                  scene.box_rotations).ravel()
        self.projection = np.concatenate((rotations, scene.cylinder_axes.T), axis=1)
        self.projection_offsets = np.concatenate((translations, -np.einsum(
            'ij,ij->i', scene.cylinder_centres, scene.cylinder_axes)))


def _box_edges(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    """Return every box's 12 edges as base-frame starts and directions, (12 k, 3) each."""
    local_starts = _EDGE_SIGNS * scene.half_sizes[:, None, :]             # (k, 12, 3)
    local_directions = _EDGE_AXES * (2.0 * scene.half_sizes[:, None, :])
    rotations = scene.box_rotations                                       # (k, 3, 3)
    starts = local_starts @ rotations.transpose(0, 2, 1) + scene.box_translations[:, None]
    directions = local_directions @ rotations.transpose(0, 2, 1)
    return starts.reshape(-1, 3), directions.reshape(-1, 3)


def nearest(model: CollisionModel, rows: CheckRows, world: np.ndarray
            ) -> tuple[float, int, int]:
    """
    Return the smallest checked distance at FK frames `world`, its body and the other.

    The other: a body, or bodies + obstacle index; (inf, -1, -1) with nothing to check.
    A body-box candidate is the nearer of the segment's ends' and the box edges' distances
    where the segment misses the box (the closest point of a face to a segment that misses
    it is at an end of it or over an edge), else segment_box's signed depth (see
    _touching).
    """
    if not len(rows.names_first):
        return float('inf'), -1, -1
    placed = world[model.body_frames, :3] @ model.local_ends       # (b, 3, 2)
    starts, ends = placed[:, :, 0], placed[:, :, 1]
    all_starts = np.concatenate((starts.T, rows.fixed_starts), axis=1)
    all_directions = np.concatenate(((ends - starts).T, rows.fixed_directions), axis=1)
    first, second = rows.first, rows.second
    start1, direction1 = all_starts.take(first, axis=1), all_directions.take(first, axis=1)
    direction2 = all_directions.take(second, axis=1)
    offset = start1 - all_starts.take(second, axis=1)
    b = np.add.reduce(direction1 * direction2, axis=0)     # not .sum: no wrapper
    c = np.add.reduce(direction1 * offset, axis=0)
    f = np.add.reduce(direction2 * offset, axis=0)
    s = (b * f - c * rows.second_squared) / (rows.squared_product - b * b + _TINY)
    s = np.minimum(np.maximum(s, 0.0), 1.0)
    t = np.minimum(np.maximum((b * s + f) / rows.second_guarded, 0.0), 1.0)
    s = np.minimum(np.maximum((b * t - c) / rows.first_guarded, 0.0), 1.0)
    gap = offset + s * direction1 - t * direction2
    distance = np.sqrt(np.add.reduce(gap * gap, axis=0)) - rows.radii
    if rows.cylinders or rows.boxes:
        points = placed[rows.moving].transpose(2, 0, 1).reshape(-1, 3)   # starts, then ends
        projected = points @ rows.projection + rows.projection_offsets
        if rows.cylinders:
            _raise_to_end_planes(rows, projected[:, rows.box_columns:], distance)
        if rows.boxes:
            distance = np.concatenate((distance[:rows.round_end], _box_distances(
                rows, projected[:, :rows.box_columns], distance)))
    row = int(distance.argmin())
    return float(distance[row]), int(rows.names_first[row]), int(rows.names_second[row])


def _raise_to_end_planes(rows: CheckRows, heights: np.ndarray, distance: np.ndarray) -> None:
    """Raise each body-cylinder row to its end-plane bound where that is larger, in place."""
    count = rows.moving_count
    z_start, z_end = heights[:count], heights[count:]                 # (m, c) each
    slab = np.maximum(np.maximum(np.minimum(z_start, z_end), -np.maximum(z_start, z_end))
                      - rows.cylinder_half_lengths, 0.0) - rows.moving_radii
    distance[rows.cylinder_rows] = np.maximum(distance[rows.cylinder_rows], slab.ravel())


def _box_distances(rows: CheckRows, local: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Return the body-box distances (m k,), body-major, from the edge rows and the ends."""
    count = rows.moving_count
    local = local.reshape(2 * count, rows.boxes, 3)                     # (2m, k, 3)
    beyond_upper = local - rows.half_sizes
    beyond_lower = rows.negative_half_sizes - local
    gaps = np.maximum(np.minimum(beyond_upper[:count], beyond_upper[count:]),
                      np.minimum(beyond_lower[:count], beyond_lower[count:]))
    signed = np.maximum(beyond_upper, beyond_lower)                    # |x| - h
    excess = np.maximum(signed, 0.0)
    squared = np.add.reduce(excess * excess, axis=2)
    ends = np.sqrt(np.minimum(squared[:count], squared[count:]))          # (m, k)
    edges = np.minimum.reduce(distance[rows.round_end:].reshape(count, rows.boxes, EDGES),
                              axis=2)
    boxes = np.minimum(ends, edges) - rows.moving_radii
    touching = np.maximum.reduce(gaps, axis=2) <= 0.0     # no box axis separates them
    if touching.any():
        depth = np.maximum.reduce(signed, axis=2)     # > 0 outside, else minus the depth
        _touching(rows, local[:count][touching], local[count:][touching],
                  np.minimum(depth[:count], depth[count:])[touching], touching, boxes)
    return boxes.ravel()


def _touching(rows: CheckRows, start: np.ndarray, end: np.ndarray, depth: np.ndarray,
              touching: np.ndarray, boxes: np.ndarray) -> None:
    """
    Correct the body-box distances no box axis separates, in place.

    A segment that misses the box keeps the nearer of its ends' and the edges' distances;
    one that enters it (slab clipping: its parameter intervals inside the three slabs
    overlap within 0..1) gets segment_box's signed depth: the deeper of its ends
    inside the box, else zero (to rounding; the candidates inside are its ends and points
    on the faces).
    """
    half_sizes = rows.row_half_sizes[touching]
    direction = end - start
    safe = np.where(np.abs(direction) > 1e-15, direction, 1e-15)
    upper, lower = (half_sizes - start) / safe, (-half_sizes - start) / safe
    enter = np.maximum.reduce(np.minimum(upper, lower), axis=1)
    leave = np.minimum.reduce(np.maximum(upper, lower), axis=1)
    enters = np.maximum(enter, 0.0) <= np.minimum(leave, 1.0)
    if enters.any():
        values = boxes[touching]
        values[enters] = np.minimum(depth[enters], 0.0) - rows.row_radii[touching][enters]
        boxes[touching] = values
