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


"""Specification of URDF out: visuals, limits and a document that reads back as the model."""

import math
import xml.etree.ElementTree as ElementTree

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.model.rotations import rotation_from_rpy
from hypothesis import assume, given, settings, strategies as st
from model_cases import in_limits, planar_arm, random_trees, read_urdf, reorder, rounded
import numpy as np
import pytest


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
