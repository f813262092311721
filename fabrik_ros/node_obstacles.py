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
The IK node's obstacles: a static scene from parameters, and ~/obstacles markers by (ns, id).

The parameters `obstacles` and `obstacle.<name>.*` (fabrik_ros.scene) describe a static
scene, read at start-up; a bad entry is refused in one line and the others are kept. On
~/obstacles, visualization_msgs/MarkerArray: CUBE, SPHERE and CYLINDER markers become Box,
Sphere and Cylinder obstacles. ADD (MODIFY) sets a marker's obstacle, DELETE removes it,
DELETEALL removes every one before it in the array (the scene's stay: they are changed in
the parameters). The scale is the size: a CUBE's edges, a SPHERE's diameter and a
CYLINDER's diameter and height (the larger of x and y, so the obstacle holds the marker);
an all-zero orientation reads as none. A marker of another type, a bad size or an unknown
frame is refused in one line and leaves the others as they are.

Every frame goes through TargetFrames into the controller's (tf2 for frames other than the
base); a scene obstacle whose frame tf2 does not know yet is looked up again every
RETRY_PERIOD. Solves keep clear of both kinds on a pinned root (IkController.set_obstacles),
and `markers` draws them as the node holds them, for ~/markers.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Callable

from builtin_interfaces.msg import Time
from fabrik_ros.chain import ChainError
from fabrik_ros.collision import Box, Cylinder, Obstacle, Sphere
from fabrik_ros.controller import IkController, Target
from fabrik_ros.ik_parameters import parameter_overrides
from fabrik_ros.messages import pose_message, TargetError
from fabrik_ros.model.rotations import quaternion_from_rotation, rotation_from_quaternion
from fabrik_ros.scene import FIELDS, SCENE_LIST, scene_obstacles, SCENE_PREFIX, SceneObstacle
from fabrik_ros.target_frames import TargetFrames
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

OBSTACLES_QOS = 10
RETRY_PERIOD = 1.0  # seconds between lookups of scene frames tf2 did not know
OBSTACLE_COLOUR = ColorRGBA(r=0.55, g=0.57, b=0.62, a=0.6)
OBSTACLE_NAMESPACE = 'obstacles'  # of the ~/markers that show them
Key = tuple[str, int]


class NodeObstacles:
    """The scene's and ~/obstacles' obstacles, handed to the controller when they change."""

    def __init__(self, node: Node, frames: TargetFrames,
                 controller: Callable[[], IkController | None]) -> None:
        """Read the scene's parameters, subscribe on `node`; `controller`: the current one."""
        self._node = node
        self._frames = frames
        self._controller = controller
        self.obstacles: dict[Key, Obstacle] = {}  # from ~/obstacles
        self.scene: dict[str, Obstacle] = {}  # from the parameters, in the base frame
        self._pending, self._retry = self._declare_scene(), None
        self._resolve()
        node.create_subscription(MarkerArray, '~/obstacles', self._on_markers, OBSTACLES_QOS)

    def _declare_scene(self) -> list[SceneObstacle]:
        """Declare the scene's parameters (read-only), log each refusal; return its obstacles."""
        node = self._node
        values = parameter_overrides(node, SCENE_PREFIX)
        scene, problems = scene_obstacles(node.get_parameter(SCENE_LIST).value, values)
        for problem in problems:
            node.get_logger().error(f'obstacle refused: {problem}')
        # The fields given for listed names, so that ros2 param get / dump show them.
        names = {item.name for item in scene}
        declared = [(key, value, ParameterDescriptor(read_only=True, dynamic_typing=True))
                    for key, value in values.items()
                    if key[len(SCENE_PREFIX):].rpartition('.')[0] in names
                    and key.rpartition('.')[2] in FIELDS]
        node.declare_parameters('', declared)
        return scene

    def _resolve(self) -> None:
        """Move the scene's obstacles into the base frame where tf2 knows their frames."""
        waiting = []
        for item in self._pending:
            try:
                pose = self._in_frame(item.obstacle.pose, item.frame_id, np.zeros(3))
            except TargetError as error:
                if self._retry is None:  # said once; looked up again until found
                    self._node.get_logger().warning(
                        f'obstacle {item.name!r} waits for its frame: {error}')
                waiting.append(item)
                continue
            self.scene[item.name] = posed(item.obstacle, pose)
        if waiting and self._retry is None:
            self._retry = self._node.create_timer(RETRY_PERIOD, self._resolve)
        elif not waiting and self._retry is not None:
            self._node.destroy_timer(self._retry)
            self._retry = None
        if len(waiting) < len(self._pending):
            self._pending = waiting
            self._node.get_logger().info(
                f'scene: {", ".join(self.scene)} kept clear of'
                + (f'; waiting for the frames of {", ".join(i.name for i in waiting)}'
                   if waiting else ''))
            self.apply(self._controller())

    def _on_markers(self, msg: MarkerArray) -> None:
        """Take an array's markers in order; log each refusal, then apply the obstacles."""
        body = np.zeros(3)
        for problem in updated(self.obstacles, msg.markers,
                               lambda pose, frame: self._in_frame(pose, frame, body)):
            self._node.get_logger().warning(f'obstacle refused: {problem}')
        self.apply(self._controller())

    def held(self) -> list[Obstacle]:
        """Return every obstacle in the base frame: the scene's, then ~/obstacles'."""
        return [*self.scene.values(), *self.obstacles.values()]

    def names(self) -> list[str]:
        """Return held()'s names: the scene's parameter names, then markers' 'ns/id'."""
        return [*self.scene, *(f'{ns}/{marker_id}' for ns, marker_id in self.obstacles)]

    def apply(self, controller: IkController | None) -> None:
        """Hand the obstacles to controller (a new one: after a model change)."""
        if controller is None:
            return
        held = self.held()
        if held:  # its collision model (pair sorting: up to a second) now, not in a solve
            chain = controller.settings.chain
            with suppress(ChainError):  # unreadable geometry: the solver says why
                chain.clearance(chain.neutral())
        controller.set_obstacles(held, self.names())

    def markers(self, frame_id: str, stamp: Time) -> list[Marker]:
        """Return the obstacles held as markers in `frame_id` (the controller's frame)."""
        return obstacle_markers(self.held(), frame_id, stamp)

    def _in_frame(self, pose: np.ndarray, frame_id: str, body: np.ndarray) -> np.ndarray:
        """Return a (4, 4) pose of `frame_id` in the controller's frame (TargetError if not)."""
        quaternion = np.asarray(quaternion_from_rotation(pose[:3, :3]), dtype=float)
        moved = self._frames.to_controller(Target(pose[:3, 3], quaternion), frame_id, body)
        result = np.eye(4)
        result[:3, :3] = rotation_from_quaternion(moved.orientation)
        result[:3, 3] = moved.position
        return result


def posed(obstacle: Obstacle, pose: np.ndarray) -> Obstacle:
    """Return `obstacle` with its pose (a sphere: its centre) replaced by `pose`."""
    if isinstance(obstacle, Box):
        return Box(obstacle.size_xyz, pose)
    if isinstance(obstacle, Sphere):
        return Sphere(obstacle.radius, center=tuple(pose[:3, 3].tolist()))
    return Cylinder(obstacle.radius, obstacle.length, pose)


def obstacle_markers(obstacles: list[Obstacle], frame_id: str, stamp: Time) -> list[Marker]:
    """
    Draw obstacles as CUBE, SPHERE and CYLINDER markers, as ~/obstacles takes them.

    Namespace OBSTACLE_NAMESPACE, ids in the order given; poses in `frame_id`.
    """
    markers = []
    for index, obstacle in enumerate(obstacles):
        marker = Marker(ns=OBSTACLE_NAMESPACE, id=index, action=Marker.ADD,
                        color=OBSTACLE_COLOUR, pose=pose_message(obstacle.pose))
        marker.header.frame_id = frame_id
        marker.header.stamp = stamp
        if isinstance(obstacle, Box):
            marker.type = Marker.CUBE
            scale = obstacle.size_xyz
        elif isinstance(obstacle, Sphere):
            marker.type = Marker.SPHERE
            scale = (2.0 * obstacle.radius,) * 3
        else:
            marker.type = Marker.CYLINDER
            scale = (2.0 * obstacle.radius, 2.0 * obstacle.radius, obstacle.length)
        marker.scale.x, marker.scale.y, marker.scale.z = (float(v) for v in scale)
        markers.append(marker)
    return markers


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
