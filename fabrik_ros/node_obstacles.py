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
The IK node's obstacles: visualization_msgs/MarkerArray on ~/obstacles, kept by (ns, id).

CUBE, SPHERE and CYLINDER markers become Box, Sphere and Cylinder obstacles in the
controller's frame (a marker's header frame goes through TargetFrames: tf2 for any other
frame). ADD (MODIFY) sets a marker's obstacle, DELETE removes it, DELETEALL removes every
one before it in the array. The scale is the size: a CUBE's edges, a SPHERE's diameter and
a CYLINDER's diameter and height (the larger of x and y, so the obstacle holds the marker);
an all-zero orientation reads as none. A marker of another type, a bad size or an unknown
frame is refused in one line and leaves the others as they are. Solves keep clear of the
obstacles on a pinned root (IkController.set_obstacles).
"""

from __future__ import annotations

from typing import Callable

from fabrik_ros.collision import Box, Cylinder, Obstacle, Sphere
from fabrik_ros.controller import IkController, Target
from fabrik_ros.messages import TargetError
from fabrik_ros.model.rotations import quaternion_from_rotation, rotation_from_quaternion
from fabrik_ros.target_frames import TargetFrames
import numpy as np
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

OBSTACLES_QOS = 10
Key = tuple[str, int]


class NodeObstacles:
    """The obstacles of ~/obstacles, handed to the controller whenever they change."""

    def __init__(self, node: Node, frames: TargetFrames,
                 controller: Callable[[], IkController | None]) -> None:
        """Subscribe on `node`; `controller` returns the current controller (or None)."""
        self._node = node
        self._frames = frames
        self._controller = controller
        self.obstacles: dict[Key, Obstacle] = {}
        node.create_subscription(MarkerArray, '~/obstacles', self._on_markers, OBSTACLES_QOS)

    def _on_markers(self, msg: MarkerArray) -> None:
        """Take an array's markers in order; log each refusal, then apply the obstacles."""
        body = np.zeros(3)
        for problem in updated(self.obstacles, msg.markers,
                               lambda pose, frame: self._in_frame(pose, frame, body)):
            self._node.get_logger().warning(f'obstacle refused: {problem}')
        self.apply(self._controller())

    def apply(self, controller: IkController | None) -> None:
        """Hand the obstacles to controller (a new one: after a model change)."""
        if controller is not None:
            controller.set_obstacles(list(self.obstacles.values()))

    def _in_frame(self, pose: np.ndarray, frame_id: str, body: np.ndarray) -> np.ndarray:
        """Return a (4, 4) pose of `frame_id` in the controller's frame (TargetError if not)."""
        quaternion = np.asarray(quaternion_from_rotation(pose[:3, :3]), dtype=float)
        moved = self._frames.to_controller(Target(pose[:3, 3], quaternion), frame_id, body)
        result = np.eye(4)
        result[:3, :3] = rotation_from_quaternion(moved.orientation)
        result[:3, 3] = moved.position
        return result


def updated(obstacles: dict[Key, Obstacle], markers: list[Marker],
            in_frame: Callable[[np.ndarray, str], np.ndarray]) -> list[str]:
    """
    Apply markers in order to obstacles (by (ns, id)), in place; return the refusals.

    in_frame maps a (4, 4) pose in a frame id to the controller's frame, raising
    TargetError where it cannot.
    """
    problems = []
    for marker in markers:
        key = (marker.ns, int(marker.id))
        if marker.action == Marker.DELETEALL:
            obstacles.clear()
        elif marker.action == Marker.DELETE:
            obstacles.pop(key, None)
        elif marker.action == Marker.ADD:
            try:
                obstacles[key] = obstacle_of(marker, in_frame)
            except (TargetError, ValueError) as error:
                problems.append(f'marker {key[0]!r} {key[1]}: {error}')
        else:
            problems.append(f'marker {key[0]!r} {key[1]}: action {marker.action} is not ADD, '
                            'DELETE or DELETEALL')
    return problems


def obstacle_of(marker: Marker, in_frame: Callable[[np.ndarray, str], np.ndarray]
                ) -> Obstacle:
    """Return a CUBE, SPHERE or CYLINDER marker as an obstacle; ValueError if it is none."""
    kinds = {Marker.CUBE: 'CUBE', Marker.SPHERE: 'SPHERE', Marker.CYLINDER: 'CYLINDER'}
    if marker.type not in kinds:
        raise ValueError(f'type {marker.type} is not CUBE, SPHERE or CYLINDER')
    scale = np.array([marker.scale.x, marker.scale.y, marker.scale.z], dtype=float)
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0.0):
        raise ValueError(f'{kinds[marker.type]} scale must be positive metres, got '
                         f'{scale.tolist()}')
    position, orientation = marker.pose.position, marker.pose.orientation
    quaternion = np.array([orientation.x, orientation.y, orientation.z, orientation.w])
    if not np.all(np.isfinite(quaternion)) or not np.isfinite(
            [position.x, position.y, position.z]).all():
        raise ValueError('pose is not finite')
    norm = float(np.linalg.norm(quaternion))
    pose = np.eye(4)
    pose[:3, :3] = rotation_from_quaternion(quaternion / norm) if norm > 1e-9 else np.eye(3)
    pose[:3, 3] = (position.x, position.y, position.z)
    pose = in_frame(pose, marker.header.frame_id)
    if marker.type == Marker.CUBE:
        return Box(tuple(scale.tolist()), pose)
    if marker.type == Marker.SPHERE:
        return Sphere(float(scale.max()) / 2.0, center=tuple(pose[:3, 3].tolist()))
    return Cylinder(float(max(scale[0], scale[1])) / 2.0, float(scale[2]), pose)
