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
The IK node built in this process (no DDS round trips): parameters, chains, wiring.

Specification: a new robot_description rebuilds everything, and limits the
user never set are not overrides; start-up refuses unknown joints and fields under
joint_limits; every parameter can be read at once (ros2 param dump); outputs that are off
are not advertised; RViz targets only when asked for, under the node's namespace; ik_node
and sim_arm with their defaults do not both publish joint_states; a broken params file
stops the node with one line. A described robot's collision model is built by the
description loader, off the thread of the commands. A free root publishes the body pose and takes
targets in the odometry frame; per-effector weights are parameters.
"""

from pathlib import Path
import re
import threading
from typing import Any

from fabrik_ros.chain import Chain
from fabrik_ros.config import load_config
from fabrik_ros.controller import Target
from fabrik_ros.ik_node import IkNode
from fabrik_ros.node_main import run_node
from fabrik_ros.outputs import TFMessage
from fabrik_ros.sim_arm import SimArm
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from std_msgs.msg import Header, String

REPO_ROOT = Path(__file__).resolve().parents[1]
ARM_URDF = (REPO_ROOT / 'urdf' / 'arm.urdf').read_text()
ARM_TOPIC = {'base_link': 'base_link', 'tip_links': ['tool0']}  # chain from the topic
ARM_FILE = {'robot_description_file': 'urdf/arm.urdf', **ARM_TOPIC}


def limits(node: IkNode) -> dict[str, float]:
    """Return the node's joint_limits.* parameters."""
    return {name: parameter.value for name, parameter
            in node.get_parameters_by_prefix('joint_limits').items()}


def describe(node: IkNode, urdf: str) -> None:
    """Publish a robot_description to the node and wait until it is parsed and adopted."""
    node._on_description(String(data=urdf))
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    while node._loader.busy:
        executor.spin_once(timeout_sec=0.1)
    executor.remove_node(node)


def other_robot() -> str:
    """Return the URDF of another robot with the same base and tip links."""
    return Chain.from_parameters(3, [0.2], base_link='base_link', tip_link='tool0',
                                 joint_limit=[1.0]).to_urdf('other')


def test_a_new_robot_description_rebuilds_the_chain_and_its_limits(make_node):
    """A second model gets its own limits, not the first model's as overrides."""
    node = make_node(**ARM_TOPIC)
    describe(node, ARM_URDF)
    assert node._model.joint_names[0] == 'base_yaw'
    widened = ARM_URDF.replace('lower="-2.967" upper="2.967"', 'lower="-3.0" upper="3.0"')
    assert widened != ARM_URDF
    describe(node, widened)
    assert limits(node)['base_yaw.max_position'] == 3.0
    other = other_robot()
    describe(node, other)
    assert node._model.joint_names == Chain.from_urdf(other, 'base_link', 'tool0').joint_names
    assert not any(name.startswith('base_yaw') for name in limits(node))
    assert node.get_parameter('command_joints').value == node._model.joint_names


def test_a_described_robots_collision_model_is_built_by_the_loader_not_a_solve(
        make_node, monkeypatch):
    """Meshes and pair sorting take up to a second: never on the thread of the commands."""
    import fabrik_ros.model.chain as chain_module
    threads = []

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return build(*args, **kwargs)

    build = chain_module.collision_model
    monkeypatch.setattr(chain_module, 'collision_model', recording)
    sphere = '<collision><geometry><sphere radius="0.04"/></geometry></collision>'
    described = ARM_URDF.replace('<link name="forearm">', f'<link name="forearm">{sphere}')
    node = make_node(**ARM_TOPIC)
    describe(node, described)
    assert threads and threading.main_thread() not in threads
    node._on_target(Target(np.array([0.3, 0.1, 0.4])), Header(), 0)
    assert node._controller.solves == 1 and len(threads) == 1


def test_limits_the_user_set_survive_a_new_description_and_must_fit_it(make_node):
    node = make_node(**ARM_TOPIC, **{'joint_limits.base_yaw.max_position': 1.0})
    describe(node, ARM_URDF)
    widened = ARM_URDF.replace('lower="-2.967" upper="2.967"', 'lower="-3.0" upper="3.0"')
    describe(node, widened)
    assert limits(node)['base_yaw.max_position'] == 1.0
    assert limits(node)['base_yaw.min_position'] == -3.0
    describe(node, other_robot())  # refused: base_yaw is not in it
    assert node._model.joint_names[0] == 'base_yaw'


@pytest.mark.parametrize('name, complaint', [
    ('joint_limits.elbowpitch.max_position', "unknown joint 'elbowpitch'"),
    ('joint_limits.elbow_pitch.max_positon', 'joint_limits.elbow_pitch.max_positon: unknown '
     'field'),
])
def test_start_up_refuses_unknown_joints_and_fields_under_joint_limits(
        make_node, name, complaint):
    """A misspelled limit is refused with its name, never silently ignored."""
    with pytest.raises(ValueError, match=complaint):
        make_node(**ARM_FILE, **{name: 0.5})


def test_every_parameter_can_be_read_at_once(make_node):
    """Every parameter, command_joints among them, reads back in one get_parameters."""
    node = make_node(**ARM_FILE)
    names = list(node._parameters)
    values = node.get_parameters(names)
    assert len(values) == len(names) > 50
    assert all(value.type_ != Parameter.Type.NOT_SET for value in values)
    assert node.get_parameter('command_joints').value == node._model.joint_names


def test_outputs_that_are_off_are_not_advertised(make_node):
    """~/joint_trajectory and ~/commands exist only when their outputs are on."""
    node = make_node(**ARM_FILE)
    topics = {publisher.topic_name for publisher in node.publishers}
    assert '/joint_commands' in topics
    assert not topics & {'/ik_node/joint_trajectory', '/ik_node/commands'}


def test_only_the_subscriptions_wake_the_executor_for_qos_events(make_node):
    # Every waitable costs the executor's Python loop on each wake-up: the publishers go
    # without rclpy's default QoS event handlers (their subscribers report a mismatch), the
    # subscriptions keep theirs (a target publisher with incompatible QoS is reported here).
    node = make_node(**ARM_FILE, outputs=['joint_state', 'joint_trajectory', 'forward_command'],
                     feedback_topic='joint_states_feedback')
    assert len(list(node.publishers)) >= 6
    assert not any(publisher.event_handlers for publisher in node.publishers)
    assert all(subscription.event_handlers for subscription in node.subscriptions)
    assert len(list(node.waitables)) == sum(len(subscription.event_handlers)
                                            for subscription in node.subscriptions)


@pytest.mark.parametrize('rviz_targets, namespace, expected', [
    (False, '', set()),
    (True, '', {'/clicked_point', '/goal_pose'}),
    (True, 'left_arm', {'/left_arm/clicked_point', '/left_arm/goal_pose'}),
])
def test_rviz_targets_only_when_asked_for_and_under_the_namespace(
        make_node, rviz_targets, namespace, expected):
    """The RViz topics /clicked_point and /goal_pose reach only an arm that asks for them."""
    node = make_node(namespace=namespace, rviz_targets=rviz_targets, **ARM_FILE)
    topics = {subscription.topic_name for subscription in node.subscriptions}
    assert {topic for topic in topics if topic.endswith(('clicked_point', 'goal_pose'))} \
        == expected


def test_ik_node_and_sim_arm_with_their_defaults_make_a_loop(make_node):
    """With their defaults ik_node commands /joint_commands, sim_arm alone /joint_states."""
    params = load_config(REPO_ROOT / 'config' / 'arm.yaml')
    ik_node = make_node(**params)
    sim_arm = make_node(SimArm, **params)
    ik_out = {publisher.topic_name for publisher in ik_node.publishers}
    sim_in = {subscription.topic_name for subscription in sim_arm.subscriptions}
    sim_out = {publisher.topic_name for publisher in sim_arm.publishers}
    assert '/joint_states' in sim_out and '/joint_states' not in ik_out
    assert '/joint_commands' in ik_out & sim_in


@pytest.mark.parametrize('content', [None, 'a: [\n'])
def test_a_missing_or_broken_params_file_is_one_line(tmp_path, capfd, content):
    """A missing or broken --params-file is one line, not a traceback."""
    path = tmp_path / 'params.yaml'
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as stop:
        run_node(IkNode, 'ik_node', ['ik_node', '--ros-args', '--params-file', str(path)])
    assert stop.value.code == 1
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and 'cannot start' in lines[0] and str(path) in lines[0]
    assert 'Traceback' not in lines[0]


@pytest.mark.parametrize('params, complaint', [
    ({'feedback_topic': 'joint_commands'}, 'would take its own commands for the measured state'),
    ({'joint_limits.base_yaw.max_position': 3.5}, 'would widen the model limits'),
    ({'outputs': ['joint_state', 'servo']}, "outputs ['servo'] unknown"),
    ({'command_joints': ['base_yaw']}, 'must list each of'),
    ({'outputs': ['joint_trajectory']}, 'set feedback_topic'),  # else it assumes a pose
    ({'publish_rate': 1e-300}, 'publish_rate must be 0 (off) or at least'),
    ({'root': 'floating'}, "root must be one of ['pinned', 'free']"),
    ({'root': 'free', 'publish_rate': 0.0}, 'publish_rate or command_rate must be above 0'),
    ({'effector_weights.hand': 2.0}, 'effector_weights.hand: unknown effector'),
])
def test_a_bad_configuration_stops_the_node_with_the_reason(make_node, params, complaint):
    with pytest.raises(ValueError, match=re.escape(complaint)):
        make_node(**ARM_FILE, **params)


@pytest.mark.parametrize('offset, refused', [
    (0.0, ''), (-0.4, ''), (-3.0, 'ago'), (2.5, 'in the future'), (None, '')])
def test_a_target_stamped_beyond_the_target_timeout_is_refused(make_node, offset, refused):
    # Its age is the node clock's now less the stamp, either way; unstamped counts as new.
    node = make_node(**ARM_FILE, target_timeout=0.5)
    published = []
    node._commands.publishers['joint_state'].publish = published.append
    header = Header(frame_id='base_link')
    if offset is not None:
        nanoseconds = node.get_clock().now().nanoseconds + int(offset * 1e9)
        header.stamp.sec, header.stamp.nanosec = divmod(nanoseconds, 1_000_000_000)
    node._on_target(Target(node._model.tip_position(node._model.neutral())), header, None)
    controller = node._controller
    assert bool(published) == (not refused) and controller.refused == bool(refused)
    assert refused in controller.last_refusal


def test_joint_states_carry_the_mimic_followers(make_node):
    """robot_state_publisher needs every joint: followers at multiplier * leader + offset."""
    node = make_node(robot_description_file='urdf/finger.urdf', base_link='palm',
                     tip_links=['fingertip'])
    published = []
    node._commands.publishers['joint_state'].publish = published.append
    chain = node._model
    target = chain.tip_position(chain.clip([0.1, 0.05, 0.6]))
    node._on_target(Target(target), Header(frame_id='palm'), None)
    message = published[-1]
    assert message.name == chain.all_joint_names
    assert {'pip_flex', 'dip_flex'} <= set(message.name)
    position = dict(zip(message.name, message.position))
    assert position['pip_flex'] == pytest.approx(position['mcp_flex'] + 0.1)
    assert position['dip_flex'] == pytest.approx(0.7 * position['mcp_flex'])


def spider(make_node, **parameters: Any) -> IkNode:
    """Return an IK node for the demo's spider with its body free."""
    return make_node(**{**load_config(REPO_ROOT / 'config' / 'spider.yaml'),
                        'root': 'free', **parameters})


def test_effector_weights_are_parameters_of_each_effector(make_node):
    node = spider(make_node, **{'effector_weights.leg2_foot': 4.0})
    weights = {name: parameter.value for name, parameter
               in node.get_parameters_by_prefix('effector_weights').items()}
    assert weights == {f'leg{k}_foot': 4.0 if k == 2 else 0.0 for k in range(1, 7)}
    assert node._controller.settings.effector_weights == {'leg2_foot': 4.0}
    assert node.set_parameters([Parameter('effector_weights.leg1_foot', value=2.0)])[0] \
        .successful
    assert node._controller.settings.effector_weights == {'leg1_foot': 2.0, 'leg2_foot': 4.0}
    refused = node.set_parameters([Parameter('effector_weights.leg1_foot', value=-1.0)])[0]
    assert not refused.successful and node._controller.settings.effector_weights['leg1_foot'] \
        == 2.0
    assert not node.set_parameters([Parameter('publish_rate', value=0.0)])[0].successful


def test_a_free_body_is_published_in_the_odometry_frame(make_node):
    """Targets in odom move the body; ~/body_pose and TF say where it is, markers show it."""
    node = spider(make_node)
    poses, transforms = [], []
    node._body.pose_publisher.publish = poses.append
    if node._body.tf_publisher is not None:
        node._body.tf_publisher.publish = transforms.append
    chain, controller = node._model, node._controller
    shift = np.array([0.3, 0.0, 0.0])
    feet = chain.effector_positions(chain.neutral()) + [0.0, 0.0, -0.1]
    for index, foot in enumerate(feet + shift):
        node._on_target(Target(foot), Header(frame_id='odom'), index)
    node._on_window()  # the spider's targets of one moment, solved together
    assert controller.result.reached and controller.body_goal[0] > 0.25
    controller._body_time -= 10.0  # as if the body had had 10 s to get there
    node._on_tick()
    assert np.array_equal(controller.body, controller.body_goal)
    pose = poses[-1]
    assert (pose.header.frame_id, pose.pose.position.x) == ('odom', controller.body[0])
    if TFMessage is not None:
        transform = transforms[-1].transforms[0]
        assert (transform.header.frame_id, transform.child_frame_id) == ('odom', 'body')
    # A target in the base frame is taken where the body is now.
    node._on_target(Target(feet[0]), Header(frame_id='body'), 0)
    assert np.allclose(controller.targets[0].position, feet[0] + controller.body)


def test_a_command_and_the_body_pose_it_moves_with_share_one_stamp(make_node):
    """A listener pairs them (two topics: they may arrive in either order)."""
    node = spider(make_node)
    poses, commands = [], []
    node._body.pose_publisher.publish = poses.append
    node._commands.publishers['joint_state'].publish = lambda msg: commands.append(
        (msg.header.stamp.sec, msg.header.stamp.nanosec))
    chain = node._model
    feet = chain.effector_positions(chain.neutral()) + [0.05, 0.0, -0.1]
    for index, foot in enumerate(feet):
        node._on_target(Target(foot), Header(frame_id='odom'), index)
    node._on_window()
    assert len(commands) == len(poses) == 1
    assert commands[0] == (poses[0].header.stamp.sec, poses[0].header.stamp.nanosec)


@pytest.mark.parametrize('files, complaint', [
    ([b'\xff\xfe/**: {}'], 'is not UTF-8 text'),
    ([b'- a\n- b\n'], 'must map node names to ros__parameters'),
    ([b'/**:\n  tolerance: 0.01\n'], 'must map node names to ros__parameters'),
    ([b'/**:\n  ros__parameters:\n    max_iterations: 99999999999999999999\n'],
     'does not fit int64'),
    ([b'/**:\n  ros__parameters:\n    max_joint_step: 0.05\n',
      b'/**:\n  ros__parameters:\n    max_joint_step: "0.01"\n'],
     'max_joint_step is a string'),
])
def test_a_params_file_rcl_would_misread_is_one_line_naming_it(tmp_path, capfd, files,
                                                               complaint):
    args = ['ik_node', '--ros-args']
    for index, content in enumerate(files):
        path = tmp_path / f'params{index}.yaml'
        path.write_bytes(content)
        args += ['--params-file', str(path)]
    with pytest.raises(SystemExit):
        run_node(IkNode, 'ik_node', args)
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and complaint in lines[0] and str(path) in lines[0]


def test_a_refused_start_up_value_is_one_line_without_a_traceback(tmp_path, capfd):
    path = tmp_path / 'params.yaml'
    path.write_text('/**:\n  ros__parameters:\n    robot_description_file: urdf/arm.urdf\n'
                    '    feedback_timeout: 1\n')
    with pytest.raises(SystemExit):
        run_node(IkNode, 'ik_node', ['ik_node', '--ros-args', '--params-file', str(path)])
    lines = capfd.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and 'feedback_timeout' in lines[0]


@pytest.mark.parametrize('name, value, reason', [
    ('joint_limits.elbow.max_position', 1.0, "unknown joint 'elbow'"),
    ('max_joint_step', -1.0, 'max_joint_step must be positive (or .inf for no limit)'),
    ('max_joint_step', 1, 'max_joint_step must be a floating-point number'),
    ('joint_limits.base_yaw.max_acceleration', 1.7e308, 'at most 10000 rad/s^2'),
])
def test_runtime_refusals_name_the_parameter_and_why(make_node, name, value, reason):
    node = make_node(**ARM_FILE)
    result = node.set_parameters_atomically([Parameter(name, value=value)])
    assert not result.successful and reason in result.reason


def test_the_same_robot_published_again_changes_nothing(make_node):
    node = make_node(**ARM_TOPIC)
    describe(node, ARM_URDF)
    controller = node._controller
    model = node._model
    controller.on_target(0, Target(model.tip_position(model.neutral() + 0.3)), 0.0)
    goal = controller.stream.goal
    describe(node, ARM_URDF.replace('<robot', '<!-- again -->\n<robot', 1))
    assert node._controller is controller and controller.stream.goal is goal
    assert any(controller.targets)


def test_a_huge_description_is_refused_before_it_is_parsed(make_node, monkeypatch):
    node = make_node(**ARM_TOPIC)
    describe(node, ARM_URDF)
    monkeypatch.setattr(Chain, 'from_urdf', lambda *args: pytest.fail('parsed'))
    describe(node, ARM_URDF + '<joint/>' * 25_000)
    assert node._model.joint_names[0] == 'base_yaw'
