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


"""Specification of Chain: forward kinematics, limits, validation, prismatic and mimic joints."""

import math

from fabrik_ros.chain import Chain, ChainError, Effector, Joint, MAX_JOINTS, Mimic
from fabrik_ros.model.rotations import rotation_about_axis, rotation_from_rpy
from hypothesis import given, settings, strategies as st
from model_cases import (in_limits, joint_xml, planar_arm, random_trees, read_urdf, urdf, X, Y,
                         Z)
import numpy as np
import pytest


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
