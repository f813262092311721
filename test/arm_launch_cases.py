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
The launch_testing cases of test_launch_arm.py: a target on target_pose moves the simulated arm.

Imported by test_launch_arm.py only where launch, launch_ros and launch_testing are
installed and fabrik_ros is in the ament index; see there.
"""

import math
import os
from pathlib import Path
import time
import unittest

from ament_index_python.packages import get_package_share_directory
from fabrik_ros.chain import Chain, quaternion_from_rotation
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.paths import rotation_angles
from geometry_msgs.msg import PoseStamped
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
import launch_testing.actions
import launch_testing.asserts
import numpy as np
import pytest
import rclpy
from sensor_msgs.msg import JointState

SHARE_DIR = Path(get_package_share_directory('fabrik_ros'))
# Loopback-only DDS also when run by `launch_test` directly, without test/conftest.py.
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ['ROS_LOCALHOST_ONLY'] = '1'
os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 100 + 1))

LAUNCH_FILE = Path(__file__).resolve().parents[1] / 'launch' / 'arm.launch.py'
REACH_TOLERANCE = 1e-3  # metres between the measured tip and the target
LIMIT_SLACK = 1e-9  # radians of floating-point slack on the joint limits
TIMEOUT = 30.0  # seconds for the simulated arm to get there (velocity limited)


def demo_arm() -> Chain:
    """Return the chain of config/arm.yaml, the launch file's default config."""
    return chain_from_parameters(load_config(SHARE_DIR / 'config' / 'arm.yaml'), SHARE_DIR)


def reachable_target(chain: Chain) -> np.ndarray:
    """Return the (4, 4) tool frame of a fixed in-limit pose away from the start pose."""
    rng = np.random.default_rng(20111)
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    return chain.tip_pose(lower + rng.uniform(0.25, 0.75, chain.dof) * (upper - lower))


@pytest.mark.launch_test
def generate_test_description() -> LaunchDescription:
    """Launch arm.launch.py as a user would, without RViz."""
    arm = IncludeLaunchDescription(PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
                                   launch_arguments={'rviz': 'false'}.items())
    return LaunchDescription([arm, launch_testing.actions.ReadyToTest()])


class LaunchProbe(unittest.TestCase):
    """A probe node in the launched graph's domain, spun until a condition holds."""

    @classmethod
    def setUpClass(cls) -> None:
        """Start a probe node in the launched graph's domain."""
        rclpy.init()
        cls.node = rclpy.create_node('arm_launch_probe')

    @classmethod
    def tearDownClass(cls) -> None:
        """Stop the probe node."""
        cls.node.destroy_node()
        rclpy.shutdown()

    def spin_until(self, done, timeout: float = TIMEOUT) -> bool:
        """Spin the probe until `done()` holds or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.05)
            if done():
                return True
        return False


class TestArmFollowsTarget(LaunchProbe):
    """The launched IK node and simulated arm take the tip to a target."""

    def publisher_nodes(self, topic: str) -> set[str]:
        """Return the names of the nodes publishing `topic`."""
        return {info.node_name for info in self.node.get_publishers_info_by_topic(topic)}

    def test_wiring_command_to_simulated_arm(self) -> None:
        """ik_node commands joint_commands; sim_arm alone publishes the measured joint_states."""
        wired = self.spin_until(lambda: 'ik_node' in self.publisher_nodes('/joint_commands')
                                and 'sim_arm' in self.publisher_nodes('/joint_states'))
        self.assertTrue(wired, 'publishers: joint_commands '
                        f'{self.publisher_nodes("/joint_commands")}, joint_states '
                        f'{self.publisher_nodes("/joint_states")}')
        self.assertNotIn('ik_node', self.publisher_nodes('/joint_states'))

    def test_target_pose_moves_tip_onto_target_within_limits(self) -> None:
        """A target pose brings the measured tool within 1 mm and 1 degree, within limits."""
        chain = demo_arm()
        frame = reachable_target(chain)
        target = frame[:3, 3]
        # The simulated arm starts at the neutral pose: the tip has to travel to get there.
        self.assertGreater(np.linalg.norm(chain.tip_position(chain.neutral()) - target), 0.1)
        states: list[JointState] = []
        self.node.create_subscription(JointState, 'joint_states', states.append, 100)
        publisher = self.node.create_publisher(PoseStamped, 'target_pose', 1)
        pose = PoseStamped()
        pose.header.frame_id = chain.base_link
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = target.tolist()
        (pose.pose.orientation.x, pose.pose.orientation.y, pose.pose.orientation.z,
         pose.pose.orientation.w) = quaternion_from_rotation(frame[:3, :3]).tolist()

        def tool(state: JointState) -> np.ndarray:
            by_name = dict(zip(state.name, state.position))
            return chain.tip_pose(np.array([by_name[name] for name in chain.joint_names]))

        def tip_error(state: JointState) -> float:
            return float(np.linalg.norm(tool(state)[:3, 3] - target))

        def reached() -> bool:
            # Until the IK node has discovered the probe, a target may be lost: resend it.
            publisher.publish(pose)
            return (bool(states) and tip_error(states[-1]) <= REACH_TOLERANCE
                    and rotation_angles(tool(states[-1])[:3, :3], frame[:3, :3])
                    <= math.radians(1.0))

        self.assertTrue(self.spin_until(reached),
                        f'tip {tip_error(states[-1]) if states else "?"} m from {target} '
                        f'after {TIMEOUT} s, {len(states)} joint_states received')
        for state in states:
            self.assertEqual(sorted(state.name), sorted(chain.joint_names))
            by_name = dict(zip(state.name, state.position))
            q = np.array([by_name[name] for name in chain.joint_names])
            self.assertTrue(np.all(q >= chain.lower - LIMIT_SLACK)
                            and np.all(q <= chain.upper + LIMIT_SLACK),
                            f'joint_states {q} outside [{chain.lower}, {chain.upper}]')


@launch_testing.post_shutdown_test()
class TestCleanShutdown(unittest.TestCase):
    """Every launched node exits cleanly on Ctrl-C."""

    def test_exit_codes(self, proc_info) -> None:
        """All processes return 0."""
        launch_testing.asserts.assertExitCodes(proc_info)
