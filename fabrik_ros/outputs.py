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
What the IK node publishes on every command: the joint commands and a free body's pose.

`CommandOutputs` holds the publishers of the chosen outputs (parameter `outputs`) and
fills one JointState again for every command: rclpy serialises a message when it is
published, so keeping it saves building one per target on the node's hot path; its joint
values go in as array('d'), which the message takes as it is (a list has each value checked).
`BodyOutputs` publishes where a free root went, as TF odom_frame -> base_link on /tf (as
tf2_ros's TransformBroadcaster does) and on ~/body_pose. A command and the body pose it
moves with carry one stamp, so a listener can pair them.
"""

from array import array

from builtin_interfaces.msg import Time
from fabrik_ros.chain import Chain
from fabrik_ros.controller import Command, IkController
from fabrik_ros.messages import body_pose, body_transform, joint_trajectory
from geometry_msgs.msg import PoseStamped
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

try:  # tf2_msgs comes with a ROS install but has no PyPI wheel: ~/body_pose has it all too.
    from tf2_msgs.msg import TFMessage
except ImportError:
    TFMessage = None

# A trajectory point due at once would make a JointTrajectoryController jump to it.
MIN_TRAJECTORY_DURATION = 0.01  # seconds
TF_QOS = QoSProfile(depth=100)  # tf2_ros.TransformBroadcaster's


class CommandOutputs:
    """Publish each command on every chosen output (see the parameter `outputs`)."""

    def __init__(self, node: Node, outputs: set[str], command_topic: str) -> None:
        """Advertise the chosen outputs only."""
        self.publishers = {
            output: node.create_publisher(msg_type, topic, 10) for output, msg_type, topic in (
                ('joint_state', JointState, command_topic),
                ('joint_trajectory', JointTrajectory, '~/joint_trajectory'),
                ('forward_command', Float64MultiArray, '~/commands'))
            if output in outputs}
        self._joint_state = JointState()
        self._model: Chain | None = None  # whose joints _joint_state names

    def publish(self, model: Chain, controller: IkController, command: Command,
                stamp: Time) -> None:
        """Send `command` (chain joint order) to every output, as each expects it."""
        if 'joint_state' in self.publishers:
            if model is not self._model:
                self._model = model
                # Every joint, mimic followers included: robot_state_publisher needs them all.
                self._joint_state = JointState(name=list(model.all_joint_names))
            msg = self._joint_state
            msg.header.stamp = stamp
            msg.position = array('d', model.expand(command.position).tolist())
            msg.velocity = array('d', [] if command.velocity is None
                                 else model.expand_velocity(command.velocity).tolist())
            self.publishers['joint_state'].publish(msg)
        if 'joint_trajectory' in self.publishers:
            self.publishers['joint_trajectory'].publish(joint_trajectory(
                model.joint_names, command.position,
                max(controller.duration(command), MIN_TRAJECTORY_DURATION)))
        if 'forward_command' in self.publishers:
            self.publishers['forward_command'].publish(Float64MultiArray(
                data=command.position[controller.command_order].tolist()))


class BodyOutputs:
    """Publish a free body's pose: TF odom_frame -> base_link and ~/body_pose."""

    def __init__(self, node: Node, odom_frame: str, base_link: str) -> None:
        """Advertise ~/body_pose, and /tf where tf2_msgs is installed (else say so)."""
        self._clock = node.get_clock()
        self._odom_frame, self._base_link = odom_frame, base_link
        self.pose_publisher = node.create_publisher(PoseStamped, '~/body_pose', 10)
        self.tf_publisher = None
        if TFMessage is None:
            node.get_logger().warning('tf2_msgs is not installed: the body pose goes to '
                                      '~/body_pose only, not to TF')
        else:
            self.tf_publisher = node.create_publisher(TFMessage, '/tf', TF_QOS)

    def publish(self, body: np.ndarray, stamp: Time | None = None) -> None:
        """Publish the body at `body` (metres in odom_frame), stamped `stamp` (default now)."""
        transform = body_transform(self._clock.now().to_msg() if stamp is None else stamp,
                                   self._odom_frame, self._base_link, body)
        if self.tf_publisher is not None:
            self.tf_publisher.publish(TFMessage(transforms=[transform]))
        self.pose_publisher.publish(body_pose(transform))
