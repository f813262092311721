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
A static scene in parameters: the obstacles a parameters file names, as flat parameters.

    obstacles: [table, pillar]
    obstacle:
      table: {type: box, size: [0.8, 0.6, 0.04], pose: [0.0, 0.5, 0.08, 0.0, 0.0, 0.0]}
      pillar: {type: cylinder, radius: 0.04, length: 0.6, pose: [0.1, 0.3, 0.4]}

rclpy (and fabrik_ros.config.load_config) flattens that to `obstacles` and
`obstacle.<name>.<field>`. The shapes are URDF's: a box takes `size` [x, y, z] (its edges),
a sphere `radius`, a cylinder `radius` and `length` (along its local z), metres, each
centred on its `pose`: [x, y, z], [x, y, z, roll, pitch, yaw] (radians, as a URDF origin's
rpy) or [x, y, z, qx, qy, qz, qw] (normalised), the origin of `frame_id` by default;
`frame_id` '' (or none) is the base link's frame. Each bad entry is refused in one line
naming the parameter, and the others are kept. Pure Python (no ROS).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import math
import re

from fabrik_ros.collision import Box, Cylinder, Obstacle, Sphere
from fabrik_ros.model.rotations import rotation_from_quaternion, rotation_from_rpy
import numpy as np

SCENE_LIST = 'obstacles'  # the parameter naming the scene's obstacles, in order
SCENE_PREFIX = 'obstacle.'  # obstacle.<name>.<field>
SHAPE_FIELDS = {'box': ('size',), 'sphere': ('radius',), 'cylinder': ('radius', 'length')}
FIELDS = ('type', 'size', 'radius', 'length', 'pose', 'frame_id')
NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')  # one parameter name component
MIN_QUATERNION_NORM = 1e-6


@dataclass(frozen=True)
class SceneObstacle:
    """One obstacle of the scene: its name, its shape posed in frame_id ('': the base)."""

    name: str
    obstacle: Obstacle
    frame_id: str = ''


def scene_obstacles(names: object, values: Mapping[str, object]
                    ) -> tuple[list[SceneObstacle], list[str]]:
    """
    Return the obstacles `names` lists, described in flat `values`, and the refusals.

    values holds parameters by name (others than obstacle.* are ignored); a refusal is one
    line naming the parameter at fault; the obstacle it concerns is left out, the rest kept.
    """
    problems: list[str] = []
    listed = _names(names, problems)
    list_said = bool(problems)  # then names it leaves out are not said again
    fields: dict[str, dict[str, object]] = {name: {} for name in listed}
    refused, unlisted = set(), set()
    for key, value in values.items():
        if not key.startswith(SCENE_PREFIX):
            continue
        name, _, field = key[len(SCENE_PREFIX):].rpartition('.')
        if name not in fields:
            if not list_said and name not in unlisted:
                problems.append(f'{SCENE_PREFIX}{name}.*: {name!r} is not in {SCENE_LIST} '
                                f'{listed}')
            unlisted.add(name)
        elif field not in FIELDS:  # a misspelled frame_id must not leave it in the base's
            problems.append(f'{key}: unknown field {field!r}, {name!r} left out; expected '
                            f'one of {list(FIELDS)}')
            refused.add(name)
        elif value is not None:  # a declared parameter left unset
            fields[name][field] = value
    scene = []
    for name in (name for name in listed if name not in refused):
        try:
            scene.append(scene_obstacle(name, fields[name]))
        except ValueError as error:
            problems.append(f'{SCENE_PREFIX}{name}: {error}')
    return scene, problems


def _names(names: object, problems: list[str]) -> list[str]:
    """Return the valid, distinct names of the obstacles list; note what is wrong."""
    if names is None or (isinstance(names, (list, tuple)) and not names):
        return []
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        problems.append(f'{SCENE_LIST} must be a list of names, got {names!r}')
        return []
    listed = []
    for name in names:
        if not NAME.fullmatch(name):
            problems.append(f'{SCENE_LIST}: {name!r} is no name (letters, digits, _)')
        elif name in listed:
            problems.append(f'{SCENE_LIST}: {name!r} is listed twice')
        else:
            listed.append(name)
    return listed


def scene_obstacle(name: str, fields: Mapping[str, object]) -> SceneObstacle:
    """Return one obstacle from its fields (type, sizes, pose, frame_id); ValueError if bad."""
    kind = fields.get('type')
    if kind not in SHAPE_FIELDS:
        raise ValueError(f'type must be one of {list(SHAPE_FIELDS)}, got {kind!r}')
    needed = SHAPE_FIELDS[kind]
    missing = [field for field in needed if field not in fields]
    extra = [field for field in ('size', 'radius', 'length')
             if field in fields and field not in needed]
    if missing or extra:
        raise ValueError(f'a {kind} takes {" and ".join(needed)}'
                         + (f'; missing {", ".join(missing)}' if missing else '')
                         + (f'; not {", ".join(extra)}' if extra else ''))
    frame_id = fields.get('frame_id', '')
    if not isinstance(frame_id, str):
        raise ValueError(f'frame_id must be a string, got {frame_id!r}')
    pose = pose_matrix(fields.get('pose', [0.0, 0.0, 0.0]))
    if kind == 'box':
        size = _numbers(fields['size'], 'size')
        if len(size) != 3:
            raise ValueError(f'size must be [x, y, z] edge lengths, got {fields["size"]!r}')
        obstacle: Obstacle = Box(tuple(size), pose)
    elif kind == 'sphere':
        obstacle = Sphere(_number(fields['radius'], 'radius'),
                          center=tuple(pose[:3, 3].tolist()))
    else:
        obstacle = Cylinder(_number(fields['radius'], 'radius'),
                            _number(fields['length'], 'length'), pose)
    return SceneObstacle(name, obstacle, frame_id)


def pose_matrix(values: object) -> np.ndarray:
    """Return the (4, 4) pose of [x, y, z], plus roll, pitch, yaw or qx, qy, qz, qw."""
    numbers = _numbers(values, 'pose')
    pose = np.eye(4)
    if len(numbers) == 6:
        pose[:3, :3] = rotation_from_rpy(numbers[3:])
    elif len(numbers) == 7:
        norm = math.sqrt(sum(v * v for v in numbers[3:]))
        if not MIN_QUATERNION_NORM <= norm < math.inf:
            raise ValueError(f'pose quaternion {numbers[3:]} has no orientation')
        pose[:3, :3] = rotation_from_quaternion([v / norm for v in numbers[3:]])
    elif len(numbers) != 3:
        raise ValueError('pose must be [x, y, z], [x, y, z, roll, pitch, yaw] or '
                         f'[x, y, z, qx, qy, qz, qw], got {len(numbers)} numbers')
    pose[:3, 3] = numbers[:3]
    return pose


def _numbers(values: object, what: str) -> list[float]:
    """Return a list of finite numbers (integers welcome), or raise ValueError."""
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f'{what} must be a list of numbers, got {values!r}')
    numbers = [float(v) for v in values]
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f'{what} must be finite, got {numbers}')
    return numbers


def _number(value: object, what: str) -> float:
    """Return a positive finite number of metres, or raise ValueError."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) \
            or not 0.0 < float(value) < math.inf:
        raise ValueError(f'{what} must be a positive number of metres, got {value!r}')
    return float(value)
