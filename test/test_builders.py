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


"""Specification of the plain-parameter builders: serial chains and legged trees."""

import math

from fabrik_ros.chain import Chain, ChainError
from hypothesis import given, settings, strategies as st
from model_cases import in_limits, joint_xml, TWO_PI, urdf, Y, Z
import numpy as np
import pytest


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
