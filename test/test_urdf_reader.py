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


"""Specification of URDF in: which joints a chain keeps, how fixed joints fold, what is refused."""

import math

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.model.rotations import rotation_from_rpy
from model_cases import joint_xml, read_urdf, urdf, X
import numpy as np
import pytest


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
