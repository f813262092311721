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
The IK node driving hardware safely, across processes.

Specification: a far step target yields a command stream within the velocity and
acceleration limits that still converges; lost feedback and ~/hold make the commands hold;
~/enable starts and stops them; every output carries the right joint order and values.
What needs no DDS (the safety contract, trajectory times, limit changes, configuration
checks) is proven in-process: test_controller.py and test_ik_node_inprocess.py.
"""

import time
from typing import Any

from ik_node_client import (ARM, chain_fixture, Client, client_fixture,  # noqa: F401
                            DISCOVERY_TIMEOUT, MM, POSE_REACHED, start_arm, tip_error)
import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

RATE = 50.0  # Hz, command_rate of the streaming tests
DT = 1.0 / RATE  # seconds
MAX_VELOCITY = 2.0  # rad/s, ARM's chain.max_velocity
MAX_ACCELERATION = 4.0  # rad/s^2
STREAM = {'command_rate': RATE, 'default_max_acceleration': MAX_ACCELERATION}
FAR = np.array([1.2, -1.0, 0.9, 1.1, -0.8, 1.0, 0.5, -0.9])  # radians, far from neutral
SETTLE_TIMEOUT = 6.0  # seconds for a far step to be reached at these limits
MEASURED_TOPIC = '/measured_joint_states'  # feedback the tests publish for hardware outputs


def positions(messages: list[JointState]) -> np.ndarray:
    """Return the (k, n) commanded positions of JointState messages."""
    return np.array([msg.position for msg in messages])


def call(client: Client, service_type: type, name: str, request: Any) -> Any:
    """Call a service of the IK node and return its response."""
    service = client.node.create_client(service_type, name)
    assert service.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT), f'no service {name}'
    return client.call(service, request)


def settled(messages: list[JointState], steps: int = 5) -> bool:
    """Tell whether the last `steps` commands are all the same (the stream holds)."""
    return len(messages) > steps and np.ptp(positions(messages[-steps:]), axis=0).max() == 0.0


def assert_within_motion_limits(chain, commands: np.ndarray, start: np.ndarray) -> None:
    """Check a command stream starting at rest at `start` against the limits."""
    path = np.vstack([start, commands])
    velocity = np.diff(path, axis=0) / DT
    acceleration = np.diff(np.vstack([np.zeros(chain.dof), velocity]), axis=0) / DT
    assert np.abs(velocity).max() <= MAX_VELOCITY * (1 + 1e-6)
    assert np.abs(acceleration).max() <= MAX_ACCELERATION * (1 + 1e-6)
    assert np.all(commands >= chain.lower) and np.all(commands <= chain.upper)


def test_far_step_target_is_reached_within_velocity_and_acceleration_limits(
        start_node, client, chain):
    start_arm(start_node, client, **STREAM)
    received = client.joint_states['']
    assert client.spin_until(lambda: len(received) >= 3, 2.0), 'no command stream'
    start = len(received)
    assert np.allclose(received[-1].position, chain.neutral())  # holding where it starts
    target = chain.tip_position(FAR)
    client.send_pose(target)
    assert client.spin_until(lambda: settled(received) and tip_error(
        chain, received[-1], target) <= MM, SETTLE_TIMEOUT), 'the step did not converge'
    stream = received[start:]
    commands = positions(stream)
    assert_within_motion_limits(chain, commands, chain.neutral())
    # One command per period, each carrying the velocity of its step.
    for before, after in zip(stream, stream[1:]):
        step = np.subtract(after.position, before.position)
        assert np.allclose(step, np.multiply(after.velocity, DT), atol=1e-9)
    assert len(stream) > 0.5 * RATE  # it took a while: no jump


def test_lost_feedback_holds_and_warm_start_begins_where_the_arm_is(
        start_node, client, chain):
    measured_start = np.clip(0.3 * FAR, chain.lower, chain.upper)
    feedback = {'joint_command_topic': 'joint_commands', 'feedback_topic': 'joint_states',
                'feedback_timeout': 0.2}
    sim = start_node('sim_arm', params={**ARM, 'sim.initial_positions':
                                        measured_start.tolist()})
    start_arm(start_node, client, **STREAM, **feedback)
    commands: list[JointState] = []
    client.node.create_subscription(JointState, '/joint_commands', commands.append, 100)
    assert client.spin_until(lambda: len(commands) >= 3, DISCOVERY_TIMEOUT)
    # The first command is where the arm measures itself, not the chain's neutral pose.
    assert np.allclose(commands[0].position, measured_start, atol=1e-9)

    target = chain.tip_position(FAR)
    client.send_pose(target)
    moving = len(commands)
    assert client.spin_until(lambda: len(commands) > moving + 10, 2.0)
    sim.stop()  # the arm stops reporting
    lost = len(commands)
    assert client.spin_until(lambda: len(commands) > lost + 5 and settled(commands, 10),
                             3.0), 'commands did not hold when feedback was lost'
    assert tip_error(chain, commands[-1], target) > 0.05
    assert_within_motion_limits(chain, positions(commands), measured_start)
    status = client.status_after('/ik_node', time.time())
    assert status['enabled'] == 'True' and float(status['feedback_age_s']) > 0.2
    assert 'no fresh feedback' in status['message']
    refused = int(status['targets_refused'])
    client.send_pose(chain.tip_position(POSE_REACHED))  # no moving without feedback
    assert client.spin_until(lambda: int(client.latest_status('/ik_node')['targets_refused'])
                             > refused, 2.5), 'a target was taken without feedback'


def test_enable_and_hold_services(start_node, client, chain):
    start_arm(start_node, client, start_enabled=False, **STREAM)
    received = client.joint_states['']
    client.send_pose(chain.tip_position(POSE_REACHED))  # refused: disabled
    assert client.spin_until(
        lambda: (client.latest_status('/ik_node') or {}).get('targets_refused') == '1', 2.5)
    assert client.latest_status('/ik_node')['enabled'] == 'False'

    assert call(client, SetBool, '/ik_node/enable', SetBool.Request(data=True)).success
    assert client.spin_until(lambda: len(received) >= 3, 2.0), 'no commands once enabled'
    assert not received[0].velocity or not any(received[0].velocity)
    assert np.allclose(received[0].position, chain.neutral())  # the old target is not replayed
    target = chain.tip_position(FAR)
    client.send_pose(target)
    moving = len(received)
    assert client.spin_until(lambda: len(received) > moving + 10, 2.0)
    response = call(client, Trigger, '/ik_node/hold', Trigger.Request())
    assert response.success, response.message
    assert client.spin_until(lambda: settled(received, 10), 2.0), '~/hold did not stop it'
    assert tip_error(chain, received[-1], target) > 0.05
    assert_within_motion_limits(chain, positions(received[moving - 1:]),
                                np.array(received[moving - 1].position))

    response = call(client, SetBool, '/ik_node/enable', SetBool.Request(data=False))
    assert response.success and 'disabled' in response.message
    assert client.spin_until(
        lambda: (client.latest_status('/ik_node') or {}).get('enabled') == 'False', 2.5)


def measured_at_neutral(client: Client, chain) -> dict[str, str]:
    """Publish the arm as measured at its neutral pose, like a driver; return node params."""
    publisher = client.node.create_publisher(JointState, MEASURED_TOPIC, 10)
    measured = JointState(name=chain.joint_names, position=chain.neutral().tolist())
    client.node.create_timer(0.05, lambda: publisher.publish(measured))  # while it spins
    return {'feedback_topic': MEASURED_TOPIC}


def test_every_output_carries_the_joint_order_and_values(start_node, client, chain):
    order = chain.joint_names[::-1]
    start_arm(start_node, client, outputs=['joint_state', 'joint_trajectory',
                                           'forward_command'],
              command_joints=order, **STREAM, **measured_at_neutral(client, chain))
    trajectories: list[JointTrajectory] = []
    arrays: list[Float64MultiArray] = []
    client.node.create_subscription(JointTrajectory, '/ik_node/joint_trajectory',
                                    trajectories.append, 100)
    client.node.create_subscription(Float64MultiArray, '/ik_node/commands', arrays.append, 100)
    received = client.joint_states['']
    # Commands start once the arm is measured; a target before that is refused.
    assert client.spin_until(lambda: len(received) >= 3, DISCOVERY_TIMEOUT), 'no stream'
    target = chain.tip_position(POSE_REACHED)
    client.send_pose(target)
    assert client.spin_until(lambda: settled(received) and tip_error(
        chain, received[-1], target) <= MM, SETTLE_TIMEOUT)
    solution = np.array(received[-1].position)
    # The three outputs are published together; wait for the others to be delivered too.
    assert client.spin_until(lambda: trajectories and arrays and np.allclose(
        trajectories[-1].points[0].positions, solution), 1.0)
    assert np.unique(np.round(solution, 6)).size > 4  # distinct values: order is visible
    trajectory = trajectories[-1]
    assert list(trajectory.joint_names) == chain.joint_names
    point = trajectory.points[0]
    assert len(trajectory.points) == 1 and np.allclose(point.positions, solution)
    assert point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec == \
        pytest.approx(DT, abs=1e-6)
    assert np.allclose(arrays[-1].data, solution[::-1])  # command_joints order
