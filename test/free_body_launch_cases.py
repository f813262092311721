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
The launch_testing cases of test_launch_free_body.py: the documented free-body route.

    ros2 launch fabrik_ros arm.launch.py config:=spider.yaml params:=overlays/spider_free_body.yaml

A foot sent past its leg's reach pulls the body after it, and gets there. Imported
by test_launch_free_body.py only where the launch tests can run; see there.
"""

from arm_launch_cases import LAUNCH_FILE, LaunchProbe, SHARE_DIR
from fabrik_ros.chain import Chain
from fabrik_ros.config import chain_from_parameters, load_config
from geometry_msgs.msg import PoseStamped
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
import launch_testing.actions
import numpy as np
import pytest
from sensor_msgs.msg import JointState

TARGET = np.array([0.45, 0.0, -0.19])  # odom, metres: the documented target of leg1_foot
REACH_TOLERANCE = 2e-3  # metres between a measured foot (body included) and its goal
MIN_TRAVEL = 0.05  # metres the body must slide for the foot to get there
LEG_LENGTH = 0.3  # metres, the sum of spider.yaml's segment lengths


def spider() -> Chain:
    """Return the chain of config/spider.yaml."""
    return chain_from_parameters(load_config(SHARE_DIR / 'config' / 'spider.yaml'), SHARE_DIR)


@pytest.mark.launch_test
def generate_test_description() -> LaunchDescription:
    """Launch the spider with its free-body overlay, as getting-started does, without RViz."""
    arm = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
        launch_arguments={'config': 'spider.yaml', 'params': 'overlays/spider_free_body.yaml',
                          'rviz': 'false'}.items())
    return LaunchDescription([arm, launch_testing.actions.ReadyToTest()])


class TestBodyFollowsFoot(LaunchProbe):
    """The first foot reaches a target beyond its leg's reach; the body slides after it."""

    def test_far_foot_pulls_the_body_and_the_other_feet_stay(self) -> None:
        chain = spider()
        # The leg alone cannot get there: its foot is at most its links' length from its hip.
        hip = chain.joint_positions(chain.neutral())[0]
        self.assertGreater(np.linalg.norm(TARGET - hip), LEG_LENGTH)
        states: list[JointState] = []
        bodies: list[np.ndarray] = []
        self.node.create_subscription(JointState, 'joint_states', states.append, 100)
        self.node.create_subscription(
            PoseStamped, 'ik_node/body_pose',
            lambda msg: bodies.append(np.array([msg.pose.position.x, msg.pose.position.y,
                                                msg.pose.position.z])), 100)
        publisher = self.node.create_publisher(PoseStamped, 'leg1_foot/target_pose', 1)
        target = PoseStamped()
        target.header.frame_id = 'odom'
        target.pose.position.x, target.pose.position.y, target.pose.position.z = TARGET.tolist()
        target.pose.orientation.w = 1.0

        def feet() -> np.ndarray:
            by_name = dict(zip(states[-1].name, states[-1].position))
            q = np.array([by_name[name] for name in chain.joint_names])
            return chain.effector_positions(q) + bodies[-1]

        def arrived() -> bool:
            publisher.publish(target)  # until the node has discovered the probe
            return bool(states and bodies) and np.linalg.norm(bodies[-1]) >= MIN_TRAVEL \
                and np.linalg.norm(feet()[0] - TARGET) <= REACH_TOLERANCE

        self.assertTrue(self.spin_until(arrived),
                        f'body at {bodies[-1] if bodies else "?"}, foot at '
                        f'{feet()[0] if states and bodies else "?"}, target {TARGET}')
