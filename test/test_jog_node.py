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
The IK node's velocity command topics, built in this process (no DDS round trips).

Specification: ``~/delta_twist_cmds`` (TwistStamped) and ``~/delta_joint_cmds`` (JointJog,
or JointState without control_msgs) are subscribed, a tree has a twist topic per effector;
a twist moves the tool in the frame of its header (the base link, the tip link, empty:
``jog_frame`` or else the tool frame); once the stream stops the arm is at rest within the
jog timeout plus its braking time; ``~/status`` carries Servo's codes and the diagnostics
the status; refusals name the reason and move nothing. The node's clock is replaced by a
counter, so no test sleeps.
"""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fabrik_ros import ik_node, node_jog, node_model
from fabrik_ros.config import load_config
from fabrik_ros.ik_node import IkNode
from fabrik_ros.jog import JogStatus
from fabrik_ros.node_jog import JointJog
from geometry_msgs.msg import TwistStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter
from std_msgs.msg import Header

REPO_ROOT = Path(__file__).resolve().parents[1]
DT = 0.01  # s, the command period
ARM = {'robot_description_file': 'urdf/arm.urdf', 'base_link': 'base_link',
       'tip_links': ['tool0'], 'command_rate': 1.0 / DT, 'default_max_acceleration': 20.0}
READY = [0.0, 0.5, 1.0, 0.0, 0.8, 0.0]  # well conditioned


class Clock:
    """A monotonic clock the test advances by hand."""

    def __init__(self) -> None:
        """Start at 100 s."""
        self.now = 100.0

    def monotonic(self) -> float:
        """Return the time."""
        return self.now


@pytest.fixture(name='clock')
def clock_fixture(monkeypatch) -> Clock:
    """Replace the node modules' clock by one the test advances."""
    clock = Clock()
    for module in (ik_node, node_jog, node_model):
        monkeypatch.setattr(module, 'time', SimpleNamespace(monotonic=clock.monotonic))
    return clock


def ready_arm(make_node, **parameters: Any) -> tuple[IkNode, list, list]:
    """Return an arm node commanding READY, and the lists its commands and statuses go to."""
    node = make_node(**{**ARM, **parameters})
    node._controller.stream.start(np.array(READY))
    commands, statuses = [], []
    # The node refills one JointState: keep copies of what it held.
    node._commands.publishers['joint_state'].publish = lambda msg: commands.append(
        SimpleNamespace(position=list(msg.position), velocity=list(msg.velocity)))
    node._jog._status_pub.publish = lambda msg: statuses.append(msg.data)
    return node, commands, statuses


def twist(linear=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0), frame: str = '') -> TwistStamped:
    msg = TwistStamped(header=Header(frame_id=frame))
    msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = map(float, linear)
    msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z = map(float, angular)
    return msg


def stream(node: IkNode, clock: Clock, msg, seconds: float, topic: str = 'twist') -> None:
    """Send `msg` before each tick for `seconds`, as a joystick at the command rate."""
    for _ in range(int(round(seconds / DT))):
        clock.now += DT
        if topic == 'twist':
            node._jog._on_twist(msg, 0)
        else:
            node._jog._on_joint_jog(msg)
        node._on_tick()


def tool_velocity(node: IkNode, commands: list) -> np.ndarray:
    """Return the tool's base-frame linear velocity between the last two commands, m/s."""
    model = node._model
    before, after = (np.array(message.position[:model.dof]) for message in commands[-2:])
    return (model.tip_position(after) - model.tip_position(before)) / DT


def test_the_jog_topics_are_the_node_s_own(make_node):
    node = make_node(**ARM)
    topics = {subscription.topic_name for subscription in node.subscriptions}
    assert {'/ik_node/delta_twist_cmds', '/ik_node/delta_joint_cmds'} <= topics
    assert '/ik_node/status' in {publisher.topic_name for publisher in node.publishers}


def test_a_tree_has_a_twist_topic_per_effector_that_jogs_its_position(make_node, clock):
    node = make_node(**{**load_config(REPO_ROOT / 'config' / 'dual_arm.yaml'),
                        'command_rate': 1.0 / DT})
    topics = {subscription.topic_name for subscription in node.subscriptions}
    for name in node._model.effector_names:
        assert f'/ik_node/{name}/delta_twist_cmds' in topics
    model, controller = node._model, node._controller
    start = np.full(model.dof, 0.3)
    start[[model.joint_names.index('left_elbow_pitch'),
           model.joint_names.index('right_elbow_pitch')]] = -1.5  # well bent
    controller.stream.start(start)
    msg = twist((0.0, 0.0, 0.05), frame='base_link')
    for _ in range(30):
        clock.now += DT
        node._jog._on_twist(msg, 'left_tool')
        node._on_tick()
    # Five joints per arm: the tool's position is jogged, its turning left free.
    assert not controller.jog.settings.track_orientation
    tips = model.effector_positions(controller.stream.position)
    before = model.effector_positions(start)
    assert tips[0][2] - before[0][2] > 0.005
    np.testing.assert_allclose(tips[1], before[1], atol=5e-4)


@pytest.mark.parametrize('frame, axes', [('base_link', 'base'), ('tool0', 'tool'),
                                         ('', 'tool')])
def test_a_twist_moves_the_tool_in_its_header_frame(make_node, clock, frame, axes):
    node, commands, _ = ready_arm(make_node)
    tool = node._model.tip_pose(np.array(READY))[:3, :3]
    wanted = np.array([0.03, -0.02, 0.04])
    stream(node, clock, twist(wanted, frame=frame), 0.5)
    expected = wanted if axes == 'base' else tool @ wanted
    assert np.linalg.norm(tool_velocity(node, commands) - expected) <= 0.05 * 0.054
    assert node._controller.jog.source == 'twist'


def test_jog_frame_names_the_frame_of_a_twist_without_one(make_node, clock):
    node, commands, _ = ready_arm(make_node, jog_frame='base_link')
    stream(node, clock, twist((0.0, 0.0, 0.05)), 0.5)
    np.testing.assert_allclose(tool_velocity(node, commands), [0.0, 0.0, 0.05], atol=2.5e-3)


def test_when_the_stream_stops_the_arm_rests_within_the_timeout_and_braking(make_node, clock):
    node, commands, statuses = ready_arm(make_node)
    stream(node, clock, twist((0.05, 0.05, 0.0), frame='base_link'), 0.5)
    speed = np.abs(np.array(commands[-1].velocity)).max()
    stopped_at = clock.now
    while np.any(commands[-1].velocity):
        clock.now += DT
        node._on_tick()
        assert clock.now - stopped_at <= 0.1 + speed / 20.0 + 2 * DT
    assert not node._controller.jog.active
    assert not statuses, 'no change from NO_WARNING, published at the start (latched)'


def test_a_joint_jog_moves_the_named_joint(make_node, clock):
    node, commands, _ = ready_arm(make_node)
    if hasattr(JointJog, 'joint_names'):
        msg = JointJog(joint_names=['base_yaw'], velocities=[0.3])
    else:  # sensor_msgs/JointState: names and velocities
        msg = JointJog(name=['base_yaw'], velocity=[0.3])
    stream(node, clock, msg, 0.3, topic='joint')
    velocity = np.array(commands[-1].velocity)
    assert velocity[0] == pytest.approx(0.3) and not np.any(velocity[1:])


def test_the_status_topic_and_the_diagnostics_carry_servo_s_codes(make_node, clock):
    node, _, statuses = ready_arm(make_node)
    node._controller.stream.start(np.array([0.0, 0.0, 0.0, 0.0, 0.3, 0.0]))  # stretched
    stream(node, clock, twist((0.0, 0.0, 0.1), frame='base_link'), 0.3)  # out along it
    assert statuses[-1] != JogStatus.NO_WARNING and statuses[-1] in set(JogStatus)
    values = node._controller.status(clock.now, 1.0).values
    assert values['jog_status'].startswith(f'{statuses[-1]} ')


@pytest.mark.parametrize('msg, reason', [
    (twist((float('nan'), 0.0, 0.0), frame='base_link'), 'twist must be 6 finite numbers'),
    (twist((0.1, 0.0, 0.0), frame='camera'), "'camera'"),
])
def test_a_command_the_node_cannot_take_is_refused_and_moves_nothing(
        make_node, clock, msg, reason):
    node, commands, _ = ready_arm(make_node)
    stream(node, clock, msg, 0.1)
    controller = node._controller
    assert reason in controller.last_refusal and controller.jog.refused == 10
    assert not controller.jog.active and not np.any(commands[-1].velocity)


def test_jog_parameters_have_ranges(make_node):
    node = make_node(**ARM)
    for name, value in (('jog_timeout', 0.0), ('jog_pass_condition', 1.0),
                        ('jog_posture_gain', -1.0)):
        assert not node.set_parameters([Parameter(name, value=value)])[0].successful
    assert node.set_parameters([Parameter('jog_timeout', value=0.25)])[0].successful
    node._jog._ready()
    assert node._controller.jog.settings.timeout == 0.25
