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
Targets you drag in RViz: one interactive marker per effector, six degrees of freedom.

Each marker carries the six classic controls (move along and rotate about its x, y and z
axes, which turn with it, so they are the target tool frame's own axes) and a handle to
drag it freely in the view plane. While it is dragged, every pose update goes to the same
callback as a target_pose message would, so the arm follows the marker live; the node's
target window batches RViz's bursts.

``interactive_markers`` is a ROS package (not on PyPI): where it is missing,
``TargetMarkers.start`` logs one line and returns None, and the node goes on without it.
The marker and feedback conversions here need only visualization_msgs.
"""

from collections.abc import Callable, Sequence
import math

from fabrik_ros.messages import pose_message, TARGET_COLOUR
from geometry_msgs.msg import Pose, PoseStamped, Quaternion
import numpy as np
from visualization_msgs.msg import (InteractiveMarker, InteractiveMarkerControl,
                                    InteractiveMarkerFeedback, Marker)

try:
    from interactive_markers import InteractiveMarkerServer
except ImportError:  # not on PyPI; a ROS install has it (package.xml exec_depend)
    InteractiveMarkerServer = None

NAMESPACE = '~/target'  # topics <node>/target/update and /feedback, as rviz/arm.rviz shows
REACH_SCALE = 0.25  # of the longest reach: the size of the draggable targets
MIN_SCALE = 0.05  # metres
HALF = math.sqrt(0.5)
# Control orientations that turn a control's x axis onto the marker's x, y and z axes.
CONTROL_AXES = {'x': Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
                'y': Quaternion(x=0.0, y=0.0, z=HALF, w=HALF),
                'z': Quaternion(x=0.0, y=-HALF, z=0.0, w=HALF)}


def six_dof_marker(name: str, frame_id: str, pose: Pose, scale: float) -> InteractiveMarker:
    """
    Return an interactive marker at `pose` in `frame_id` with the six axis controls.

    `scale` (metres) sizes the rings and arrows; the handle in the middle, a sphere of a
    fifth of it, moves the marker in the view plane (and turns it with Ctrl held).
    """
    marker = InteractiveMarker(name=name, description=name, pose=pose, scale=scale)
    marker.header.frame_id = frame_id  # stamp zero: RViz uses the latest transform
    handle = Marker(type=Marker.SPHERE)
    handle.scale.x = handle.scale.y = handle.scale.z = scale / 5.0
    handle.color = TARGET_COLOUR
    handle.pose.orientation.w = 1.0
    marker.controls.append(InteractiveMarkerControl(
        name='move_3d', interaction_mode=InteractiveMarkerControl.MOVE_ROTATE_3D,
        always_visible=True, markers=[handle]))
    for axis, orientation in CONTROL_AXES.items():
        for mode, verb in ((InteractiveMarkerControl.MOVE_AXIS, 'move'),
                           (InteractiveMarkerControl.ROTATE_AXIS, 'rotate')):
            marker.controls.append(InteractiveMarkerControl(
                name=f'{verb}_{axis}', orientation=orientation, interaction_mode=mode,
                orientation_mode=InteractiveMarkerControl.INHERIT))
    return marker


def pose_from_feedback(feedback: InteractiveMarkerFeedback) -> PoseStamped | None:
    """Return the dragged target pose of a feedback message; None for other events."""
    if feedback.event_type != InteractiveMarkerFeedback.POSE_UPDATE:
        return None
    return PoseStamped(header=feedback.header, pose=feedback.pose)


class TargetMarkers:
    """
    An interactive marker server with one draggable target per effector.

    Feedback calls ``on_target(pose, effector_index)``; ``move`` puts a marker where a
    target from another source went, so the marker never lies about the target.
    """

    def __init__(self, server, frame_id: str, names: Sequence[str], poses: Sequence[Pose],
                 scale: float, on_target: Callable[[PoseStamped, int], None]) -> None:
        """Insert one marker per effector name at its pose and publish them."""
        self._server = server
        self._names = list(names)
        self._on_target = on_target
        for name, pose in zip(self._names, poses):
            self._server.insert(six_dof_marker(name, frame_id, pose, scale),
                                feedback_callback=self._on_feedback)
        self._server.applyChanges()

    @classmethod
    def start(cls, node, frame_id: str, names: Sequence[str], poses: Sequence[Pose],
              scale: float,
              on_target: Callable[[PoseStamped, int], None]) -> 'TargetMarkers | None':
        """Serve the markers on the node's NAMESPACE; None (logged) without the package."""
        if InteractiveMarkerServer is None:
            node.get_logger().info('interactive_markers is not installed: no draggable '
                                   'target in RViz (topics and 2D Goal Pose still work)')
            return None
        return cls(InteractiveMarkerServer(node, NAMESPACE), frame_id, names, poses, scale,
                   on_target)

    @classmethod
    def at_frames(cls, node, frame_id: str, names: Sequence[str], frames: np.ndarray,
                  base: np.ndarray,
                  on_target: Callable[[PoseStamped, int], None]) -> 'TargetMarkers | None':
        """Serve one marker per (4, 4) frame, sized to the farthest from `base` (metres)."""
        reach = float(np.max(np.linalg.norm(frames[:, :3, 3] - base, axis=1)))
        return cls.start(node, frame_id, names, [pose_message(frame) for frame in frames],
                         max(REACH_SCALE * reach, MIN_SCALE), on_target)

    def _on_feedback(self, feedback: InteractiveMarkerFeedback) -> None:
        pose = pose_from_feedback(feedback)
        if pose is not None and feedback.marker_name in self._names:
            self._on_target(pose, self._names.index(feedback.marker_name))

    def move(self, effector: int, pose: Pose) -> None:
        """Show effector `effector`'s marker at `pose` (in the markers' frame)."""
        self._server.setPose(self._names[effector], pose)
        self._server.applyChanges()

    def shutdown(self) -> None:
        """Remove the markers from RViz and the server's topics and service from the node."""
        self._server.shutdown()
