"""
The IK node driving hardware safely (issue #5), across processes.

Specification: a far step target yields a command stream within the velocity and
acceleration limits that still converges; stale targets, lost feedback and ~/hold make
the commands hold; ~/enable starts and stops them; every output carries the right joint
order and values; commands never leave the joint limits.
"""

import time
from typing import Any

from fabrik_ros.motion import MotionLimits, time_to_reach
from ik_node_client import (ARM, assert_reaches, chain_fixture, Client,  # noqa: F401
                            client_fixture, DISCOVERY_TIMEOUT, MM, POSE_REACHED,
                            QUIET_PERIOD, start_arm, tip_error)
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


def test_stale_target_holds_without_replay(start_node, client, chain):
    start_arm(start_node, client, target_timeout=0.3, **STREAM)
    received = client.joint_states['']
    assert client.spin_until(lambda: len(received) >= 3, 2.0)
    start = len(received)
    target = chain.tip_position(FAR)
    client.send_pose(target)
    # The arm needs about a second for this step: after 0.3 s it brakes and holds.
    assert client.spin_until(lambda: len(received) > start + 5 and settled(received, 10),
                             3.0), 'the stream did not hold'
    held = np.array(received[-1].position)
    assert tip_error(chain, received[-1], target) > 0.05  # stopped well short of it
    assert_within_motion_limits(chain, positions(received[start:]), chain.neutral())
    client.spin_until(lambda: False, 1.0)  # no replay of the old target later on
    assert np.array_equal(received[-1].position, held)
    status = client.status_after('/ik_node', time.time())
    assert 'target_timeout' in status['message']

    # A target stamped long ago is not taken either; a fresh one is.
    client.send_pose(chain.tip_position(POSE_REACHED), stamp_age=1.0)
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert np.array_equal(received[-1].position, held)
    near = chain.tip_position(np.clip(held + 0.05, chain.lower, chain.upper))
    client.send_pose(near)
    assert client.spin_until(lambda: tip_error(chain, received[-1], near) <= MM, 2.0)


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
    refused = int(status['targets_refused'])
    client.send_pose(chain.tip_position(POSE_REACHED))  # no moving without feedback
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert settled(commands, 10)
    assert int(client.status_after('/ik_node', time.time())['targets_refused']) > refused


def test_enable_and_hold_services(start_node, client, chain):
    start_arm(start_node, client, start_enabled=False, **STREAM)
    received = client.joint_states['']
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert not received, 'a disabled node sent commands'
    client.send_pose(chain.tip_position(POSE_REACHED))
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert not received, 'a target moved a disabled node'

    assert call(client, SetBool, '/ik_node/enable', SetBool.Request(data=True)).success
    assert client.spin_until(lambda: len(received) >= 3, 2.0), 'no commands once enabled'
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

    assert call(client, SetBool, '/ik_node/enable', SetBool.Request(data=False)).success
    client.spin_until(lambda: False, 0.1)
    disabled = len(received)
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert len(received) == disabled, 'a disabled node kept sending commands'


def test_disabling_a_moving_arm_brakes_to_a_stop_then_goes_silent(start_node, client, chain):
    start_arm(start_node, client, **STREAM)
    received = client.joint_states['']
    assert client.spin_until(lambda: len(received) >= 3, 2.0)
    start = len(received)
    target = chain.tip_position(FAR)
    client.send_pose(target)
    assert client.spin_until(lambda: len(received) > start + 15, 2.0)
    assert call(client, SetBool, '/ik_node/enable', SetBool.Request(data=False)).success
    client.spin_until(lambda: False, 1.0)  # braking from 2 rad/s at 4 rad/s^2: 0.5 s
    silent = len(received)
    client.spin_until(lambda: False, QUIET_PERIOD)
    assert len(received) == silent, 'commands went on after the stop'
    assert np.array_equal(received[-1].position, received[-2].position)  # at rest
    assert tip_error(chain, received[-1], target) > 0.05
    assert_within_motion_limits(chain, positions(received[start:]), chain.neutral())


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
    target = chain.tip_position(POSE_REACHED)
    client.send_pose(target)
    assert client.spin_until(lambda: settled(received) and tip_error(
        chain, received[-1], target) <= MM, SETTLE_TIMEOUT)
    client.spin_until(lambda: False, 0.2)
    solution = np.array(received[-1].position)
    assert np.unique(np.round(solution, 6)).size > 4  # distinct values: order is visible
    trajectory = trajectories[-1]
    assert list(trajectory.joint_names) == chain.joint_names
    point = trajectory.points[0]
    assert len(trajectory.points) == 1 and np.allclose(point.positions, solution)
    assert point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec == \
        pytest.approx(DT, abs=1e-6)
    assert np.allclose(arrays[-1].data, solution[::-1])  # command_joints order


def test_trajectory_time_comes_from_the_motion_limits(start_node, client, chain):
    start_arm(start_node, client, outputs=['joint_state', 'joint_trajectory'],
              default_max_acceleration=MAX_ACCELERATION, **measured_at_neutral(client, chain))
    trajectories: list[JointTrajectory] = []
    client.node.create_subscription(JointTrajectory, '/ik_node/joint_trajectory',
                                    trajectories.append, 100)
    client.spin_until(lambda: False, 0.3)  # discovery of the trajectory topic
    command = assert_reaches(client, chain, chain.tip_position(FAR))
    assert client.spin_until(lambda: any(
        np.allclose(t.points[0].positions, command.position) for t in trajectories), 1.0)
    point = next(t.points[0] for t in trajectories
                 if np.allclose(t.points[0].positions, command.position))
    limits = MotionLimits.for_chain(chain, max_acceleration=MAX_ACCELERATION)
    expected = time_to_reach(chain.neutral(), np.array(command.position), limits)
    assert expected > 0.5  # a far step: seconds, not a jump
    assert point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec == \
        pytest.approx(expected, abs=1e-6)


def test_max_joint_step_guards_every_command(start_node, client, chain):
    start_arm(start_node, client, max_joint_step=0.05, publish_rate=50.0)
    received = client.joint_states['']
    assert client.spin_until(lambda: len(received) >= 2, 2.0)
    start = len(received)
    target = chain.tip_position(FAR)
    client.send_pose(target)
    assert client.spin_until(lambda: tip_error(chain, received[-1], target) <= MM,
                             SETTLE_TIMEOUT), 'the guarded steps did not converge'
    steps = np.abs(np.diff(positions(received[start - 1:]), axis=0))
    assert steps.max() <= 0.05 + 1e-12


@pytest.mark.parametrize('name, value', [
    ('joint_limits.seg1_pitch.max_velocity', 3.0),  # the model allows 2 rad/s
    ('joint_limits.seg1_pitch.max_acceleration', -1.0),
    ('joint_limits.seg1_pitch.max_acceleration', 0.0),
    ('joint_limits.seg1_pitch.max_acceleration', float('inf')),  # would switch it off
    ('publish_rate', 1e-300),  # its timer period would overflow
    ('max_joint_step', 0.0),
    ('command_rate', 10.0),  # read-only: the command mode needs a restart
])
def test_bad_motion_parameter_is_refused(start_node, client, chain, name, value):
    start_arm(start_node, client)
    result = client.set_parameter('/ik_node', name, value)
    assert not result.successful and result.reason
    assert_reaches(client, chain, chain.tip_position(POSE_REACHED))


def test_narrowed_velocity_limit_applies_to_the_next_commands(start_node, client, chain):
    start_arm(start_node, client, **STREAM)
    slow = 0.5  # rad/s
    for joint in chain.joint_names:
        assert client.set_parameter('/ik_node', f'joint_limits.{joint}.max_velocity',
                                    slow).successful
    received = client.joint_states['']
    start = len(received)
    client.send_pose(chain.tip_position(FAR))
    assert client.spin_until(lambda: len(received) > start + 20, 2.0)
    steps = np.abs(np.diff(positions(received[start - 1:]), axis=0))
    assert steps.max() <= slow * DT * (1 + 1e-6)


@pytest.mark.parametrize('params, complaint', [
    ({'feedback_topic': 'joint_states'}, 'would take its own commands for the measured state'),
    ({'joint_limits.seg1_pitch.max_position': 2.0}, 'would widen the model limits'),
    ({'outputs': ['joint_state', 'servo']}, "outputs ['servo'] unknown"),
    ({'command_joints': ['seg1_yaw']}, 'must list each of'),
    ({'outputs': ['joint_trajectory']}, 'set feedback_topic'),  # else it assumes a pose
    ({'publish_rate': 1e-300}, 'publish_rate must be 0 (off) or at least'),
])
def test_a_bad_configuration_stops_the_node_with_the_reason(start_node, params, complaint):
    process = start_node('ik_node', params={**ARM, **params})
    deadline = time.monotonic() + DISCOVERY_TIMEOUT
    while process.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.popen.returncode == 1
    assert complaint in process.log()
