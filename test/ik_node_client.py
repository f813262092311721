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
The test side of the IK node tests: a client node, the test arm, and checks.

Shared by test_ik_node*.py; the fixtures `client` and `chain` are imported from here.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from fabrik_ros.chain import Chain
from fabrik_ros.config import chain_from_parameters, load_config
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
import pytest
from rcl_interfaces.srv import GetParameters, SetParameters
import rclpy
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter, parameter_value_to_python
from sensor_msgs.msg import JointState

REPO_ROOT = Path(__file__).resolve().parents[1]
MM = 1e-3  # metres
DISCOVERY_TIMEOUT = 15.0  # seconds: node start-up (imports, chain) plus DDS discovery
REPLY_TIMEOUT = 1.0  # seconds: a reachable target must be solved and published this fast
DIAGNOSTICS_PERIOD = 1.0  # seconds between the node's /diagnostics messages

# A four-segment arm with a yaw and a pitch joint at each segment start: 8 joints, 0.8 m.
ARM = {
    'base_link': 'base_link',
    'tip_links': ['tip'],
    'chain.segments': 4,
    'chain.segment_length': [0.2],
    'chain.joint_type': 'two_axis',
    'tolerance': 1e-4,
    'orientation_mode': 'position',  # targets are points here; full poses: the shipped configs
    'joint_command_topic': 'joint_states',  # the node alone: its commands are the state
    'rviz_targets': True,
    'publish_rate': 0.0,  # JointState only when a target is solved: silence means no motion
}
POSE_REACHED = np.array([0.3, -0.4, 0.2, 0.5, -0.3, 0.6, 0.1, -0.2])  # radians


@pytest.fixture(name='chain', scope='module')
def chain_fixture() -> Chain:
    """Return the chain the node builds from ARM, for forward kinematics here."""
    return chain_from_parameters(ARM, REPO_ROOT)


class Client:
    """This test's own rclpy node: publishes targets, records what the IK node sends."""

    def __init__(self, context: Any) -> None:
        """Create the node and its /diagnostics subscription in `context`."""
        self.node = rclpy.create_node('ik_node_test_client', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.joint_states: dict[str, list[JointState]] = {}
        self.diagnostics: list[DiagnosticArray] = []
        self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                      self.diagnostics.append, 50)
        self._publishers: dict[tuple[type, str], Any] = {}

    def listen(self, namespace: str) -> list[JointState]:
        """Record JointState commands of the node in `namespace` ('' = root)."""
        received: list[JointState] = []
        topic = f'/{namespace}/joint_states' if namespace else '/joint_states'
        self.node.create_subscription(JointState, topic, received.append, 50)
        self.joint_states[namespace] = received
        return received

    def spin_until(self, condition: Callable[[], Any], timeout: float) -> Any:
        """Spin until `condition()` is truthy (return it) or `timeout` s pass (None)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            self.executor.spin_once(timeout_sec=0.02)
        return condition() or None

    def publisher(self, msg_type: type, topic: str) -> Any:
        """Return a publisher on `topic`, once the IK node subscribes to it."""
        key = (msg_type, topic)
        if key not in self._publishers:
            publisher = self.node.create_publisher(msg_type, topic, 10)
            assert self.spin_until(lambda: publisher.get_subscription_count() > 0,
                                   DISCOVERY_TIMEOUT), f'nobody subscribes to {topic}'
            self._publishers[key] = publisher
        return self._publishers[key]

    def wait_for_node(self, namespace: str = '') -> None:
        """Wait until the node's command publisher is matched with our subscription."""
        topic = f'/{namespace}/joint_states' if namespace else '/joint_states'
        assert self.spin_until(lambda: self.node.count_publishers(topic) > 0,
                               DISCOVERY_TIMEOUT), f'no publisher on {topic}'
        # Discovery is symmetric but not simultaneous: give the match a moment to settle.
        self.spin_until(lambda: False, 0.2)

    def send_pose(self, xyz: np.ndarray, frame: str = 'base_link', topic: str = 'target_pose',
                  quaternion: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0),
                  stamp_age: float = 0.0) -> None:
        """Publish a PoseStamped target, stamped `stamp_age` seconds ago."""
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.header.stamp = (self.node.get_clock().now()
                            - Duration(nanoseconds=int(stamp_age * 1e9))).to_msg()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, xyz)
        (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
         msg.pose.orientation.w) = quaternion
        self.publisher(PoseStamped, topic).publish(msg)

    def send_point(self, xyz: np.ndarray, frame: str = 'base_link') -> None:
        """Publish a PointStamped on /clicked_point, as RViz's Publish Point tool does."""
        msg = PointStamped()
        msg.header.frame_id = frame
        msg.point.x, msg.point.y, msg.point.z = map(float, xyz)
        self.publisher(PointStamped, '/clicked_point').publish(msg)

    def next_command(self, namespace: str = '', timeout: float = REPLY_TIMEOUT,
                     after: int | None = None) -> JointState | None:
        """Return the first JointState after the `after`-th (default: from now), or None."""
        received = self.joint_states[namespace]
        start = len(received) if after is None else after
        return self.spin_until(lambda: received[start] if len(received) > start else None,
                               timeout)

    def parameters_service(self, service_type: type, node: str, suffix: str) -> Any:
        """Call-ready client of a parameter service of the IK node."""
        client = self.node.create_client(service_type, f'{node}/{suffix}')
        assert client.wait_for_service(timeout_sec=DISCOVERY_TIMEOUT)
        return client

    def call(self, client: Any, request: Any) -> Any:
        """Call a service and wait for its answer."""
        future = client.call_async(request)
        assert self.spin_until(future.done, DISCOVERY_TIMEOUT), 'service call timed out'
        return future.result()

    def set_parameter(self, node: str, name: str, value: Any) -> Any:
        """Set one parameter of the IK node; return its SetParametersResult."""
        client = self.parameters_service(SetParameters, node, 'set_parameters')
        request = SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()])
        return self.call(client, request).results[0]

    def get_parameter(self, node: str, name: str) -> Any:
        """Return the current value of one parameter of the IK node."""
        client = self.parameters_service(GetParameters, node, 'get_parameters')
        value = self.call(client, GetParameters.Request(names=[name])).values[0]
        return parameter_value_to_python(value)

    def latest_status(self, node: str, newer_than: float = 0.0) -> dict[str, str] | None:
        """
        Return the key/values (and 'message') of the node's newest diagnostics status, or None.

        Only statuses stamped after `newer_than` (seconds since the epoch) count.
        """
        for array in reversed(self.diagnostics):
            stamp = array.header.stamp.sec + 1e-9 * array.header.stamp.nanosec
            for status in array.status:
                if status.name.startswith(f'{node}:') and stamp > newer_than:
                    return {'message': status.message,
                            **{kv.key: kv.value for kv in status.values}}
        return None

    def status_after(self, node: str, since: float) -> dict[str, str]:
        """Wait for the node's first diagnostics status stamped after `since` (epoch s)."""
        status = self.spin_until(lambda: self.latest_status(node, since),
                                 2.5 * DIAGNOSTICS_PERIOD)
        assert status, f'no /diagnostics from {node}'
        return status

    def close(self) -> None:
        """Destroy the client node."""
        self.executor.shutdown()
        self.node.destroy_node()


@pytest.fixture(name='client')
def client_fixture(ros_context: Any) -> Iterator[Client]:
    """Give a client node in this test's rclpy context."""
    test_client = Client(ros_context)
    yield test_client
    test_client.close()


def tip_error(chain: Chain, command: JointState, target: np.ndarray) -> float:
    """Return the distance (m) from the commanded pose's tip to `target`."""
    assert list(command.name) == chain.joint_names
    q = np.array(command.position)
    assert np.all(q >= chain.lower - 1e-12) and np.all(q <= chain.upper + 1e-12)
    return float(np.linalg.norm(chain.tip_position(q) - target))


def assert_reaches(client: Client, chain: Chain, target: np.ndarray,
                   send: Callable[[np.ndarray], None] | None = None,
                   namespace: str = '') -> JointState:
    """
    Send `target` (default: a PoseStamped on target_pose) and check the answer.

    The answer must come within REPLY_TIMEOUT and its FK tip lie within 1 mm of the target.
    """
    sent = time.monotonic()
    (send or client.send_pose)(target)
    command = client.next_command(namespace)
    assert command is not None, f'no JointState within {REPLY_TIMEOUT} s'
    assert time.monotonic() - sent <= REPLY_TIMEOUT
    assert tip_error(chain, command, target) <= MM
    return command


def start_arm(start_node: Callable[..., Any], client: Client, namespace: str = '',
              **overrides: Any) -> Any:
    """Start an IK node for ARM (with `overrides`) and wait until it is discovered."""
    process = start_node('ik_node', params={**ARM, **overrides}, namespace=namespace or None)
    client.listen(namespace)
    client.wait_for_node(namespace)
    assert process.running(), process.log()
    return process


def start_config(start_node: Callable[..., Any], client: Client, config: str,
                 **overrides: Any) -> Chain:
    """Start an IK node with a shipped config/<config>; return its chain once discovered."""
    path = REPO_ROOT / 'config' / config
    chain = chain_from_parameters(load_config(path), REPO_ROOT)
    start_node('ik_node', params=[path, {
        'publish_rate': 0.0, 'joint_command_topic': 'joint_states', 'rviz_targets': True,
        **overrides}])
    client.listen('')
    client.wait_for_node()
    return chain


def random_pose(chain: Chain, random: np.random.Generator, spread: float) -> np.ndarray:
    """Return joint angles drawn within +-`spread` radians, clipped into the limits."""
    return np.clip(random.uniform(-spread, spread, chain.dof), chain.lower, chain.upper)
