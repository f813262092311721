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
Closed-form distances between segments, boxes and slabs, vectorised over many pairs.

Capsules are segments with radii, so every distance here is between a segment and a
segment, a box or a slab; callers subtract the radii. Each function returns the distances
(metres) and the closest points, arrays in, arrays out, no loops in Python. Imports numpy
only.
"""

from __future__ import annotations

import numpy as np

_TINY = 1e-18   # m^2: below this a segment is a point


def segment_segment(p1: np.ndarray, q1: np.ndarray, p2: np.ndarray, q2: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return the distances (k,) between segments p1q1 and p2q2 (k, 3), and closest points.

    Exact (Ericson, Real-Time Collision Detection, 5.1.9), zero-length segments included;
    the points are on each segment, (k, 3) each.
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.einsum('ij,ij->i', d1, d1)
    e = np.einsum('ij,ij->i', d2, d2)
    b = np.einsum('ij,ij->i', d1, d2)
    c = np.einsum('ij,ij->i', d1, r)
    f = np.einsum('ij,ij->i', d2, r)
    denominator = a * e - b * b
    parallel = denominator <= _TINY * np.maximum(a * e, _TINY)
    s = np.where(parallel, 0.0, (b * f - c * e) / np.where(parallel, 1.0, denominator))
    np.clip(s, 0.0, 1.0, out=s)
    point2 = e > _TINY
    t = np.where(point2, (b * s + f) / np.where(point2, e, 1.0), 0.0)
    t_clamped = np.clip(t, 0.0, 1.0)
    point1 = a > _TINY
    # s's best answer to t: where t was clamped or p2q2 is a point, this is what moves s;
    # elsewhere it is s again (the optimum is each one's best answer to the other).
    s = np.where(point1, np.clip((b * t_clamped - c) / np.where(point1, a, 1.0), 0.0, 1.0),
                 0.0)
    closest1 = p1 + s[:, None] * d1
    closest2 = p2 + t_clamped[:, None] * d2
    return np.linalg.norm(closest1 - closest2, axis=1), closest1, closest2


def segment_box(start: np.ndarray, end: np.ndarray, half_sizes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return signed distances (...,) from segments to centred boxes, and the closest points.

    start, end: (..., 3) in each box's frame; half_sizes broadcasts against them. The
    squared distance to a box is convex and piecewise quadratic along the segment, with
    breaks where a coordinate crosses a face plane: the exact minimum is the smallest of
    each piece's clamped vertex. A segment that enters the box gets the deepest signed
    distance among those candidates (negative; the sign is exact, the depth a bound).
    Points: on the segment and on the box surface, (..., 3) each, box frame.
    """
    signed, points, on_box = _box_candidates(start, end, half_sizes)
    best = np.argmin(signed, axis=-1)[..., None]
    distance = np.take_along_axis(signed, best, axis=-1)[..., 0]
    point = np.take_along_axis(points, best[..., None], axis=-2)[..., 0, :]
    surface = np.take_along_axis(on_box, best[..., None], axis=-2)[..., 0, :]
    inside = distance <= 0.0
    if np.any(inside):
        surface = np.where(inside[..., None], _nearest_face(point, half_sizes), surface)
    return distance, point, surface


def _box_candidates(start: np.ndarray, end: np.ndarray, half_sizes: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return segment_box's candidates: signed distances (..., 7), points and box points."""
    direction = end - start
    safe = np.where(np.abs(direction) > 1e-15, direction, 1e-15)
    breaks = np.concatenate([(half_sizes - start) / safe, (-half_sizes - start) / safe,
                             np.zeros(start.shape[:-1] + (1,)),
                             np.ones(start.shape[:-1] + (1,))], axis=-1)
    breaks = np.sort(np.clip(breaks, 0.0, 1.0), axis=-1)             # (..., 8)
    low, high = breaks[..., :-1], breaks[..., 1:]                      # (..., 7)
    middle = start[..., None, :] + ((low + high) / 2)[..., None] * direction[..., None, :]
    half = half_sizes[..., None, :]
    over, under = middle > half, middle < -half
    active = over | under                       # the faces whose planes the piece is beyond
    offset = (start[..., None, :] - half * (over.astype(float) - under)) * active
    slope = direction[..., None, :] * active
    curvature = np.einsum('...i,...i->...', slope, slope)
    linear = np.einsum('...i,...i->...', offset, slope)
    vertex = np.where(curvature > _TINY, -linear / (curvature + _TINY), low)
    t = np.minimum(np.maximum(vertex, low), high)                      # (..., 7)
    points = start[..., None, :] + t[..., None] * direction[..., None, :]
    on_box = np.minimum(np.maximum(points, -half), half)
    excess = points - on_box
    outside = np.sqrt(np.einsum('...i,...i->...', excess, excess))
    depth = np.max(np.abs(points) - half, axis=-1)
    return np.where(outside > 0.0, outside, np.minimum(depth, 0.0)), points, on_box


def _nearest_face(point: np.ndarray, half_sizes: np.ndarray) -> np.ndarray:
    """Return each inside point moved onto the box face nearest to it."""
    gap = half_sizes - np.abs(point)
    axis = np.argmin(gap, axis=-1)[..., None]
    moved = point.copy()
    sign = np.where(np.take_along_axis(point, axis, axis=-1) < 0, -1.0, 1.0)
    half = np.broadcast_to(half_sizes, point.shape)
    np.put_along_axis(moved, axis, sign * np.take_along_axis(half, axis, axis=-1), axis=-1)
    return moved


def segment_slab(start: np.ndarray, end: np.ndarray, centre: np.ndarray, axis: np.ndarray,
                 half_length: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return distances (k,) from segments to slabs |(x - centre)·axis| <= half_length.

    Zero where a segment meets its slab; points: the segment's end nearest the slab and
    its projection on the slab's face, (k, 3) each.
    """
    z_start = np.einsum('ij,ij->i', start - centre, axis)
    z_end = np.einsum('ij,ij->i', end - centre, axis)
    above = np.minimum(z_start, z_end) - half_length
    below = -half_length - np.maximum(z_start, z_end)
    distance = np.maximum(np.maximum(above, below), 0.0)
    use_start = np.where(above > below, z_start <= z_end, z_start >= z_end)
    point = np.where(use_start[:, None], start, end)
    z = np.where(use_start, z_start, z_end)
    face = np.clip(z, -half_length, half_length)
    return distance, point, point + (face - z)[:, None] * axis
