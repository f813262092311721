"""
The IK node across processes: the node runs as its own process, this test is a client.

Specification (issue #3): a target in, a JointState out whose forward kinematics reaches it;
bad targets and bad parameter values are refused while the node keeps serving; live
parameter changes apply to the next solve; namespaced nodes keep to themselves.
"""

from collections.abc import Callable, Iterator
import math
from pathlib import Path
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from fabrik_ros.chain import Chain
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.messages import REACHED_COLOUR, UNREACHED_COLOUR
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
import pytest
from rcl_interfaces.srv import GetParameters, SetParameters
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import MarkerArray

REPO_ROOT = Path(__file__).resolve().parents[1]
MM = 1e-3  # metres
DISCOVERY_TIMEOUT = 15.0  # seconds: node start-up (imports, chain) plus DDS discovery
REPLY_TIMEOUT = 1.0  # seconds: a reachable target must be solved and published this fast
QUIET_PERIOD = 0.5  # seconds without an answer that count as "no motion"
DIAGNOSTICS_PERIOD = 1.0  # seconds between the node's /diagnostics messages

# A four-segment arm with a yaw and a pitch joint at each segment start: 8 joints, 0.8 m.
ARM = {
    'base_link': 'base_link',
    'tip_links': ['tip'],
    'chain.segments': 4,
    'chain.segment_length': [0.2],
    'chain.joint_type': 'two_axis',
    'tolerance': 1e-4,
    'publish_rate': 0.0,  # JointState only when a target is solved: silence means no motion
}
POSE_REACHED = np.array([0.3, -0.4, 0.2, 0.5, -0.3, 0.6, 0.1, -0.2])  # radians


@pytest.fixture(scope='module')
def chain() -> Chain:
    """Return the chain the node builds from ARM, for forward kinematics here."""
    return chain_from_parameters(ARM, REPO_ROOT)


class Client:
    """This test's own rclpy node: publishes targets, records what the IK node sends."""

    def __init__(self, context: Any, namespace: str = '') -> None:
        self.node = rclpy.create_node('ik_node_test_client', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.prefix = f'/{namespace}' if namespace else ''
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
                  quaternion: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)) -> None:
        """Publish a PoseStamped target."""
        msg = PoseStamped()
        msg.header.frame_id = frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
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
        Return the key/values of the node's newest diagnostics status, or None.

        Only statuses stamped after `newer_than` (seconds since the epoch) count.
        """
        for array in reversed(self.diagnostics):
            stamp = array.header.stamp.sec + 1e-9 * array.header.stamp.nanosec
            for status in array.status:
                if status.name.startswith(f'{node}:') and stamp > newer_than:
                    return {kv.key: kv.value for kv in status.values}
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


@pytest.fixture
def client(ros_context: Any) -> Iterator[Client]:
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


def test_pose_target_is_reached_within_a_millimetre_within_a_second(start_node, client, chain):
    start_arm(start_node, client)
    assert_reaches(client, chain, chain.tip_position(POSE_REACHED))


@pytest.mark.parametrize('config', ['arm.yaml', 'tentacle.yaml'])
def test_shipped_config_reaches_random_reachable_targets(start_node, client, config):
    path = REPO_ROOT / 'config' / config
    chain = chain_from_parameters(load_config(path), REPO_ROOT)
    start_node('ik_node', params=[path, {'publish_rate': 0.0}])
    client.listen('')
    client.wait_for_node()
    random = np.random.default_rng(7)
    for _ in range(3):
        pose = np.clip(random.uniform(-1.0, 1.0, chain.dof), chain.lower, chain.upper)
        assert_reaches(client, chain, chain.tip_position(pose))


@pytest.mark.parametrize('source', ['topic', 'parameter'])
def test_chain_from_robot_description(start_node, client, source):
    params = load_config(REPO_ROOT / 'config' / 'arm.yaml')
    chain = chain_from_parameters(params, REPO_ROOT)
    urdf = (REPO_ROOT / params['robot_description_file']).read_text()
    node_params = {'base_link': params['base_link'], 'tip_links': params['tip_links'],
                   'publish_rate': 0.0}
    if source == 'parameter':
        node_params['robot_description'] = urdf
    start_node('ik_node', params=node_params)
    client.listen('')
    if source == 'topic':  # latched like robot_state_publisher's, sent before discovery
        description = client.node.create_publisher(String, 'robot_description', QoSProfile(
            depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        description.publish(String(data=urdf))
    client.wait_for_node()
    random = np.random.default_rng(3)
    pose = np.clip(random.uniform(-1.0, 1.0, chain.dof), chain.lower, chain.upper)
    # The node may still be parsing the description: retry until the chain is in.
    target = chain.tip_position(pose)
    assert client.spin_until(lambda: client.send_pose(target) or client.next_command(),
                             DISCOVERY_TIMEOUT), 'the node never answered'
    assert_reaches(client, chain, target)


def test_last_command_is_republished_at_publish_rate(start_node, client, chain):
    start_arm(start_node, client, publish_rate=50.0)
    held = client.next_command()  # before any target: the neutral pose, for RViz
    assert held is not None and list(held.name) == chain.joint_names
    assert np.allclose(held.position, chain.neutral())
    target = chain.tip_position(POSE_REACHED)
    client.send_pose(target)
    received = client.joint_states['']
    assert client.spin_until(lambda: tip_error(chain, received[-1], target) <= MM,
                             REPLY_TIMEOUT)
    solved = len(received)
    client.spin_until(lambda: False, 1.0)
    repeats = received[solved:]
    assert 35 <= len(repeats) <= 65  # 50 Hz for 1 s
    assert all(np.array_equal(msg.position, received[solved - 1].position) for msg in repeats)
    stamps = [msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec for msg in repeats]
    assert np.all(np.diff(stamps) > 0.0)


def test_clicked_point_is_reached_within_a_millimetre_within_a_second(start_node, client,
                                                                      chain):
    start_arm(start_node, client)
    assert_reaches(client, chain, chain.tip_position(-POSE_REACHED), client.send_point)


def test_goal_pose_drives_the_target_too(start_node, client, chain):
    start_arm(start_node, client)
    assert_reaches(client, chain, chain.tip_position(POSE_REACHED / 2),
                   lambda target: client.send_pose(target, topic='goal_pose'))


def test_unreachable_target_stretches_toward_it_and_reports_the_distance(start_node, client,
                                                                         chain):
    start_arm(start_node, client)
    target = np.array([2.0, 0.0, 0.0])  # the arm is 0.8 m long
    sent = time.time()
    client.send_pose(target)
    command = client.next_command()
    assert command is not None
    tip = chain.tip_position(np.array(command.position))
    assert np.linalg.norm(tip) == pytest.approx(0.8, abs=MM)  # stretched out straight
    assert tip_error(chain, command, target) == pytest.approx(1.2, abs=MM)
    status = client.status_after('/ik_node', sent)
    assert status['reached'] == 'False'
    assert float(status['error_m']) == pytest.approx(1.2, abs=MM)


def test_markers_show_the_chain_green_when_reached_red_when_not(start_node, client, chain):
    start_arm(start_node, client, marker_rate=20.0)
    markers: list[MarkerArray] = []
    client.node.create_subscription(MarkerArray, '/ik_node/markers', markers.append, 10)

    def drawn(colour: ColorRGBA, tip: np.ndarray) -> bool:
        if not markers:
            return False
        line = next(m for m in markers[-1].markers if m.ns == 'links')
        end = line.points[-1]
        rgba = [(c.r, c.g, c.b, c.a) for c in (line.color, colour)]
        return np.allclose(*rgba) and np.allclose([end.x, end.y, end.z], tip, atol=1e-6)

    command = assert_reaches(client, chain, chain.tip_position(POSE_REACHED))
    tip = chain.tip_position(np.array(command.position))
    assert client.spin_until(lambda: drawn(REACHED_COLOUR, tip), 3.0)
    client.send_pose(np.array([2.0, 0.0, 0.0]))  # out of reach
    command = client.next_command()
    tip = chain.tip_position(np.array(command.position))
    assert client.spin_until(lambda: drawn(UNREACHED_COLOUR, tip), 3.0)


@pytest.mark.parametrize('bad', [
    {'xyz': (math.nan, 0.1, 0.2)},
    {'xyz': (0.3, math.inf, 0.2)},
    {'quaternion': (0.0, 0.0, 0.0, 0.0)},
    {'quaternion': (0.0, math.nan, 0.0, 1.0)},
    {'frame': 'nowhere'},
], ids=['nan_position', 'inf_position', 'zero_quaternion', 'nan_quaternion', 'unknown_frame'])
def test_bad_target_is_refused_without_motion_and_the_node_keeps_serving(start_node, client,
                                                                         chain, bad):
    process = start_arm(start_node, client)
    xyz = np.array(bad.get('xyz', (0.3, 0.1, 0.2)))
    client.send_pose(xyz, frame=bad.get('frame', 'base_link'),
                     quaternion=bad.get('quaternion', (0.0, 0.0, 0.0, 1.0)))
    assert client.next_command(timeout=QUIET_PERIOD) is None, 'a bad target moved the arm'

    def refusal_counted() -> dict[str, str] | None:
        status = client.latest_status('/ik_node')
        return status if status and status['targets_refused'] == '1' else None

    status = client.spin_until(refusal_counted, 3.0)
    assert status, 'the refusal is not counted in /diagnostics'
    if 'frame' in bad:  # the warning names both frames
        assert "'nowhere'" in status['last_refusal'] and "'base_link'" in status['last_refusal']
        assert "'nowhere'" in process.log()
    assert process.running()
    assert_reaches(client, chain, chain.tip_position(POSE_REACHED))


@pytest.mark.parametrize('name, value', [
    ('tolerance', -1.0),  # out of its range
    ('tolerance', 'tight'),  # wrong type
    ('max_iterations', 0),  # out of its range
    ('base_link', 'world'),  # read-only: needs a restart
    ('joint_limits.seg1_pitch.min_position', 0.5),  # above its max_position 0.4 set below
    ('joint_limits.seg1_pitch.max_position', 2.0),  # would widen the model's pi/2
    ('joint_limits.seg1_pitch.max_position', math.nan),
])
def test_bad_parameter_is_refused_with_a_reason_and_the_old_value_stays(start_node, client,
                                                                        chain, name, value):
    start_arm(start_node, client, **{'joint_limits.seg1_pitch.max_position': 0.4})
    old = client.get_parameter('/ik_node', name)
    result = client.set_parameter('/ik_node', name, value)
    assert not result.successful
    assert result.reason
    assert client.get_parameter('/ik_node', name) == old
    assert_reaches(client, chain, chain.tip_position(POSE_REACHED))


def test_narrowed_joint_limit_applies_on_the_next_solve(start_node, client, chain):
    start_arm(start_node, client)
    assert client.set_parameter('/ik_node', 'joint_limits.seg1_pitch.max_position',
                                0.1).successful
    pitch = chain.joint_names.index('seg1_pitch')
    client.send_pose(chain.tip_position(POSE_REACHED))  # reached with seg1_pitch = 0.5
    command = client.next_command()
    assert command is not None
    assert command.position[pitch] <= 0.1 + 1e-12


def test_tolerance_update_takes_effect_on_the_next_solve(start_node, client, chain):
    start_arm(start_node, client)
    first = chain.tip_position(POSE_REACHED)
    command = assert_reaches(client, chain, first)

    # With a 0.5 m tolerance, a target 0.1 m away is already "reached": the arm stays put.
    assert client.set_parameter('/ik_node', 'tolerance', 0.5).successful
    second = first + np.array([0.0, 0.0, 0.1])
    client.send_pose(second)
    lazy = client.next_command()
    assert lazy is not None
    assert np.allclose(lazy.position, command.position, atol=1e-9)
    assert tip_error(chain, lazy, second) == pytest.approx(0.1, abs=MM)
    status = client.status_after('/ik_node', time.time())
    assert status['reached'] == 'True' and float(status['error_m']) > 0.09
    assert float(status['tolerance_m']) == 0.5

    assert client.set_parameter('/ik_node', 'tolerance', 1e-4).successful
    assert_reaches(client, chain, second)


def test_namespaced_nodes_do_not_cross_talk(start_node, client, chain):
    start_arm(start_node, client, namespace='left')
    start_arm(start_node, client, namespace='right')
    for namespace, other in (('left', 'right'), ('right', 'left')):
        target = chain.tip_position(POSE_REACHED if namespace == 'left' else -POSE_REACHED)
        others_before = len(client.joint_states[other])
        assert_reaches(client, chain, target,
                       lambda xyz: client.send_pose(xyz, topic=f'/{namespace}/target_pose'),
                       namespace)
        client.spin_until(lambda: False, QUIET_PERIOD)
        assert len(client.joint_states[other]) == others_before, f'{other} answered too'


def test_two_effectors_commanded_at_once(start_node, client):
    path = REPO_ROOT / 'config' / 'dual_arm.yaml'
    chain = chain_from_parameters(load_config(path), REPO_ROOT)
    start_node('ik_node', params=[path, {'publish_rate': 0.0}])
    client.listen('')
    client.wait_for_node()
    random = np.random.default_rng(11)
    for _ in range(2):
        pose = np.clip(random.uniform(-0.8, 0.8, chain.dof), chain.lower, chain.upper)
        targets = chain.effector_positions(pose)  # reachable together
        received = client.joint_states['']
        for name, target in zip(chain.effector_names, targets):
            client.send_pose(target, topic=f'{name}/target_pose')

        def both_reached() -> bool:
            if not received:
                return False
            tips = chain.effector_positions(np.array(received[-1].position))
            return bool(np.all(np.linalg.norm(tips - targets, axis=1) <= MM))

        assert client.spin_until(both_reached, REPLY_TIMEOUT), 'not every effector reached'
        assert list(received[-1].name) == chain.joint_names  # one JointState for all joints
