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
Obstacles as exact primitives in the base frame, and a scene of them stacked for the kernels.

Box(size_xyz, pose), Sphere(radius, center), Cylinder(radius, length, pose): pose a (4, 4)
rigid transform in the base link's frame (identity by default), the cylinder's axis its
local z, the box centred on its pose; metres. A Scene holds a list of them as the arrays
the distance kernels take, so a caller that checks many configurations against the same
obstacles stacks them once. Imports numpy and the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence, Union

import numpy as np


def _pose(pose: object, what: str) -> np.ndarray:
    """Return a read-only (4, 4) rigid transform, or raise ValueError naming the obstacle."""
    array = np.eye(4) if pose is None else np.array(pose, dtype=float)
    if array.shape != (4, 4) or not np.all(np.isfinite(array)):
        raise ValueError(f'{what} pose must be a finite (4, 4) transform, got {array.tolist()}')
    rotation = array[:3, :3]
    if (not np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-6)
            or np.linalg.det(rotation) < 0 or not np.allclose(array[3], (0, 0, 0, 1))):
        raise ValueError(f'{what} pose is not a rigid transform: {array.tolist()}')
    array.setflags(write=False)
    return array


def _positive(value: float, what: str) -> float:
    """Return value as a float, or raise ValueError unless it is finite and positive."""
    number = float(value)
    if not (np.isfinite(number) and number > 0.0):
        raise ValueError(f'{what} must be a finite positive length in metres, got {value!r}')
    return number


@dataclass(frozen=True)
class Box:
    """A box of edge lengths size_xyz (metres) centred on pose, edges along its axes."""

    size_xyz: tuple[float, float, float]
    pose: np.ndarray = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Check the sizes and the pose."""
        size = tuple(_positive(v, 'Box size') for v in self.size_xyz)
        if len(size) != 3:
            raise ValueError(f'Box size_xyz needs 3 lengths, got {self.size_xyz!r}')
        object.__setattr__(self, 'size_xyz', size)
        object.__setattr__(self, 'pose', _pose(self.pose, 'Box'))


@dataclass(frozen=True)
class Sphere:
    """A sphere of radius (metres) about center (metres, base frame)."""

    radius: float
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        """Check the radius and the centre."""
        object.__setattr__(self, 'radius', _positive(self.radius, 'Sphere radius'))
        center = np.asarray(self.center, dtype=float)
        if center.shape != (3,) or not np.all(np.isfinite(center)):
            raise ValueError(f'Sphere center must be 3 finite numbers, got {self.center!r}')
        object.__setattr__(self, 'center', tuple(center.tolist()))

    @property
    def pose(self) -> np.ndarray:
        """Return the (4, 4) transform of the centre."""
        pose = np.eye(4)
        pose[:3, 3] = self.center
        return pose


@dataclass(frozen=True)
class Cylinder:
    """A solid cylinder of radius and length (metres) centred on pose, axis its local z."""

    radius: float
    length: float
    pose: np.ndarray = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Check the dimensions and the pose."""
        object.__setattr__(self, 'radius', _positive(self.radius, 'Cylinder radius'))
        object.__setattr__(self, 'length', _positive(self.length, 'Cylinder length'))
        object.__setattr__(self, 'pose', _pose(self.pose, 'Cylinder'))


Obstacle = Union[Box, Sphere, Cylinder]


class Scene:
    """
    Obstacles stacked for the kernels: round ones as segments, boxes as frames.

    Spheres are zero-length segments with their radius; a cylinder is its axis segment with
    its radius (the capsule around it) plus its end planes (`slab_*`), whose bound the
    kernels take where it is larger; a box is its inverse pose and half sizes.
    """

    def __init__(self, obstacles: Sequence[Obstacle] = (), names: Sequence[str] = ()) -> None:
        """
        Stack the obstacles; raise TypeError naming one that is not a primitive.

        names: how results name them (the scene's names), in order; those left out are
        named by their kind and place.
        """
        self.obstacles = tuple(obstacles)
        self.names = tuple(names)
        starts, ends, radii, round_index = [], [], [], []
        box_inverse, half_sizes, box_index = [], [], []
        for index, obstacle in enumerate(self.obstacles):
            if isinstance(obstacle, Box):
                box_inverse.append(np.linalg.inv(obstacle.pose))
                half_sizes.append(np.array(obstacle.size_xyz) / 2.0)
                box_index.append(index)
                continue
            if isinstance(obstacle, Sphere):
                center = np.array(obstacle.center)
                starts.append(center)
                ends.append(center)
            elif isinstance(obstacle, Cylinder):
                axis = obstacle.pose[:3, 2] * obstacle.length / 2.0
                starts.append(obstacle.pose[:3, 3] - axis)
                ends.append(obstacle.pose[:3, 3] + axis)
            else:
                raise TypeError(f'obstacle {index} is a {type(obstacle).__name__}; expected '
                                'Box, Sphere or Cylinder')
            radii.append(obstacle.radius)
            round_index.append(index)
        self.round_starts = np.array(starts).reshape(-1, 3)
        self.round_ends = np.array(ends).reshape(-1, 3)
        self.round_radii = np.array(radii)
        self.round_index = np.array(round_index, dtype=int)
        cylinders = [i for i, k in enumerate(round_index)
                     if isinstance(self.obstacles[k], Cylinder)]
        self.cylinder_rows = np.array(cylinders, dtype=int)
        self.cylinder_axes = np.array([self.obstacles[round_index[i]].pose[:3, 2]
                                       for i in cylinders]).reshape(-1, 3)
        self.cylinder_centres = np.array([self.obstacles[round_index[i]].pose[:3, 3]
                                          for i in cylinders]).reshape(-1, 3)
        self.cylinder_half_lengths = np.array([self.obstacles[round_index[i]].length / 2.0
                                               for i in cylinders])
        self.box_inverse = np.array(box_inverse).reshape(-1, 4, 4)
        self.box_rotations = np.array([self.obstacles[k].pose[:3, :3]
                                       for k in box_index]).reshape(-1, 3, 3)
        self.box_translations = np.array([self.obstacles[k].pose[:3, 3]
                                          for k in box_index]).reshape(-1, 3)
        self.half_sizes = np.array(half_sizes).reshape(-1, 3)
        self.box_index = np.array(box_index, dtype=int)

    def __len__(self) -> int:
        """Return the number of obstacles."""
        return len(self.obstacles)

    def name(self, index: int) -> str:
        """Return how results name obstacle `index`: its name, else its kind and place."""
        if index < len(self.names):
            return self.names[index]
        return f'obstacle {index} ({type(self.obstacles[index]).__name__.lower()})'
