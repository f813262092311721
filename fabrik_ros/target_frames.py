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
Where the IK node takes its targets, and tf2 for targets stamped in any other frame.

The controller's frame is the base link, or odom_frame with a free root ('' in a header
means that frame). A free root also takes base_link targets, where the body is as they
arrive (the body only translates: orientations stay as they are). Any other frame goes
through tf2, where tf2_ros is installed.
"""

from fabrik_ros.chain import rotation_from_quaternion
from fabrik_ros.controller import Target
from fabrik_ros.messages import TargetError, transform_orientation, transform_point
from geometry_msgs.msg import TransformStamped
import numpy as np
from rclpy.node import Node
from rclpy.time import Time

try:  # tf2_ros comes with a ROS install but has no PyPI wheel: frames are optional.
    from tf2_ros import Buffer, TransformException, TransformListener
except ImportError:
    Buffer = TransformListener = None
    TransformException = Exception


class TargetFrames:
    """Map targets from their header's frame into the controller's frame."""

    def __init__(self, node: Node, base_link: str, odom_frame: str, free: bool) -> None:
        """Listen to TF on `node` (where tf2_ros is installed)."""
        self.base_link = base_link
        self.free = free
        self.frame = odom_frame if free else base_link  # the controller's frame
        self._buffer = self._listener = None
        if Buffer is not None:
            self._buffer = Buffer()
            self._listener = TransformListener(self._buffer, node)

    def to_controller(self, target: Target, frame_id: str, body: np.ndarray) -> Target:
        """
        Return `target` (in `frame_id`) in the controller's frame; `body`: the free root's.

        Raises TargetError naming the frame when there is no way to transform it.
        """
        if frame_id == self.frame or not frame_id:
            return target
        if self.free and frame_id == self.base_link:
            return Target(target.position + body, target.orientation)
        transform = self._lookup(self.frame, frame_id, f"the target frame '{self.frame}'")
        translation, rotation = transform.transform.translation, transform.transform.rotation
        turn = np.array([rotation.x, rotation.y, rotation.z, rotation.w])
        return Target(
            transform_point(np.array([translation.x, translation.y, translation.z]), turn,
                            target.position),
            None if target.orientation is None
            else transform_orientation(turn, target.orientation))

    def _lookup(self, target: str, source: str, known: str) -> TransformStamped:
        """Return tf2's latest transform from `source` to `target`; TargetError if none."""
        if self._buffer is None:
            raise TargetError(f"frame '{source}' is not {known} and tf2_ros is not installed "
                              'to transform it')
        try:
            return self._buffer.lookup_transform(target, source, Time())
        except TransformException as error:
            raise TargetError(f"no transform from '{source}' to '{target}': {error}") from None

    def rotation_to_base(self, frame_id: str) -> np.ndarray:
        """
        Return the (3, 3) rotation from `frame_id`'s axes to the base link's, through tf2.

        For vectors such as a twist's. Raises TargetError naming the frame when there is no
        way to look it up.
        """
        transform = self._lookup(self.base_link, frame_id, 'the base or a tool frame')
        turn = transform.transform.rotation
        quaternion = np.array([turn.x, turn.y, turn.z, turn.w])
        norm = float(np.linalg.norm(quaternion))
        if not 1e-9 < norm < np.inf:
            raise TargetError(f"the transform from '{frame_id}' has no rotation: {turn}")
        return rotation_from_quaternion(quaternion / norm)
