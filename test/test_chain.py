"""Specification of the kinematic model: construction, forward kinematics, limits."""

import math

from fabrik_ros.chain import Chain, ChainError, Effector, Joint, rotation_from_rpy
import numpy as np
import pytest

TWO_PI = 2.0 * math.pi


def planar_arm(lengths=(0.3, 0.2, 0.1)):
    """Return a serial chain of pitch hinges with links along x."""
    return Chain.from_parameters(len(lengths), list(lengths), segment_axes=['y'])


class TestForwardKinematics:
    """forward(q) returns world joint origins, axes, frames and effector points."""

    def test_zero_pose_is_straight_along_x(self):
        chain = planar_arm()
        kin = chain.forward(chain.neutral())
        np.testing.assert_allclose(kin.positions, [[0, 0, 0], [0.3, 0, 0], [0.5, 0, 0]])
        np.testing.assert_allclose(kin.effectors, [[0.6, 0, 0]])
        np.testing.assert_allclose(kin.axes, [[0, 1, 0]] * 3)

    def test_planar_pitch_arm_matches_hand_computed_tip(self):
        chain = planar_arm()
        q = np.array([0.3, -0.7, 1.1])
        # A positive pitch about +y turns +x toward -z.
        angles = np.cumsum(q)
        expected = sum(length * np.array([math.cos(a), 0.0, -math.sin(a)])
                       for length, a in zip((0.3, 0.2, 0.1), angles))
        np.testing.assert_allclose(chain.tip_position(q), expected, atol=1e-12)

    def test_rotations_are_frames_after_the_joint_rotation(self):
        chain = planar_arm()
        q = np.array([0.3, -0.7, 1.1])
        kin = chain.forward(q)
        for rotation, angle in zip(kin.rotations, np.cumsum(q)):
            np.testing.assert_allclose(rotation, rotation_from_rpy([0.0, angle, 0.0]),
                                       atol=1e-12)

    def test_accessors_agree_with_forward(self):
        chain = Chain.from_parameters(4, 0.1, joint_type='two_axis')
        q = np.linspace(-0.5, 0.5, chain.dof)
        kin = chain.forward(q)
        np.testing.assert_array_equal(chain.joint_positions(q), kin.positions)
        np.testing.assert_array_equal(chain.effector_positions(q), kin.effectors)
        np.testing.assert_array_equal(chain.tip_position(q), kin.effectors[0])

    def test_wrong_joint_vector_length_is_rejected(self):
        with pytest.raises(ValueError, match=r'expected \(3,\)'):
            planar_arm().forward([0.0, 0.0])


class TestParameters:
    """from_parameters builds serial chains and legged trees from a few numbers."""

    def test_two_axis_segments_are_yaw_then_pitch_at_one_point(self):
        chain = Chain.from_parameters(2, 0.1, joint_type='two_axis')
        assert chain.joint_names == ['seg1_yaw', 'seg1_pitch', 'seg2_yaw', 'seg2_pitch']
        kin = chain.forward(chain.neutral())
        np.testing.assert_allclose(kin.positions[0], kin.positions[1])
        np.testing.assert_allclose(kin.axes[:2], [[0, 0, 1], [0, 1, 0]])

    def test_symmetric_limit_and_continuous(self):
        chain = Chain.from_parameters(3, 0.1, joint_limit=[0.5, math.inf, 1.0],
                                      segment_axes=['y'])
        np.testing.assert_array_equal(chain.lower, [-0.5, -math.inf, -1.0])
        np.testing.assert_array_equal(chain.upper, [0.5, math.inf, 1.0])
        assert chain.joints[1].continuous

    def test_legs_are_spaced_around_the_body(self):
        spider = Chain.from_parameters(3, [0.05, 0.1, 0.15], segment_axes=['z', 'y', 'y'],
                                       legs=6, body_radius=0.1, tip_link='foot')
        assert spider.effector_names == [f'leg{k}_foot' for k in range(1, 7)]
        feet = spider.effector_positions(spider.neutral())
        np.testing.assert_allclose(np.linalg.norm(feet, axis=1), 0.4)
        angles = np.arctan2(feet[:, 1], feet[:, 0]) % TWO_PI
        np.testing.assert_allclose(angles, np.arange(6) * TWO_PI / 6, atol=1e-12)
        # Each leg's joints move only its own foot.
        assert spider.moves_effector.sum(axis=1).tolist() == [3] * 6


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

    def test_with_limits_rejects_inverted_limits_naming_the_joint(self):
        with pytest.raises(ChainError, match="joint 'seg2_pitch'.*lower limit 1.0 > upper"):
            planar_arm().with_limits([0.0, 1.0, 0.0], [0.5, 0.5, 0.5])

    def test_with_limits_rejects_nan_and_wrong_length(self):
        with pytest.raises(ChainError, match='NaN'):
            planar_arm().with_limits([0.0, math.nan, 0.0], [1.0] * 3)
        with pytest.raises(ChainError, match=r'expected \(3,\)'):
            planar_arm().with_limits([0.0] * 2, [1.0] * 3)


class TestModelValidation:
    """Chain and Joint reject inconsistent models with messages naming the problem."""

    def test_zero_axis(self):
        with pytest.raises(ChainError, match="joint 'j1' has a zero axis"):
            Joint('j1', -1, np.zeros(3), np.eye(3), np.zeros(3))

    def test_duplicate_joint_names(self):
        joint = Joint('j1', -1, np.zeros(3), np.eye(3), [0, 0, 1])
        with pytest.raises(ChainError, match="duplicate joint name 'j1'"):
            Chain('base', [joint, Joint('j1', 0, [0.1, 0, 0], np.eye(3), [0, 0, 1])],
                  [Effector('tip', 1, [0.1, 0, 0])])

    def test_parents_must_come_first(self):
        with pytest.raises(ChainError, match="joint 'j1'.*parents first"):
            Chain('base', [Joint('j1', 0, np.zeros(3), np.eye(3), [0, 0, 1])],
                  [Effector('tip', 0, [0.1, 0, 0])])
