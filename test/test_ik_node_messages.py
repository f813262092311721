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

"""Message conversions of the IK node, without DDS: what goes in is refused or converted."""

import math

from builtin_interfaces.msg import Time
from fabrik_ros.chain import Chain, rotation_from_quaternion
from fabrik_ros.messages import (AXIS_COLOURS, body_pose, body_transform, branch_paths,
                                 chain_markers, frame_markers, point_array, pose_message,
                                 quaternion_array, REACHED_COLOUR, TargetError,
                                 transform_orientation, transform_point,
                                 UNREACHED_COLOUR)
from geometry_msgs.msg import Point, Quaternion
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from visualization_msgs.msg import Marker

finite = st.floats(-10.0, 10.0)
HALF = math.sqrt(0.5)


@pytest.mark.parametrize('xyz', [(math.nan, 0.0, 0.0), (0.0, math.inf, 0.0),
                                 (0.0, 0.0, -math.inf)])
def test_non_finite_positions_are_refused(xyz):
    with pytest.raises(TargetError, match='not finite'):
        point_array(Point(x=xyz[0], y=xyz[1], z=xyz[2]))


@pytest.mark.parametrize('xyzw, reason', [((0.0, 0.0, 0.0, 0.0), 'zero quaternion'),
                                          ((1e-9, 0.0, 0.0, 0.0), 'zero quaternion'),
                                          ((0.0, math.nan, 0.0, 1.0), 'not finite'),
                                          ((1e300, 1e300, 0.0, 0.0), 'overflows')])
def test_unusable_quaternions_are_refused(xyzw, reason):
    x, y, z, w = xyzw
    with pytest.raises(TargetError, match=reason):
        quaternion_array(Quaternion(x=x, y=y, z=z, w=w))


@settings(max_examples=50, deadline=None)
@given(st.tuples(finite, finite, finite, finite).filter(
    lambda q: np.linalg.norm(q) > 1e-3))
def test_quaternions_become_proper_rotations(xyzw):
    x, y, z, w = xyzw
    rotation = rotation_from_quaternion(quaternion_array(Quaternion(x=x, y=y, z=z, w=w)))
    assert np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-9)
    assert np.linalg.det(rotation) == pytest.approx(1.0)


def test_transform_point_rotates_then_translates():
    quarter_turn_about_z = np.array([0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)])
    moved = transform_point(np.array([1.0, 2.0, 3.0]), quarter_turn_about_z,
                            np.array([1.0, 0.0, 0.0]))
    assert np.allclose(moved, [1.0, 3.0, 3.0])


def test_branch_paths_follow_each_effector_back_to_the_base():
    # joints: 0 trunk, 1-2 left arm, 3-4 right arm
    assert branch_paths([-1, 0, 1, 0, 3], [2, 4]) == [[0, 1, 2], [0, 3, 4]]
    assert branch_paths([-1, 0, 1], [2]) == [[0, 1, 2]]


def legged() -> Chain:
    """Return a two-legged tree of 2-segment legs."""
    return Chain.from_parameters(2, 0.1, legs=2, body_radius=0.05, tip_link='foot')


@pytest.mark.parametrize('reached, colour', [(True, REACHED_COLOUR),
                                             (False, UNREACHED_COLOUR)])
def test_markers_draw_every_branch_and_the_targets(reached, colour):
    """One line per branch; green where every target is reached, else red."""
    chain = legged()
    q = chain.neutral()
    kinematics = chain.forward(q)
    paths = branch_paths(chain.parents.tolist(), [e.parent for e in chain.effectors])
    targets = np.array([[0.2, 0.0, 0.0], [np.nan, np.nan, np.nan]])
    markers = chain_markers('base_link', Time(sec=1), kinematics.positions,
                            kinematics.effectors, paths, targets, [reached] * 2).markers
    assert markers[0].action == Marker.DELETEALL
    joints = [m for m in markers if m.ns == 'joints']
    links = [m for m in markers if m.ns == 'links']
    spheres = [m for m in markers if m.ns == 'targets']
    assert len(joints[0].points) == chain.dof and joints[0].color == colour
    assert len(links) == 2  # one line per leg, each from the base to its foot
    for line, path, foot in zip(links, paths, kinematics.effectors):
        assert line.type == Marker.LINE_STRIP and line.color == colour
        assert len(line.points) == len(path) + 2
        assert (line.points[-1].x, line.points[-1].y, line.points[-1].z) == tuple(foot)
    assert len(spheres) == 1  # no sphere for the leg without a target
    assert spheres[0].pose.position.x == 0.2
    assert all(m.header.frame_id == 'base_link' for m in markers)


def test_markers_colour_each_branch_by_its_effector_and_mark_a_free_body():
    """A free root: a foot out of reach is red, the others green; the body is a cube."""
    chain = legged()
    kinematics = chain.forward(chain.neutral())
    body = np.array([1.0, 2.0, 0.5])
    paths = branch_paths(chain.parents.tolist(), [e.parent for e in chain.effectors])
    markers = chain_markers('odom', Time(sec=1), kinematics.positions + body,
                            kinematics.effectors + body, paths, np.full((2, 3), np.nan),
                            [True, False], body).markers
    links = [m for m in markers if m.ns == 'links']
    assert [line.color for line in links] == [REACHED_COLOUR, UNREACHED_COLOUR]
    assert [m.color for m in markers if m.ns == 'joints'] == [UNREACHED_COLOUR]
    assert all((line.points[0].x, line.points[0].y, line.points[0].z) == (1.0, 2.0, 0.5)
               for line in links)
    cube = next(m for m in markers if m.ns == 'body')
    assert cube.type == Marker.CUBE and cube.pose.position.y == 2.0


def test_the_body_transform_and_pose_say_where_the_base_is_in_odom():
    transform = body_transform(Time(sec=3), 'odom', 'base_link', np.array([0.5, -0.25, 0.0]))
    assert (transform.header.frame_id, transform.child_frame_id) == ('odom', 'base_link')
    assert transform.transform.translation.x == 0.5 and transform.transform.rotation.w == 1.0
    pose = body_pose(transform)
    assert pose.header.frame_id == 'odom' and pose.header.stamp.sec == 3
    assert (pose.pose.position.x, pose.pose.position.y) == (0.5, -0.25)


def test_transform_orientation_turns_the_target_frame_with_the_transform():
    quarter_turn_about_z = np.array([0.0, 0.0, HALF, HALF])
    tool_down = np.array([1.0, 0.0, 0.0, 0.0])  # half turn about x
    turned = rotation_from_quaternion(transform_orientation(quarter_turn_about_z, tool_down))
    assert np.allclose(turned, rotation_from_quaternion(quarter_turn_about_z)
                       @ rotation_from_quaternion(tool_down))
    assert np.allclose(turned[:, 2], [0.0, 0.0, -1.0]), 'still pointing down'
    assert np.allclose(turned[:, 0], [0.0, 1.0, 0.0]), 'its x turned onto y'


def test_pose_message_carries_position_and_orientation():
    transform = np.eye(4)
    transform[:3, :3] = rotation_from_quaternion([0.0, 0.0, math.sin(0.3), math.cos(0.3)])
    transform[:3, 3] = [0.1, -0.2, 0.3]
    pose = pose_message(transform)
    assert (pose.position.x, pose.position.y, pose.position.z) == (0.1, -0.2, 0.3)
    orientation = pose.orientation
    assert np.allclose([orientation.x, orientation.y, orientation.z, orientation.w],
                       [0.0, 0.0, math.sin(0.3), math.cos(0.3)])


def test_frames_are_drawn_as_red_green_blue_axes():
    target = np.eye(4)
    target[:3, :3] = rotation_from_quaternion(np.array([0.0, 0.0, HALF, HALF]))  # quarter turn, z
    target[:3, 3] = [0.5, 0.0, 0.2]
    no_orientation = np.full((4, 4), np.nan)
    markers = frame_markers('base_link', Time(sec=1), 'target_frames',
                            np.array([no_orientation, target]), width=0.01, length=0.1)
    assert len(markers) == 1, 'an effector without an orientation has no frame'
    axes = markers[0]
    assert axes.type == Marker.LINE_LIST and axes.ns == 'target_frames' and axes.id == 1
    assert axes.scale.x == 0.01 and axes.header.frame_id == 'base_link'
    ends = np.array([[p.x, p.y, p.z] for p in axes.points]).reshape(3, 2, 3)
    assert np.allclose(ends[:, 0], [0.5, 0.0, 0.2]), 'every axis starts at the origin'
    # x turned onto y, y onto -x, z stays: in red, green, blue.
    assert np.allclose(ends[:, 1] - ends[:, 0], [[0, 0.1, 0], [-0.1, 0, 0], [0, 0, 0.1]])
    assert axes.colors[::2] == list(AXIS_COLOURS) and axes.colors[1::2] == list(AXIS_COLOURS)
    assert [c.r > 0.5 for c in AXIS_COLOURS] == [True, False, False]
    assert [c.b > 0.5 for c in AXIS_COLOURS] == [False, False, True]
