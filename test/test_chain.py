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

"""Specification of the kinematic model: URDF and parameter chains, FK, limits, URDF output."""

import math
from pathlib import Path
import xml.etree.ElementTree as ElementTree

from fabrik_ros.chain import (Chain, ChainError, Effector, Joint, MAX_JOINTS, Mimic,
                              quaternion_from_rotation, rotation_about_axis,
                              rotation_from_quaternion, rotation_from_rpy, rpy_from_rotation)
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest

SHARE = Path(__file__).resolve().parents[1]
TWO_PI = 2.0 * math.pi
X, Y, Z = np.eye(3)

angles = st.floats(-math.pi, math.pi, allow_nan=False)
coordinates = st.floats(-0.5, 0.5, allow_nan=False)
vectors = st.tuples(coordinates, coordinates, coordinates).map(np.array)
rpys = st.tuples(angles, angles, angles)


def read_urdf(name: str) -> str:
    """Return the text of urdf/<name>.urdf."""
    return (SHARE / 'urdf' / f'{name}.urdf').read_text()


def urdf(*joints: str, links=('base', 'a', 'b', 'c', 'tip')) -> str:
    """Return a URDF document with the given links and joint elements."""
    link_elements = ''.join(f'<link name="{link}"/>' for link in links)
    return f'<robot name="r">{link_elements}{"".join(joints)}</robot>'


def joint_xml(name, parent, child, kind='revolute', xyz='0 0 0', rpy='0 0 0',
              axis='0 0 1', limit='<limit lower="-1" upper="1" effort="1" velocity="2"/>'):
    """Return one URDF <joint> element."""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>')


def planar_arm(lengths=(0.3, 0.2, 0.1)) -> Chain:
    """Return a serial chain of pitch hinges with links along x."""
    return Chain.from_parameters(len(lengths), list(lengths), segment_axes=['y'])


def in_limits(chain: Chain, data) -> np.ndarray:
    """Draw a joint vector within the chain's limits (continuous joints in [-pi, pi])."""
    low = np.maximum(chain.lower, -math.pi)
    high = np.minimum(chain.upper, math.pi)
    fractions = data.draw(st.lists(st.floats(0.0, 1.0), min_size=chain.dof,
                                   max_size=chain.dof))
    return low + np.array(fractions) * (high - low)


@st.composite
def random_trees(draw, max_joints: int = 7) -> Chain:
    """Draw a random tree: any parents, origins, axes and limits, 1 to 3 effectors."""
    joints = []
    for index in range(draw(st.integers(1, max_joints))):
        axis = draw(vectors)
        assume(np.linalg.norm(axis) > 0.05)
        if draw(st.booleans()):
            lower, upper = -math.inf, math.inf
        else:
            lower, upper = draw(st.floats(-3.0, 0.0)), draw(st.floats(0.0, 3.0))
        joints.append(Joint(f'j{index}', draw(st.integers(-1, index - 1)), draw(vectors),
                            rotation_from_rpy(draw(rpys)), axis, lower, upper,
                            draw(st.floats(0.1, 10.0))))
    effectors = [Effector(f'tip{k}', draw(st.integers(-1, len(joints) - 1)), draw(vectors),
                          rotation_from_rpy(draw(rpys)))
                 for k in range(draw(st.integers(1, 3)))]
    return Chain('base', joints, effectors)


def rounded(points) -> list[tuple[float, ...]]:
    """Return points as sorted tuples rounded to a nanometre, to compare sets of points."""
    return sorted(tuple(np.round(point, 9) + 0.0) for point in points)


def reorder(q: np.ndarray, source: Chain, target: Chain) -> np.ndarray:
    """Return q of `source` as the joint vector of `target`, matching joints by name."""
    return np.array([q[source.joint_names.index(name)] for name in target.joint_names])


class TestRotations:
    """URDF roll/pitch/yaw is R = Rz(yaw) @ Ry(pitch) @ Rx(roll), about fixed axes."""

    def test_single_axis_rotations_turn_the_right_way(self):
        np.testing.assert_allclose(rotation_from_rpy([0, 0, math.pi / 2]) @ X, Y, atol=1e-15)
        np.testing.assert_allclose(rotation_from_rpy([math.pi / 2, 0, 0]) @ Y, Z, atol=1e-15)
        np.testing.assert_allclose(rotation_from_rpy([0, math.pi / 2, 0]) @ Z, X, atol=1e-15)

    def test_roll_then_pitch_then_yaw_about_fixed_axes(self):
        # Roll 90 deg takes y to z; pitch 90 deg takes that z to x; yaw 90 deg takes x to y.
        rotation = rotation_from_rpy([math.pi / 2, math.pi / 2, math.pi / 2])
        np.testing.assert_allclose(rotation @ Y, Y, atol=1e-15)
        np.testing.assert_allclose(rotation @ X, -Z, atol=1e-15)

    @given(rpys)
    def test_matches_composition_of_axis_rotations(self, rpy):
        roll, pitch, yaw = rpy
        expected = (rotation_about_axis(Z, yaw) @ rotation_about_axis(Y, pitch)
                    @ rotation_about_axis(X, roll))
        np.testing.assert_allclose(rotation_from_rpy(rpy), expected, atol=1e-12)

    @given(angles, st.one_of(angles, st.sampled_from([-1.0, 1.0]).flatmap(
        lambda sign: st.floats(-1e-9, 1e-9).map(lambda e: sign * math.pi / 2 + e))), angles)
    def test_rpy_from_rotation_inverts_it_at_and_near_gimbal_lock(self, roll, pitch, yaw):
        # A rotation built by products carries rounding noise, which must not be amplified
        # where yaw and roll become degenerate.
        rotation = (rotation_about_axis(Z, yaw) @ rotation_about_axis(Y, pitch)
                    @ rotation_about_axis(X, roll))
        np.testing.assert_allclose(rotation_from_rpy(rpy_from_rotation(rotation)), rotation,
                                   atol=1e-14)


class TestForwardKinematics:
    """forward(q) returns world joint origins, axes, frames and effector points."""

    def test_zero_pose_is_straight_along_x(self):
        chain = planar_arm()
        kinematics = chain.forward(chain.neutral())
        np.testing.assert_allclose(kinematics.positions, [[0, 0, 0], [0.3, 0, 0], [0.5, 0, 0]])
        np.testing.assert_allclose(kinematics.effectors, [[0.6, 0, 0]])
        np.testing.assert_allclose(kinematics.axes, [Y] * 3)

    def test_planar_pitch_arm_matches_hand_computed_tip(self):
        q = np.array([0.3, -0.7, 1.1])
        # A positive pitch about +y turns +x toward -z.
        expected = sum(length * np.array([math.cos(a), 0.0, -math.sin(a)])
                       for length, a in zip((0.3, 0.2, 0.1), np.cumsum(q)))
        np.testing.assert_allclose(planar_arm().tip_position(q), expected, atol=1e-12)

    def test_rotations_are_frames_after_the_joint_rotation(self):
        q = np.array([0.3, -0.7, 1.1])
        rotations = planar_arm().forward(q).rotations
        for rotation, angle in zip(rotations, np.cumsum(q)):
            np.testing.assert_allclose(rotation, rotation_from_rpy([0, angle, 0]), atol=1e-12)

    def test_urdf_origin_rpy_and_axis_match_a_hand_computed_pose(self):
        # Joint frame at z = 0.1 yawed by 90 deg, so its local x (the axis) is world y.
        document = urdf(joint_xml('j', 'base', 'a', xyz='0 0 0.1', rpy='0 0 1.5707963267948966',
                                  axis='1 0 0'),
                        joint_xml('t', 'a', 'tip', kind='fixed', xyz='0 0.2 0', limit=''))
        chain = Chain.from_urdf(document, 'base', 'tip')
        # q = 0: the local +y offset is world -x.
        np.testing.assert_allclose(chain.tip_position([0.0]), [-0.2, 0, 0.1], atol=1e-12)
        # q = 90 deg about local x takes local y to local z, i.e. straight up.
        np.testing.assert_allclose(chain.tip_position([math.pi / 2]), [0, 0, 0.3], atol=1e-12)
        np.testing.assert_allclose(chain.forward([0.3]).axes, [Y], atol=1e-12)

    def test_demo_arm_neutral_pose(self):
        chain = Chain.from_urdf(read_urdf('arm'), 'base_link', 'tool0')
        kinematics = chain.forward(chain.neutral())
        # Straight up, with the 0.1 m lateral shoulder offset.
        np.testing.assert_allclose(kinematics.positions[:, 2], [0.1, 0.3, 0.7, 0.9, 1.05, 1.11])
        np.testing.assert_allclose(kinematics.effectors, [[0, 0.1, 1.19]], atol=1e-12)

    def test_offset_arm_has_the_published_ur5_zero_pose(self):
        chain = Chain.from_urdf(read_urdf('offset_arm'), 'base_link', 'tool0')
        np.testing.assert_allclose(chain.tip_position(np.zeros(6)),
                                   [0.81725, 0.19145, -0.005491], atol=1e-9)

    def test_accessors_agree_with_forward(self):
        chain = Chain.from_parameters(4, 0.1, joint_type='two_axis')
        q = np.linspace(-0.5, 0.5, chain.dof)
        kinematics = chain.forward(q)
        np.testing.assert_array_equal(chain.joint_positions(q), kinematics.positions)
        np.testing.assert_array_equal(chain.effector_positions(q), kinematics.effectors)
        np.testing.assert_array_equal(chain.tip_position(q), kinematics.effectors[0])

    def test_wrong_joint_vector_length_is_rejected(self):
        with pytest.raises(ValueError, match=r'expected \(3,\)'):
            planar_arm().forward([0.0, 0.0])

    @settings(max_examples=60, deadline=None)
    @given(random_trees(), st.data())
    def test_frames_are_rotations_and_links_keep_their_lengths(self, chain, data):
        q = in_limits(chain, data)
        kinematics = chain.forward(q)
        rotations = kinematics.rotations
        np.testing.assert_allclose(rotations @ rotations.transpose(0, 2, 1),
                                   np.broadcast_to(np.eye(3), rotations.shape), atol=1e-12)
        np.testing.assert_allclose(np.linalg.norm(kinematics.axes, axis=1), 1.0)
        for index, joint in enumerate(chain.joints):
            parent = (kinematics.positions[joint.parent] if joint.parent >= 0
                      else np.zeros(3))
            assert np.linalg.norm(kinematics.positions[index] - parent) == pytest.approx(
                np.linalg.norm(joint.origin_xyz), abs=1e-12)

    @settings(max_examples=60, deadline=None)
    @given(random_trees(), st.data())
    def test_tool_frames_are_the_tip_links_frames(self, chain, data):
        q = in_limits(chain, data)
        kinematics = chain.forward(q)
        poses = chain.effector_poses(q)
        for index, effector in enumerate(chain.effectors):
            rotation = (kinematics.rotations[effector.parent] if effector.parent >= 0
                        else np.eye(3))
            np.testing.assert_allclose(poses[index, :3, :3], rotation @ effector.rotation,
                                       atol=1e-12)
        np.testing.assert_allclose(poses[:, :3, 3], kinematics.effectors, atol=1e-12)
        np.testing.assert_array_equal(poses[:, 3], np.broadcast_to([0, 0, 0, 1],
                                                                   (len(poses), 4)))
        np.testing.assert_array_equal(chain.tip_pose(q), poses[0])

    def test_a_urdf_tool_frame_keeps_its_fixed_joint_rotation(self):
        tipped = urdf('<joint name="j1" type="revolute"><parent link="base"/>'
                      '<child link="a"/><axis xyz="0 0 1"/>'
                      '<limit lower="-1" upper="1" velocity="1"/></joint>',
                      '<joint name="tool" type="fixed"><parent link="a"/><child link="tip"/>'
                      '<origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/></joint>',
                      links=('base', 'a', 'tip'))
        chain = Chain.from_urdf(tipped, 'base', 'tip')
        pose = chain.tip_pose([0.5])
        np.testing.assert_allclose(pose[:3, :3], rotation_about_axis(Z, 0.5)
                                   @ rotation_from_rpy([0.0, math.pi / 2, 0.0]), atol=1e-12)
        np.testing.assert_allclose(pose[:3, 3], [0.1 * math.cos(0.5), 0.1 * math.sin(0.5), 0],
                                   atol=1e-12)

    @given(rpys)
    def test_quaternions_and_rotations_convert_both_ways(self, rpy):
        rotation = rotation_from_rpy(rpy)
        xyzw = quaternion_from_rotation(rotation)
        assert np.linalg.norm(xyzw) == pytest.approx(1.0) and xyzw[3] >= 0.0
        np.testing.assert_allclose(rotation_from_quaternion(xyzw), rotation, atol=1e-12)

    @settings(max_examples=60, deadline=None)
    @given(random_trees(), st.data())
    def test_position_jacobian_matches_finite_differences(self, chain, data):
        q = in_limits(chain, data)
        jacobian = chain.position_jacobian(chain.forward(q))
        step = 1e-6
        for j in range(chain.dof):
            delta = np.zeros(chain.dof)
            delta[j] = step
            numeric = (chain.effector_positions(q + delta)
                       - chain.effector_positions(q - delta)) / (2 * step)
            np.testing.assert_allclose(jacobian[:, :, j], numeric, atol=1e-8)


class TestUrdf:
    """from_urdf keeps the joints between base and tips, folding fixed joints."""

    def test_limits_velocity_and_continuous_joints(self):
        chain = Chain.from_urdf(read_urdf('arm'), 'base_link', 'tool0')
        assert chain.joint_names == ['base_yaw', 'shoulder_pitch', 'elbow_pitch', 'wrist_roll',
                                     'wrist_pitch', 'tool_roll']
        np.testing.assert_array_equal(chain.lower[:2], [-2.967, -1.92])
        np.testing.assert_array_equal(chain.upper[:2], [2.967, 1.92])
        assert chain.joints[5].continuous
        assert (chain.lower[5], chain.upper[5]) == (-math.inf, math.inf)
        np.testing.assert_array_equal(chain.max_velocity, [2.0, 2.0, 2.5, 3.0, 3.0, 3.5])

    def test_missing_velocity_is_unbounded_and_axis_defaults_to_x(self):
        document = urdf(joint_xml('j', 'base', 'tip', axis='0 0 1',
                                  limit='<limit lower="-1" upper="1" effort="1"/>')
                        .replace('<axis xyz="0 0 1"/>', ''))
        chain = Chain.from_urdf(document, 'base', 'tip')
        assert chain.max_velocity[0] == math.inf
        np.testing.assert_array_equal(chain.joints[0].axis, X)

    def test_fixed_joints_are_folded_into_the_next_origin_and_the_tip(self):
        fixed_rpy = '0.3 -0.2 0.9'
        document = urdf(
            joint_xml('j1', 'base', 'a', xyz='0 0 0.1', axis='0 1 0'),
            joint_xml('mount', 'a', 'b', kind='fixed', xyz='0.2 0 0', rpy=fixed_rpy, limit=''),
            joint_xml('j2', 'b', 'c', xyz='0 0.1 0', rpy='0 0.5 0', axis='1 0 0'),
            joint_xml('tool', 'c', 'tip', kind='fixed', xyz='0 0 0.05', rpy='0 0 1', limit=''))
        chain = Chain.from_urdf(document, 'base', 'tip')
        assert chain.joint_names == ['j1', 'j2']
        mount = rotation_from_rpy([0.3, -0.2, 0.9])
        np.testing.assert_allclose(chain.joints[1].origin_xyz, [0.2, 0, 0] + mount @ [0, 0.1, 0])
        np.testing.assert_allclose(chain.joints[1].origin_rotation,
                                   mount @ rotation_from_rpy([0, 0.5, 0]))
        np.testing.assert_allclose(chain.effectors[0].offset, [0, 0, 0.05])
        np.testing.assert_allclose(chain.effectors[0].rotation, rotation_from_rpy([0, 0, 1]))
        assert chain.link_names == ['a', 'c']

    def test_only_joints_between_base_and_tip_are_kept(self):
        chain = Chain.from_urdf(read_urdf('arm'), 'upper_arm', 'wrist_2')
        assert chain.joint_names == ['elbow_pitch', 'wrist_roll', 'wrist_pitch']
        np.testing.assert_allclose(chain.tip_position(np.zeros(3)), [0, 0, 0.75])

    def test_tree_shares_the_trunk_and_orders_branches_by_tip(self):
        chain = Chain.from_urdf(read_urdf('dual_arm'), 'base_link', ['right_tool', 'left_tool'])
        assert chain.joint_names[0] == 'torso_yaw'
        assert [name.split('_')[0] for name in chain.joint_names[1:]] == ['right'] * 5 + [
            'left'] * 5
        assert chain.effector_names == ['right_tool', 'left_tool']
        assert chain.moves_effector.tolist() == [[True] * 6 + [False] * 5,
                                                 [True] + [False] * 5 + [True] * 5]

    def test_tree_branches_move_independently(self):
        chain = Chain.from_urdf(read_urdf('dual_arm'), 'base_link', ['left_tool', 'right_tool'])
        q = chain.neutral()
        moved = q.copy()
        moved[chain.joint_names.index('right_elbow_pitch')] = -1.0
        before, after = chain.effector_positions(q), chain.effector_positions(moved)
        np.testing.assert_array_equal(after[0], before[0])
        assert np.linalg.norm(after[1] - before[1]) > 0.1
        # The arms mirror each other at zero.
        np.testing.assert_allclose(before[1], before[0] * [1, -1, 1])

    def test_tip_may_be_the_child_link_of_the_last_joint(self):
        chain = Chain.from_urdf(read_urdf('arm'), 'base_link', 'flange')
        assert (chain.link_names[-1], chain.effectors[0].parent) == ('flange', 5)
        np.testing.assert_array_equal(chain.effectors[0].offset, np.zeros(3))
        copy = Chain.from_urdf(chain.to_urdf('arm'), 'base_link', 'flange')
        np.testing.assert_allclose(copy.tip_position(np.ones(6)), chain.tip_position(np.ones(6)))

    def test_a_tip_may_hang_from_the_middle_of_another_branch(self):
        chain = Chain.from_urdf(read_urdf('arm'), 'base_link', ['tool0', 'forearm'])
        assert chain.dof == 6
        assert chain.effectors[1].parent == chain.joint_names.index('elbow_pitch')


class TestUrdfErrors:
    """Every URDF problem raises ChainError naming it."""

    @pytest.mark.parametrize('tip, message', [
        ('nowhere', r"unknown link 'nowhere' \(the URDF has links: base_link, turret"),
        ('base_link', "tip link 'base_link' is the base link"),
    ])
    def test_bad_tip(self, tip, message):
        with pytest.raises(ChainError, match=message):
            Chain.from_urdf(read_urdf('arm'), 'base_link', tip)

    def test_no_path_between_links(self):
        with pytest.raises(ChainError, match="no path from base link 'forearm' down to tip "
                                             "link 'turret'"):
            Chain.from_urdf(read_urdf('arm'), 'forearm', 'turret')
        with pytest.raises(ChainError, match="no path from base link 'left_shoulder'"):
            Chain.from_urdf(read_urdf('dual_arm'), 'left_shoulder', 'right_tool')

    def test_duplicate_tips(self):
        with pytest.raises(ChainError, match="duplicate tip link name 'tool0'"):
            Chain.from_urdf(read_urdf('arm'), 'base_link', ['tool0', 'tool0'])

    @pytest.mark.parametrize('kind', ['floating', 'planar', 'screw'])
    def test_unsupported_joint_types_name_joint_and_type(self, kind):
        document = urdf(joint_xml('slider', 'base', 'tip', kind=kind))
        with pytest.raises(ChainError, match=f"joint 'slider' has type '{kind}'"):
            Chain.from_urdf(document, 'base', 'tip')

    @pytest.mark.parametrize('joint, message', [
        (joint_xml('j', 'base', 'tip', limit='<limit lower="1" upper="-1" velocity="1"/>'),
         "joint 'j' has lower limit 1.0 > upper limit -1.0"),
        (joint_xml('j', 'base', 'tip', axis='0 0 0'), "joint 'j' has a zero axis"),
        (joint_xml('j', 'base', 'tip', axis='0 1'), "joint 'j' axis xyz: expected 3 finite"),
        (joint_xml('j', 'base', 'tip', xyz='0 nan 0'), "joint 'j' origin xyz: expected 3"),
        (joint_xml('j', 'base', 'tip', limit=''), "revolute joint 'j' has no <limit>"),
        (joint_xml('j', 'base', 'tip', limit='<limit lower="a" upper="1" velocity="1"/>'),
         'joint \'j\' <limit lower="a"> is not a number'),
        (joint_xml('j', 'base', 'tip', limit='<limit lower="0" upper="1" velocity="-1"/>'),
         "joint 'j' has max_velocity -1.0"),
        (joint_xml('j', 'base', 'tip').replace('</joint>', '<mimic joint="k"/></joint>'),
         "mimic joint 'j' follows unknown joint 'k'"),
        (joint_xml('j', 'base', 'tip').replace('</joint>', '<mimic joint="j"/></joint>'),
         "joint 'j' mimics itself"),
        (joint_xml('j', 'base', 'tip', kind='prismatic', limit=''),
         "prismatic joint 'j' has no <limit>"),
        (joint_xml('j', 'base', 'tip', kind='prismatic',
                   limit='<limit lower="0" upper="inf" velocity="1"/>'),
         r"prismatic joint 'j' needs finite limits, got \[0.0, inf\]"),
        (joint_xml('j', 'base', 'tip').replace('</joint>', '<mimic/></joint>'),
         "joint 'j' <mimic> has no 'joint' attribute"),
        (joint_xml('j', 'base', 'tip').replace('</joint>',
                                               '<mimic joint="k" multiplier="x"/></joint>')
         + joint_xml('k', 'tip', 'a'), 'joint \'j\' <mimic multiplier="x"> is not a number'),
        (joint_xml('k', 'base', 'a') + joint_xml('j', 'a', 'tip').replace(
            '</joint>', '<mimic joint="k" multiplier="0" offset="2"/></joint>'),
         "mimic joint 'j' is held at 2.0 by multiplier 0, outside its limits"),
        (joint_xml('k', 'base', 'a') + joint_xml('j', 'a', 'tip', limit=(
            '<limit lower="1.5" upper="2" velocity="1"/>')).replace(
            '</joint>', '<mimic joint="k"/></joint>'),
         r"mimic joint 'j'.s limits \[1.5, 2.0\] leave its leader 'k' no position"),
        (joint_xml('k', 'base', 'a').replace('</joint>', '<mimic joint="i"/></joint>')
         + joint_xml('i', 'base', 'c') + joint_xml('j', 'a', 'tip').replace(
            '</joint>', '<mimic joint="k"/></joint>'),
         "mimic joint 'j' follows 'k', itself a mimic joint"),
        (joint_xml('j', 'base', 'tip') + joint_xml('k', 'a', 'b') + joint_xml('l', 'b', 'a'),
         "the URDF joints form a cycle through link '(a|b)'"),
        (joint_xml('j', 'base', 'ghost'), "joint 'j' refers to unknown link 'ghost'"),
        (joint_xml('j', 'base', 'tip') + joint_xml('k', 'a', 'tip'),
         "link 'tip' is the child of two joints: 'j' and 'k'"),
        (joint_xml('j', 'base', 'tip') + joint_xml('j', 'base', 'a'),
         "duplicate joint name 'j'"),
        (joint_xml('j', 'base', 'tip').replace('<child link="tip"/>', ''),
         "joint 'j' has no <child>"),
    ])
    def test_bad_joint(self, joint, message):
        with pytest.raises(ChainError, match=message):
            Chain.from_urdf(urdf(joint), 'base', 'tip')

    def test_malformed_xml(self):
        with pytest.raises(ChainError, match='malformed URDF XML'):
            Chain.from_urdf('<robot><link name="a"></robot>', 'a', 'b')

    def test_not_a_robot(self):
        with pytest.raises(ChainError, match=r'root element is <sdf>, expected <robot>'):
            Chain.from_urdf('<sdf/>', 'a', 'b')

    def test_duplicate_link_names(self):
        with pytest.raises(ChainError, match="duplicate link name 'a'"):
            Chain.from_urdf(urdf(links=('base', 'a', 'a')), 'base', 'a')


class TestParameters:
    """from_parameters builds serial chains and legged trees from a few numbers."""

    def test_two_axis_segments_are_yaw_then_pitch_at_one_point(self):
        chain = Chain.from_parameters(2, 0.1, joint_type='two_axis')
        assert chain.joint_names == ['seg1_yaw', 'seg1_pitch', 'seg2_yaw', 'seg2_pitch']
        kinematics = chain.forward(chain.neutral())
        np.testing.assert_allclose(kinematics.positions[0], kinematics.positions[1])
        np.testing.assert_allclose(kinematics.axes[:2], [Z, Y])
        assert chain.effector_names == ['tip']

    def test_hinge_segments_alternate_yaw_and_pitch(self):
        chain = Chain.from_parameters(3, [0.1, 0.2, 0.3])
        assert chain.joint_names == ['seg1_yaw', 'seg2_pitch', 'seg3_yaw']
        np.testing.assert_allclose(chain.joint_positions(np.zeros(3)),
                                   [[0, 0, 0], [0.1, 0, 0], [0.3, 0, 0]])

    def test_symmetric_and_per_joint_limits_and_continuous(self):
        chain = Chain.from_parameters(3, 0.1, joint_limit=[0.5, math.inf, 1.0],
                                      segment_axes=['y'], max_velocity=1.5)
        np.testing.assert_array_equal(chain.lower, [-0.5, -math.inf, -1.0])
        np.testing.assert_array_equal(chain.upper, [0.5, math.inf, 1.0])
        np.testing.assert_array_equal(chain.max_velocity, [1.5] * 3)
        assert chain.joints[1].continuous

    def test_mount_points_the_chain_up(self):
        chain = Chain.from_parameters(2, 0.25, base_link='root', tip_link='end',
                                      mount_xyz=[0, 0, 0.1], mount_rpy=[0, -math.pi / 2, 0])
        np.testing.assert_allclose(chain.tip_position(chain.neutral()), [0, 0, 0.6],
                                   atol=1e-12)
        assert (chain.base_link, chain.effector_names) == ('root', ['end'])

    def test_legs_are_spaced_around_the_body(self):
        spider = Chain.from_parameters(3, [0.05, 0.1, 0.15], segment_axes=['z', 'y', 'y'],
                                       legs=6, body_radius=0.1, tip_link='foot')
        assert spider.effector_names == [f'leg{k}_foot' for k in range(1, 7)]
        assert spider.joint_names[:3] == ['leg1_seg1_yaw', 'leg1_seg2_pitch', 'leg1_seg3_pitch']
        feet = spider.effector_positions(spider.neutral())
        np.testing.assert_allclose(np.linalg.norm(feet, axis=1), 0.4)
        np.testing.assert_allclose(np.arctan2(feet[:, 1], feet[:, 0]) % TWO_PI,
                                   np.arange(6) * TWO_PI / 6, atol=1e-12)
        # Each leg's joints move only its own foot.
        assert spider.moves_effector.sum(axis=1).tolist() == [3] * 6
        assert not (spider.moves_effector.sum(axis=0) - 1).any()

    def test_legs_take_explicit_tip_names(self):
        chain = Chain.from_parameters(1, 0.1, legs=2, tip_link=['left', 'right'])
        assert chain.effector_names == ['left', 'right']
        np.testing.assert_allclose(chain.effector_positions([0, 0]), [[0.1, 0, 0], [-0.1, 0, 0]],
                                   atol=1e-12)

    @settings(max_examples=30, deadline=None)
    @given(st.data())
    def test_same_robot_from_urdf_and_parameters_has_the_same_fk(self, data):
        # A hand-written URDF of three two-axis segments of 0.1, 0.2, 0.3 m.
        lengths = (0.1, 0.2, 0.3)
        joints, parent, xyz = [], 'base', '0 0 0'
        for number, length in enumerate(lengths, start=1):
            for axis_name, axis in (('yaw', '0 0 1'), ('pitch', '0 1 0')):
                child = f'seg{number}_{axis_name}_link'
                joints.append(joint_xml(f'seg{number}_{axis_name}', parent, child, xyz=xyz,
                                        axis=axis,
                                        limit='<limit lower="-1" upper="1" velocity="2"/>'))
                parent, xyz = child, '0 0 0'
            xyz = f'{length} 0 0'
        joints.append(joint_xml('tip_joint', parent, 'tip', kind='fixed', xyz=xyz, limit=''))
        links = ['base', 'tip'] + [f'seg{n}_{a}_link' for n in (1, 2, 3) for a in ('yaw', 'pitch')]
        from_urdf = Chain.from_urdf(urdf(*joints, links=links), 'base', 'tip')
        from_parameters = Chain.from_parameters(3, lengths, joint_type='two_axis',
                                                joint_limit=1.0, base_link='base')
        assert from_urdf.joint_names == from_parameters.joint_names
        q = in_limits(from_urdf, data)
        for a, b in zip(from_urdf.forward(q), from_parameters.forward(q)):
            np.testing.assert_allclose(a, b, atol=1e-12)

    @pytest.mark.parametrize('kwargs, message', [
        ({'segments': 0}, 'segments must be a positive integer'),
        ({'segment_length': [0.1, 0.2]}, 'segment_length has 2 values, expected 1 or 3'),
        ({'segment_length': -0.1}, 'segment lengths must be positive'),
        ({'joint_type': 'ball'}, "unknown joint_type 'ball'"),
        ({'segment_axes': ['q']}, 'segment_axes must be a list of axis letter strings'),
        ({'joint_limit': -1.0}, 'joint_limit must be >= 0'),
        ({'joint_limit': math.nan}, 'joint_limit must be >= 0'),
        ({'legs': -1}, 'legs must be an integer >= 0'),
        ({'legs': 2, 'body_radius': -0.1}, 'body_radius must be >= 0 metres'),
        ({'legs': 2, 'tip_link': ['a']}, r"2 legs need 2 tip links, got \['a'\]"),
        ({'tip_link': ['a', 'b']}, 'a serial chain has one tip link'),
        ({'mount_rpy': [0, 0]}, 'mount_rpy: expected 3 finite numbers'),
        ({'max_velocity': 0.0}, 'has max_velocity 0.0'),
    ])
    def test_bad_parameters(self, kwargs, message):
        arguments = {'segments': 3, 'segment_length': 0.1, **kwargs}
        with pytest.raises(ChainError, match=message):
            Chain.from_parameters(**arguments)


class TestToUrdf:
    """to_urdf writes a URDF that robot_state_publisher shows and from_urdf reads back."""

    @settings(max_examples=40, deadline=None)
    @given(random_trees(), st.data())
    def test_round_trip_reproduces_the_kinematics(self, chain, data):
        assume(chain.moves_effector.any())  # else no movable joint lies on a path to a tip
        copy = Chain.from_urdf(chain.to_urdf('random'), 'base', chain.effector_names)
        # Joints that move no effector are not on any base-to-tip path.
        assert set(copy.joint_names) == {name for name, used in
                                         zip(chain.joint_names, chain.moves_effector.any(0))
                                         if used}
        q = in_limits(chain, data)
        q_copy = reorder(q, chain, copy)
        np.testing.assert_allclose(copy.effector_positions(q_copy), chain.effector_positions(q),
                                   atol=1e-12)
        original = chain.forward(q)
        copied = copy.forward(q_copy)
        for index, name in enumerate(copy.joint_names):
            np.testing.assert_allclose(copied.rotations[index],
                                       original.rotations[chain.joint_names.index(name)],
                                       atol=1e-12)
        for field in ('lower', 'upper', 'max_velocity'):
            np.testing.assert_array_equal(getattr(copy, field),
                                          reorder(getattr(chain, field), chain, copy))
        for effector, copied_effector in zip(chain.effectors, copy.effectors):
            np.testing.assert_allclose(copied_effector.rotation, effector.rotation, atol=1e-12)

    @pytest.mark.parametrize('name, tips', [('arm', ['tool0']), ('offset_arm', ['tool0']),
                                            ('dual_arm', ['left_tool', 'right_tool'])])
    def test_shipped_urdfs_round_trip_with_their_link_names(self, name, tips):
        chain = Chain.from_urdf(read_urdf(name), 'base_link', tips)
        copy = Chain.from_urdf(chain.to_urdf(name), 'base_link', tips)
        assert (copy.joint_names, copy.link_names) == (chain.joint_names, chain.link_names)
        q = np.random.default_rng(7).uniform(-1.0, 1.0, chain.dof)
        np.testing.assert_allclose(copy.effector_positions(q), chain.effector_positions(q),
                                   atol=1e-12)

    def test_document_has_visuals_limits_and_continuous_joints(self):
        chain = Chain.from_parameters(2, 0.2, joint_limit=[1.0, math.inf],
                                      segment_axes=['y'], legs=2, body_radius=0.1)
        robot = ElementTree.fromstring(chain.to_urdf('walker'))
        assert robot.get('name') == 'walker'
        links = robot.findall('link')
        assert len(links) == 1 + chain.dof + len(chain.effectors)
        assert all(link.find('visual/geometry') is not None for link in links)
        # The base shows a strut to each leg mount; every link a cylinder along itself.
        base = robot.find("link[@name='base_link']")
        assert len(base.findall('visual/geometry/cylinder')) == 1 + 2
        kinds = {j.get('name'): j.get('type') for j in robot.findall('joint')}
        assert kinds == {'leg1_seg1_pitch': 'revolute', 'leg1_seg2_pitch': 'continuous',
                         'leg2_seg1_pitch': 'revolute', 'leg2_seg2_pitch': 'continuous',
                         'leg1_tip_fixed': 'fixed', 'leg2_tip_fixed': 'fixed'}
        # urdfdom requires effort and velocity on every <limit>.
        for limit in robot.findall('joint/limit'):
            assert {'effort', 'velocity'} <= set(limit.keys())
        revolute = robot.find("joint[@name='leg1_seg1_pitch']/limit")
        assert (revolute.get('lower'), revolute.get('upper')) == ('-1.0', '1.0')

    @settings(max_examples=30, deadline=None)
    @given(random_trees())
    def test_link_cylinders_run_from_each_frame_to_what_hangs_from_it(self, chain):
        robot = ElementTree.fromstring(chain.to_urdf('random'))
        frames = [chain.base_link] + chain.link_names
        for row, link in enumerate(frames):
            expected = [v for v in [j.origin_xyz for j in chain.joints if j.parent + 1 == row]
                        + [e.offset for e in chain.effectors if e.parent + 1 == row]
                        if np.linalg.norm(v) > 1e-9]
            ends = []
            for visual in robot.findall(f"link[@name='{link}']/visual"):
                cylinder = visual.find('geometry/cylinder')
                if visual.find('material').get('name') != 'fabrik_link':
                    continue
                origin = visual.find('origin')
                center = np.array(origin.get('xyz').split(), dtype=float)
                rotation = rotation_from_rpy(np.array(origin.get('rpy').split(), dtype=float))
                half = rotation @ [0.0, 0.0, float(cylinder.get('length')) / 2]
                np.testing.assert_allclose(center - half, np.zeros(3), atol=1e-12)
                ends.append(center + half)
            assert rounded(ends) == rounded(expected)

    def test_limits_urdf_cannot_express_are_refused(self):
        chain = planar_arm().with_limits([-1.0, -math.inf, -1.0], [1.0, 1.0, 1.0])
        with pytest.raises(ChainError, match="joint 'seg2_pitch' has a one-sided limit"):
            chain.to_urdf('arm')
        chain = planar_arm().with_limits([-1.0] * 3, [1.0] * 3, [1.0, math.inf, 1.0])
        with pytest.raises(ChainError, match="revolute joint 'seg2_pitch' needs a finite"):
            chain.to_urdf('arm')


class TestLimits:
    """clip, neutral and with_limits keep joint vectors inside validated limits."""

    def test_neutral_is_zero_clipped_into_limits(self):
        chain = planar_arm().with_limits([0.2, -1.0, -2.0], [1.0, 1.0, -0.5])
        np.testing.assert_array_equal(chain.neutral(), [0.2, 0.0, -0.5])

    def test_clip(self):
        chain = planar_arm().with_limits([-1.0] * 3, [1.0] * 3)
        np.testing.assert_array_equal(chain.clip([-3.0, 0.5, 3.0]), [-1.0, 0.5, 1.0])
        with pytest.raises(ValueError, match='not finite'):
            chain.clip([0.0, math.nan, 0.0])
        with pytest.raises(ValueError, match=r'shape \(2,\), expected \(3,\)'):
            chain.clip([0.0, 0.0])

    @settings(max_examples=50, deadline=None)
    @given(random_trees(), st.data())
    def test_clip_and_neutral_are_within_limits(self, chain, data):
        q = np.array(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=chain.dof,
                                        max_size=chain.dof)))
        for result in (chain.clip(q), chain.neutral()):
            assert np.all((chain.lower <= result) & (result <= chain.upper))

    def test_with_limits_replaces_limits_and_keeps_the_kinematics(self):
        chain = planar_arm()
        limited = chain.with_limits([-0.1, -math.inf, 0.0], [0.1, math.inf, 0.2], [1, 2, 3])
        np.testing.assert_array_equal(limited.lower, [-0.1, -math.inf, 0.0])
        np.testing.assert_array_equal(limited.max_velocity, [1, 2, 3])
        assert limited.joints[1].continuous
        q = np.array([0.05, 2.0, 0.1])
        np.testing.assert_array_equal(limited.forward(q).effectors, chain.forward(q).effectors)

    def test_with_limits_rejects_inverted_limits_naming_the_joint(self):
        with pytest.raises(ChainError, match="joint 'seg2_pitch'.*lower limit 1.0 > upper"):
            planar_arm().with_limits([0.0, 1.0, 0.0], [0.5, 0.5, 0.5])

    def test_with_limits_rejects_nan_and_wrong_length(self):
        with pytest.raises(ChainError, match='NaN'):
            planar_arm().with_limits([0.0, math.nan, 0.0], [1.0] * 3)
        with pytest.raises(ChainError, match=r'expected \(3,\)'):
            planar_arm().with_limits([0.0] * 2, [1.0] * 3)


class TestModelValidation:
    """Chain, Joint and Effector reject inconsistent models, naming the problem."""

    def test_zero_axis(self):
        with pytest.raises(ChainError, match="joint 'j1' has a zero axis"):
            Joint('j1', -1, np.zeros(3), np.eye(3), np.zeros(3))

    def test_axis_is_normalised_and_fields_are_read_only(self):
        joint = Joint('j1', -1, np.zeros(3), np.eye(3), [0, 0, 2])
        np.testing.assert_array_equal(joint.axis, Z)
        with pytest.raises(ValueError):
            joint.axis[0] = 1.0

    def test_origin_rotation_must_be_a_rotation(self):
        with pytest.raises(ChainError, match="joint 'j1' origin rotation: expected a 3x3"):
            Joint('j1', -1, np.zeros(3), np.diag([1.0, 1.0, -1.0]), Z)

    @pytest.mark.parametrize('lower, upper', [(math.nan, 1.0), (math.inf, math.inf),
                                              (-1.0, -math.inf)])
    def test_invalid_limits(self, lower, upper):
        with pytest.raises(ChainError, match="joint 'j1' has invalid limits"):
            Joint('j1', -1, np.zeros(3), np.eye(3), Z, lower, upper)

    def test_duplicate_joint_names(self):
        joint = Joint('j1', -1, np.zeros(3), np.eye(3), Z)
        with pytest.raises(ChainError, match="duplicate joint name 'j1'"):
            Chain('base', [joint, Joint('j1', 0, [0.1, 0, 0], np.eye(3), Z)],
                  [Effector('tip', 1, [0.1, 0, 0])])

    def test_effector_named_like_a_link(self):
        joint = Joint('j1', -1, np.zeros(3), np.eye(3), Z)
        with pytest.raises(ChainError, match="duplicate link name 'base'"):
            Chain('base', [joint], [Effector('base', 0, [0.1, 0, 0])])

    def test_effector_named_like_a_joint_link_must_be_that_link(self):
        joint = Joint('j1', -1, np.zeros(3), np.eye(3), Z, link='hand')
        assert Chain('base', [joint], [Effector('hand', 0, np.zeros(3))]).dof == 1
        with pytest.raises(ChainError, match="effector 'hand' is named like the link of joint "
                                             "'j1' but is offset from it"):
            Chain('base', [joint], [Effector('hand', 0, [0.1, 0, 0])])

    def test_parents_must_come_first(self):
        with pytest.raises(ChainError, match="joint 'j1'.*parents first"):
            Chain('base', [Joint('j1', 0, np.zeros(3), np.eye(3), Z)],
                  [Effector('tip', 0, [0.1, 0, 0])])

    def test_effector_parent_must_exist(self):
        with pytest.raises(ChainError, match="effector 'tip' hangs from joint index 3"):
            Chain('base', [Joint('j1', -1, np.zeros(3), np.eye(3), Z)],
                  [Effector('tip', 3, [0.1, 0, 0])])

    def test_a_chain_needs_joints_and_effectors(self):
        with pytest.raises(ChainError, match='no movable joints'):
            Chain('base', [], [Effector('tip', -1, [0.1, 0, 0])])
        with pytest.raises(ChainError, match='no effectors'):
            Chain('base', [Joint('j1', -1, np.zeros(3), np.eye(3), Z)], [])


class TestPrismaticAndMimic:
    """Prismatic joints slide in metres; mimic joints follow their leader."""

    def rail(self) -> Chain:
        """Return a rail along x carrying a pitch hinge, with a follower hinge after it."""
        return Chain('base', [
            Joint('rail', -1, [0, 0, 0.1], np.eye(3), X, -0.5, 0.5, 0.3, kind='prismatic'),
            Joint('hinge', 0, [0, 0, 0.2], np.eye(3), Y, -2, 2, 1.0),
            Joint('follower', 1, [0.3, 0, 0], np.eye(3), Y, -1, 1, 1.0,
                  mimic=Mimic('hinge', 0.5, 0.2))],
            [Effector('tip', 2, [0.1, 0, 0])])

    def test_the_joint_vector_holds_the_independent_joints(self):
        chain = self.rail()
        assert (chain.joint_names, chain.all_joint_names) == (
            ['rail', 'hinge'], ['rail', 'hinge', 'follower'])
        # follower = 0.5 hinge + 0.2 in [-1, 1]: the hinge may go to 1.6, not 2.
        np.testing.assert_allclose(chain.upper, [0.5, 1.6])
        np.testing.assert_allclose(chain.max_velocity, [0.3, 1.0])
        np.testing.assert_allclose(chain.expand([0.1, 0.4]), [0.1, 0.4, 0.4])
        np.testing.assert_allclose(chain.expand_velocity([0.1, 0.4]), [0.1, 0.4, 0.2])

    def test_a_slide_translates_everything_after_it(self):
        chain = self.rail()
        np.testing.assert_allclose(chain.tip_position([0.25, -0.2 / 0.5 + 0.0]),
                                   chain.tip_position([0.0, -0.4]) + [0.25, 0, 0])

    def test_jacobian_columns_match_finite_differences(self):
        chain = self.rail()
        q = np.array([0.1, 0.7])
        jacobian = chain.position_jacobian(chain.forward(q))[0]
        step = 1e-6
        numeric = np.array([(chain.tip_position(q + step * e) - chain.tip_position(q - step * e))
                            / (2 * step) for e in np.eye(2)]).T
        np.testing.assert_allclose(jacobian, numeric, atol=1e-8)

    def test_written_urdf_keeps_kinds_and_mimics(self):
        chain = self.rail()
        copy = Chain.from_urdf(chain.to_urdf('r'), 'base', 'tip')
        assert [j.kind for j in copy.joints] == ['prismatic', 'revolute', 'revolute']
        assert copy.joints[2].mimic == Mimic('hinge', 0.5, 0.2)

    def test_mimic_of_a_joint_outside_the_chain_is_refused(self):
        with pytest.raises(ChainError, match="mimic joint 'a' follows 'ghost', which is not"):
            Chain('base', [Joint('a', -1, [0, 0, 0], np.eye(3), Z, -1, 1, 1.0,
                                 mimic=Mimic('ghost'))], [Effector('tip', 0, [1, 0, 0])])

    def test_absurd_sizes_are_refused_at_once(self):
        with pytest.raises(ChainError, match=f'more than {MAX_JOINTS} joints'):
            Chain.from_parameters(100000, 0.1)
