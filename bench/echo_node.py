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
A bare rclpy echo, PoseStamped in, JointState (x, y, z) out: the floor under ik_node.

node_bench.py streams targets through it exactly as through ik_node (same QoS, same
executor); what ik_node adds on top of this echo is the solve and its bookkeeping.
"""

from fabrik_ros.ik_node import TARGET_QOS
from fabrik_ros.node_main import run_node
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState


class EchoNode(Node):
    """Answer every target with a JointState carrying its position."""

    def __init__(self) -> None:
        """Wire target_pose in, joint_states out."""
        super().__init__('echo_node')
        self._publisher = self.create_publisher(JointState, 'joint_states', 10)
        self.create_subscription(PoseStamped, 'target_pose', self._on_target, TARGET_QOS)

    def _on_target(self, msg: PoseStamped) -> None:
        answer = JointState(name=['x', 'y', 'z'])
        answer.header.stamp = self.get_clock().now().to_msg()
        position = msg.pose.position
        answer.position = [position.x, position.y, position.z]
        self._publisher.publish(answer)


if __name__ == '__main__':
    run_node(EchoNode, 'echo_node')
