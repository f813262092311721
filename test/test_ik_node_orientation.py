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
The IK node with full poses, built in this process: orientations in, tool frames shown.

Specification: PoseStamped orientations are honoured (target_pose, per-effector
topics), PointStamped and RViz's 2D Goal Pose (goal_pose: a heading on the ground) are
position-only; a zero, non-finite or overflowing
quaternion is refused, a non-unit one normalised; orientation_mode, orientation_tolerance
and tool_axis are validated like every parameter; the markers show the target and reached
tool frames; the draggable target is served where interactive_markers is installed.
"""

from collections.abc import Iterator
import math
from typing import Any

from builtin_interfaces.msg import Time
from fabrik_ros import target_markers
from fabrik_ros.chain import quaternion_from_rotation
from fabrik_ros.ik_node import IkNode
from fabrik_ros.messages import controller_markers
from fabrik_ros.paths import rotation_angles
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
import pytest
from rclpy.parameter import Parameter

ARM = {'robot_description_file': 'urdf/arm.urdf', 'base_link': 'base_link',
       'tip_links': ['tool0']}
POSE = np.array([0.3, 0.5, 0.9, -0.4, 0.7, 0.2])  # a reachable full pose: its tool frame


@pytest.fixture
def make_node(ros_context: Any) -> Iterator:
    """Build ik_nodes in this process with parameter overrides; destroy them at teardown."""
    nodes = []

    def make(**parameters: Any) -> IkNode:
        node = IkNode(context=ros_context, parameter_overrides=[
            Parameter(name, value=value) for name, value in {**ARM, **parameters}.items()])
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()


def pose_message(frame: np.ndarray, scale: float = 1.0) -> PoseStamped:
    """Return a PoseStamped of a (4, 4) frame, its quaternion times `scale`."""
    msg = PoseStamped()
    msg.header.frame_id = 'base_link'
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = frame[:3, 3].tolist()
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (scale * quaternion_from_rotation(frame[:3, :3])).tolist()
    return msg


def test_a_pose_target_brings_the_commanded_tool_frame_onto_it(make_node):
    node = make_node()
    goal = node._model.tip_pose(POSE)
    node._on_pose(pose_message(goal, scale=3.0))  # not unit: normalised
    controller = node._controller
    assert np.linalg.norm(controller.targets[0].orientation) == pytest.approx(1.0)
    tool = node._model.tip_pose(controller.stream.position)
    assert np.linalg.norm(tool[:3, 3] - goal[:3, 3]) <= 1e-4
    assert rotation_angles(tool[:3, :3], goal[:3, :3]) <= 1e-3 + 1e-9
    values = controller.status(0.0, 1.0).values
    assert float(values['orientation_error_rad']) <= 1e-3


def test_a_point_target_is_position_only(make_node):
    node = make_node()
    msg = PointStamped()
    msg.header.frame_id = 'base_link'
    msg.point.x, msg.point.y, msg.point.z = node._model.tip_pose(POSE)[:3, 3].tolist()
    node._on_point(msg)
    assert node._controller.targets[0].orientation is None
    assert node._controller.result.reached


@pytest.mark.parametrize('xyzw, reason', [
    ((0.0, 0.0, 0.0, 0.0), 'zero quaternion'),
    ((0.0, math.nan, 0.0, 1.0), 'not finite'),
    ((1e300, 1e300, 0.0, 0.0), 'overflows'),
])
def test_an_unusable_quaternion_is_refused_and_nothing_moves(make_node, xyzw, reason):
    node = make_node()
    before = node._controller.stream.position.copy()
    msg = pose_message(node._model.tip_pose(POSE))
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = xyzw
    node._on_pose(msg)
    assert node._controller.targets == [None]
    assert node._controller.refused == 1 and reason in node._controller.last_refusal
    assert np.array_equal(node._controller.stream.position, before)


@pytest.mark.parametrize('name, value, reason', [
    ('orientation_mode', 'roll', 'orientation_mode must be one of full, axis, position'),
    ('tool_axis', [0.0, 0.0, 0.0], 'tool_axis must be a direction'),
    ('orientation_tolerance', 0.0, ''),  # out of the descriptor's range
    ('orientation_tolerance', 4.0, ''),
])
def test_bad_orientation_parameters_are_refused_and_leave_no_trace(
        make_node, name, value, reason):
    node = make_node()
    result = node.set_parameters([Parameter(name, value=value)])[0]
    assert not result.successful and reason in result.reason
    settings = node._controller.settings
    assert (settings.orientation_mode, settings.orientation_tolerance, settings.tool_axis) == (
        'full', 1e-3, (0.0, 0.0, 1.0))


def test_orientation_parameters_take_effect_on_the_next_solve(make_node):
    node = make_node()
    assert node.set_parameters([Parameter('orientation_mode', value='axis'),
                                Parameter('tool_axis', value=[1.0, 0.0, 0.0]),
                                Parameter('orientation_tolerance', value=0.01)])[0].successful
    settings = node._controller.settings
    assert (settings.orientation_mode, settings.orientation_tolerance, settings.tool_axis) == (
        'axis', 0.01, (1.0, 0.0, 0.0))
    node._on_pose(pose_message(node._model.tip_pose(POSE)))
    assert node._controller.status(0.0, 1.0).values['orientation_mode'] == 'axis'


def drawn(node: IkNode) -> list:
    """Return the markers the node would publish now."""
    return controller_markers(node._controller, node._paths, 'base_link', Time()).markers


def test_markers_show_the_target_and_reached_tool_frames(make_node):
    node = make_node()
    goal = node._model.tip_pose(POSE)
    node._on_pose(pose_message(goal))
    markers = {(m.ns, m.id): m for m in drawn(node)}
    target, reached = markers['target_frames', 0], markers['reached_frames', 0]
    for frame, marker in ((goal, target),
                          (node._model.tip_pose(node._controller.stream.position), reached)):
        points = np.array([[p.x, p.y, p.z] for p in marker.points]).reshape(3, 2, 3)
        assert np.allclose(points[:, 0], frame[:3, 3])
        directions = points[:, 1] - points[:, 0]
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        assert np.allclose(directions, frame[:3, :3].T, atol=1e-9)
    assert target.scale.x < reached.scale.x, 'the thin target frame lets the reached one show'
    node._on_point(PointStamped())  # position-only now: no frames
    assert not [m for m in drawn(node) if 'frames' in m.ns]
    node.set_parameters([Parameter('orientation_mode', value='position')])
    node._on_pose(pose_message(goal))  # orientations ignored: no frames either
    assert not [m for m in drawn(node) if 'frames' in m.ns]


def test_a_tree_with_draggable_targets_takes_targets_for_each_effector(make_node):
    """The marker of the effector that took a target follows it (none: no server here)."""
    node = make_node(robot_description_file='urdf/dual_arm.urdf',
                     tip_links=['left_tool', 'right_tool'], rviz_targets=True,
                     target_window=0.0)
    frames = node._model.effector_poses(node._model.neutral())
    for index in (1, 0):
        node._on_pose(pose_message(frames[index]), index)
    assert [target.position.tolist() for target in node._controller.targets] == [
        frames[0][:3, 3].tolist(), frames[1][:3, 3].tolist()]


def test_the_draggable_target_is_served_with_rviz_targets(make_node):
    without = make_node()
    assert without._target_markers is None
    node = make_node(rviz_targets=True)
    if target_markers.InteractiveMarkerServer is None:
        assert node._target_markers is None, 'one log line, and the node goes on'
        pytest.skip('interactive_markers is not installed (a ROS package, not on PyPI): '
                    'the served target is checked where it is')
    topics = {publisher.topic_name for publisher in node.publishers}
    assert '/ik_node/target/update' in topics
    goal = node._model.tip_pose(POSE)
    node._target_markers._on_target(pose_message(goal), 0)  # as the server's feedback does
    assert np.allclose(node._controller.targets[0].position, goal[:3, 3])
    elsewhere = node._model.tip_pose(-POSE)
    node._on_pose(pose_message(elsewhere))  # from target_pose: the marker follows
    shown = node._target_markers._server.get('tool0').pose
    assert np.allclose([shown.position.x, shown.position.y, shown.position.z],
                       elsewhere[:3, 3])
    assert np.allclose(np.abs(quaternion_from_rotation(elsewhere[:3, :3]) @ [
        shown.orientation.x, shown.orientation.y, shown.orientation.z, shown.orientation.w]),
        1.0)


def test_a_2d_goal_pose_is_reached_by_its_position(make_node):
    """A 2D Goal Pose from RViz lies on the ground, z up: its position is the target."""
    node = make_node(rviz_targets=True)
    position = node._model.tip_position(POSE)
    msg = pose_message(np.eye(4))
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = position.tolist()
    node._on_goal_pose(msg)
    target = node._controller.targets[0]
    assert target.orientation is None
    np.testing.assert_allclose(target.position, position)
