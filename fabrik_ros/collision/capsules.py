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
Capsules that contain given geometry: the conservative link shapes of the collision model.

A capsule (segment start-end, radius) contains a convex body when it contains the body's
extreme points, since a point's distance to a segment is convex. Every primitive is
reduced to points with a slack (how far the body can reach beyond them): a box to its
corners (slack 0), a sphere to its centre (slack its radius), a cylinder to points on its
rims (slack the chord error of the sampling), a mesh to its vertices (its convex hull holds
it). Imports numpy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

RIM_POINTS = 32             # samples per cylinder rim
_ROUNDING = 1e-9            # m added to every radius against rounding


class Capsule(NamedTuple):
    """A segment and a radius (metres), in the frame of the joint that moves it."""

    start: np.ndarray       # (3,)
    end: np.ndarray         # (3,)
    radius: float


def box_points(size: np.ndarray, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return a box's 8 corners (pose applied) and zero slack."""
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    corners = signs * (np.asarray(size) / 2.0)
    return corners @ pose[:3, :3].T + pose[:3, 3], np.zeros(8)


def sphere_points(radius: float, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return a sphere's centre with its radius as slack."""
    return pose[None, :3, 3].copy(), np.array([radius])


def cylinder_points(radius: float, length: float, pose: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """
    Return points on a cylinder's two rims and the chord slack of the sampling.

    Every rim point lies within 2 r sin(pi / (2 N)) of a sample, and a capsule that holds
    the samples grown by that holds the rims, hence the cylinder.
    """
    angles = np.linspace(0.0, 2.0 * np.pi, RIM_POINTS, endpoint=False)
    ring = np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)
    points = np.concatenate([np.column_stack([ring, np.full(RIM_POINTS, z)])
                             for z in (-length / 2.0, length / 2.0)])
    slack = 2.0 * radius * np.sin(np.pi / (2 * RIM_POINTS))
    return points @ pose[:3, :3].T + pose[:3, 3], np.full(len(points), slack)


def fit_capsule(points: np.ndarray, slack: np.ndarray) -> Capsule:
    """
    Return a capsule that holds every ball (points[i], slack[i]), along the principal axis.

    The axis is the points' principal direction through their centroid; the radius the
    largest radial reach; the ends as short as every ball allows (a sphere when the body is
    as wide as it is long).
    """
    centre = points.mean(axis=0)
    offsets = points - centre
    if len(points) > 1 and np.ptp(points, axis=0).max() > 0.0:
        axis = np.linalg.svd(offsets, full_matrices=False)[2][0]
    else:
        axis = np.array([0.0, 0.0, 1.0])
    along = offsets @ axis
    radial = np.linalg.norm(offsets - along[:, None] * axis, axis=1)
    radius = float(np.max(radial + slack)) + _ROUNDING
    room = np.sqrt(np.maximum((radius - slack) ** 2 - radial ** 2, 0.0))
    top = float(np.max(along - room))
    bottom = float(np.min(along + room))
    if top >= bottom:
        return Capsule(centre + bottom * axis, centre + top * axis, radius)
    middle = centre + (top + bottom) / 2.0 * axis
    # Every ball then reaches the single point `middle` within `radius`; a ball about it
    # may be smaller still.
    reach = float(np.max(np.linalg.norm(points - middle, axis=1) + slack)) + _ROUNDING
    return Capsule(middle, middle.copy(), min(radius, reach))
