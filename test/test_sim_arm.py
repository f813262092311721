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

"""The simulated arm, run as its own process and driven over real DDS (rclpy)."""

from collections.abc import Callable
import math
import time

from fabrik_ros.motion import MotionLimits, time_to_reach
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
from sensor_msgs.msg import JointState  # noqa: E402  (after the skip)

RATE = 100.0  # Hz
MAX_VELOCITY = 1.0  # rad/s
MAX_ACCELERATION = 8.0  # rad/s^2
LIMIT = math.pi / 2  # rad
JOINTS = ['seg1_yaw', 'seg2_pitch']
PARAMS = {
    'base_link': 'base_link', 'tip_links': ['tip'],
    'chain': {'segments': 2, 'segment_length': [0.3], 'max_velocity': MAX_VELOCITY,
              'joint_limit': [LIMIT]},
    'sim': {'rate': RATE, 'max_acceleration': MAX_ACCELERATION},
}
EPS = 1e-9


class ArmProbe:
    """Publish joint_commands and collect the measured joint_states, in the test process."""

    def __init__(self, context) -> None:
        """Create the probe node and its executor."""
        self.node = rclpy.create_node('sim_arm_probe', context=context)
        self.executor = rclpy.executors.SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.states: list[JointState] = []
        self.node.create_subscription(JointState, 'joint_states', self.states.append, 100)
        self.commands = self.node.create_publisher(JointState, 'joint_commands', 10)

    def spin_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Spin until ``done()`` or ``timeout`` seconds; return done()."""
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.05)
        return done()

    def wait_for_arm(self) -> None:
        """Wait until the arm publishes and listens to commands."""
        assert self.spin_until(
            lambda: self.states and self.commands.get_subscription_count() > 0, 30.0), \
            'sim_arm did not come up'

    def command(self, names: list[str], positions: list[float]) -> None:
        """Send one joint command."""
        self.commands.publish(JointState(name=names, position=positions))

    def positions(self) -> np.ndarray:
        """Return every measured pose so far, (k, n) in JOINTS order."""
        return np.array([[dict(zip(s.name, s.position))[j] for j in JOINTS]
                         for s in self.states])

    def latest(self) -> dict[str, float]:
        """Return the last measured position of each joint."""
        return dict(zip(self.states[-1].name, self.states[-1].position))


@pytest.fixture
def probe(ros_context, start_node) -> ArmProbe:
    """Start sim_arm with a two-joint chain and give a probe connected to it."""
    process = start_node('sim_arm', params=PARAMS)
    arm = ArmProbe(ros_context)
    arm.process = process
    arm.wait_for_arm()
    yield arm
    arm.executor.shutdown()
    arm.node.destroy_node()


def test_far_partial_command_moves_within_limits_and_arrives(probe: ArmProbe) -> None:
    """A command for one joint, far away: it moves at <= its limits, arrives, stops."""
    start = len(probe.states)
    limits = MotionLimits.create([-LIMIT] * 2, [LIMIT] * 2, MAX_VELOCITY, MAX_ACCELERATION)
    goal = 1.2
    predicted = time_to_reach(np.zeros(2), np.array([goal, 0.0]), limits)
    probe.command(['seg1_yaw'], [goal])
    assert probe.spin_until(lambda: probe.latest()['seg1_yaw'] == goal, predicted + 3.0)
    probe.spin_until(lambda: False, 0.2)  # a few samples at rest
    states = probe.states[start:]
    positions = probe.positions()[start:]
    velocities = np.array([s.velocity for s in states])
    dt = 1.0 / RATE
    assert np.all(np.abs(velocities) <= MAX_VELOCITY + EPS)
    assert np.all(np.abs(np.diff(velocities, axis=0)) <= MAX_ACCELERATION * dt + 1e-6)
    assert np.all(np.abs(np.diff(positions, axis=0)) <= MAX_VELOCITY * dt + EPS), \
        'a measured step is faster than the velocity limit (or samples were lost)'
    assert np.all(np.diff(positions[:, 0]) >= 0.0), 'no overshoot, no going back'
    assert np.all(positions[:, 1] == 0.0), 'the joint not named in the command holds'
    assert positions[-1, 0] == goal and velocities[-1, 0] == 0.0
    moving = np.flatnonzero(np.diff(positions[:, 0]) > 0.0)
    assert (moving[-1] - moving[0] + 1) * dt <= predicted + 2 * dt


def test_reordered_command_and_out_of_range_positions(probe: ArmProbe) -> None:
    """Names, not order, pick the joints; a position past a limit stops at the limit."""
    probe.command(['seg2_pitch', 'seg1_yaw'], [-0.3, 5.0])
    assert probe.spin_until(
        lambda: probe.latest() == {'seg1_yaw': LIMIT, 'seg2_pitch': -0.3}, 6.0)
    positions = probe.positions()
    assert np.all(np.abs(positions) <= LIMIT)


def test_bad_commands_are_ignored_and_the_arm_keeps_running(probe: ArmProbe) -> None:
    """Commands with NaN or missing positions move nothing; unknown joints are skipped."""
    probe.command(['seg1_yaw'], [math.nan])
    probe.command(['seg1_yaw', 'seg2_pitch'], [0.5])
    probe.spin_until(lambda: False, 0.5)
    assert probe.latest() == {'seg1_yaw': 0.0, 'seg2_pitch': 0.0}
    probe.command(['elbow', 'seg2_pitch'], [1.0, 0.2])
    assert probe.spin_until(lambda: probe.latest()['seg2_pitch'] == 0.2, 3.0)
    assert probe.latest()['seg1_yaw'] == 0.0
    log = probe.process.log()
    assert 'non-finite positions' in log and '2 names but 1 positions' in log
    assert "unknown joints ['elbow']" in log
    assert probe.process.running()


def test_start_pose_comes_from_the_parameters(ros_context, start_node) -> None:
    """sim.initial_positions sets the start pose, clipped into the limits."""
    start_node('sim_arm', params=[PARAMS, {'sim': {'initial_positions': [0.4, -9.0]}}])
    arm = ArmProbe(ros_context)
    try:
        arm.wait_for_arm()
        assert arm.latest() == {'seg1_yaw': 0.4, 'seg2_pitch': -LIMIT}
    finally:
        arm.executor.shutdown()
        arm.node.destroy_node()


@pytest.mark.parametrize('bad', [{'rate': 0.0}, {'max_acceleration': -1.0},
                                 {'initial_positions': [0.1, 0.2, 0.3]}])
def test_bad_sim_parameters_stop_the_node_with_a_reason(start_node, bad: dict) -> None:
    """A configuration error is fatal at start-up: exit code 1, the parameter named."""
    process = start_node('sim_arm', params=[PARAMS, {'sim': bad}])
    assert process.popen.wait(30.0) == 1
    log = process.log()
    assert 'cannot start' in log and next(iter(bad)) in log, log
