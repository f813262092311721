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
Real robot descriptions: what of a URDF the model uses, ignores and refuses.

Forward kinematics is checked against an independent reading of each URDF (plain 4x4
homogeneous transforms, written here from the URDF specification), for our prismatic and
mimic robots and for descriptions that ship in PyPI packages with their grippers, as
drivers publish them: airo-models (UR5e, Robotiq 2F-85, in requirements.txt) and
example-robot-data (Franka Panda with its hand, in requirements.txt too). Tests of a
package that is not installed skip, saying which.
"""

from importlib import metadata
import math
from pathlib import Path
import xml.etree.ElementTree as ElementTree

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.ik import IkSolver
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

SHARE = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ independent reading

def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Return URDF's fixed-axis roll, pitch, yaw as a 3x3 rotation (Rz @ Ry @ Rx)."""
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _plain_xml(urdf_xml: str) -> ElementTree.Element:
    """Parse a URDF, declaring the drake: prefix that airo-models' files use undeclared."""
    if 'xmlns:drake' not in urdf_xml:
        urdf_xml = urdf_xml.replace('<robot ', '<robot xmlns:drake="urn:drake" ', 1)
    return ElementTree.fromstring(urdf_xml)


def _numbers(element, attribute: str, default: str) -> list[float]:
    return [float(v) for v in (default if element is None
                               else element.get(attribute, default)).split()]


def reference_tip_transform(urdf_xml: str, base: str, tip: str,
                            positions: dict[str, float]) -> np.ndarray:
    """Return the tip's 4x4 pose in the base frame; mimic joints read their leader."""
    root = _plain_xml(urdf_xml)
    by_child = {j.find('child').get('link'): j for j in root.findall('joint')}
    transform = np.eye(4)
    link = tip
    while link != base:
        joint = by_child[link]
        kind = joint.get('type')
        origin = np.eye(4)
        origin[:3, :3] = _rpy(*_numbers(joint.find('origin'), 'rpy', '0 0 0'))
        origin[:3, 3] = _numbers(joint.find('origin'), 'xyz', '0 0 0')
        motion = np.eye(4)
        if kind != 'fixed':
            mimic = joint.find('mimic')
            value = positions.get(joint.get('name'), 0.0)
            if mimic is not None:
                value = (float(mimic.get('multiplier', 1)) * positions[mimic.get('joint')]
                         + float(mimic.get('offset', 0)))
            axis = np.array(_numbers(joint.find('axis'), 'xyz', '1 0 0'))
            axis /= np.linalg.norm(axis)
            if kind == 'prismatic':
                motion[:3, 3] = axis * value
            else:
                k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]],
                              [-axis[1], axis[0], 0]])
                motion[:3, :3] = np.eye(3) + math.sin(value) * k + (1 - math.cos(value)) * k @ k
        transform = origin @ motion @ transform
        link = joint.find('parent').get('link')
    return transform


# ------------------------------------------------------------------ descriptions

def _airo(relative: str) -> str:
    try:
        import airo_models
    except ImportError:
        pytest.skip('airo-models is not installed (pip install -r requirements.txt)')
    return (Path(airo_models.__file__).parent / relative).read_text()


def _example_robot_data(relative: str) -> str:
    try:
        share = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
    except metadata.PackageNotFoundError:
        pytest.skip('example-robot-data is not installed (pip install -r requirements.txt)')
    return (Path(share) / relative).read_text()


def ur5e_with_robotiq() -> str:
    """Return a UR5e with a Robotiq 2F-85 on its tool0, assembled as a driver's xacro does."""
    arm = _plain_xml(_airo('arms/ur5e/ur5e.urdf'))
    gripper = _plain_xml(_airo('grippers/robotiq_2f_85/urdf/robotiq_2f_85.urdf'))
    for element in gripper.iter():
        for attribute in ('name', 'link'):
            if element.tag in ('link', 'parent', 'child') and \
                    element.get(attribute, '').startswith('base_link'):
                element.set(attribute, 'gripper_' + element.get(attribute))
    for element in gripper:
        if element.tag in ('link', 'joint'):
            arm.append(element)
    ElementTree.SubElement(arm, 'joint', name='tool0_gripper', type='fixed')
    mount = arm[-1]
    ElementTree.SubElement(mount, 'parent', link='tool0')
    ElementTree.SubElement(mount, 'child', link='gripper_base_link')
    return ElementTree.tostring(arm, encoding='unicode')


DESCRIPTIONS = {
    # name: (URDF text, base link, tip link(s))
    'rail_arm': (lambda: (SHARE / 'urdf' / 'rail_arm.urdf').read_text(), 'base_link', 'tool0'),
    'finger': (lambda: (SHARE / 'urdf' / 'finger.urdf').read_text(), 'palm', 'fingertip'),
    'panda to flange, hand present': (
        lambda: _example_robot_data('panda_description/urdf/panda.urdf'),
        'panda_link0', 'panda_link8'),
    'panda to hand tcp': (lambda: _example_robot_data('panda_description/urdf/panda.urdf'),
                          'panda_link0', 'panda_hand_tcp'),
    'panda to a finger (prismatic, mimic)': (
        lambda: _example_robot_data('panda_description/urdf/panda.urdf'),
        'panda_link0', 'panda_rightfinger'),
    'ur5e': (lambda: _airo('arms/ur5e/ur5e.urdf'), 'base_link', 'tool0'),
    'ur5e with robotiq, to tool0': (ur5e_with_robotiq, 'base_link', 'tool0'),
    'ur5e with robotiq, to a finger pad (mimic)': (ur5e_with_robotiq, 'base_link',
                                                   'left_inner_finger_pad'),
    'ur5e with robotiq, leader off the path': (ur5e_with_robotiq, 'gripper_base_link',
                                               'right_inner_finger_pad'),
}


@pytest.fixture(params=list(DESCRIPTIONS), scope='module')
def description(request):
    """Yield (urdf, chain) of each description, skipping those not installed."""
    build, base, tip = DESCRIPTIONS[request.param]
    text = build()
    return text, Chain.from_urdf(text, base, tip), base, tip


class TestRealDescriptions:
    """Descriptions load as users pick their links; FK matches an independent reading."""

    @settings(max_examples=25, deadline=None)
    @given(fractions=st.lists(st.floats(0.0, 1.0), min_size=16, max_size=16))
    def test_forward_kinematics_matches_the_urdf(self, description, fractions):
        text, chain, base, tip = description
        low, high = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
        q = low + np.array(fractions[:chain.dof]) * (high - low)
        expected = reference_tip_transform(text, base, tip, dict(zip(chain.joint_names, q)))
        np.testing.assert_allclose(chain.tip_position(q), expected[:3, 3], atol=1e-9)
        every = dict(zip(chain.all_joint_names, chain.expand(q)))
        assert [every[name] for name in chain.joint_names] == q.tolist()

    def test_followers_stay_in_their_limits_over_the_leaders_range(self, description):
        _, chain, _, _ = description
        for q in (chain.lower, chain.upper):
            positions = chain.expand(np.clip(q, -math.pi, math.pi))
            lower = np.array([j.lower for j in chain.joints])
            upper = np.array([j.upper for j in chain.joints])
            assert np.all(positions >= lower - 1e-12) and np.all(positions <= upper + 1e-12)

    def test_solves_stay_in_every_joints_limits(self, description):
        _, chain, _, _ = description
        solver = IkSolver(chain)
        rng = np.random.default_rng(7)
        lower = np.array([j.lower for j in chain.joints])
        upper = np.array([j.upper for j in chain.joints])
        reached = 0
        for _ in range(20):
            q = rng.uniform(np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi))
            result = solver.solve(chain.tip_position(q))
            positions = chain.expand(result.q)
            assert np.all(positions >= lower) and np.all(positions <= upper)
            reached += result.error <= 1e-3
        assert reached >= 19

    def test_write_and_read_back_keeps_the_model(self, description):
        _, chain, _, _ = description
        copy = Chain.from_urdf(chain.to_urdf('copy'), chain.base_link, chain.effector_names)
        assert copy.all_joint_names == chain.all_joint_names
        q = (np.maximum(chain.lower, -1.0) + np.minimum(chain.upper, 1.0)) / 2.0
        np.testing.assert_allclose(copy.tip_position(q), chain.tip_position(q), atol=1e-12)


class TestWhatIsUsed:
    """Only the joints on the paths from the base to the tips matter."""

    def test_panda_with_its_hand_loads_the_seven_arm_joints(self):
        chain = Chain.from_urdf(_example_robot_data('panda_description/urdf/panda.urdf'),
                                'panda_link0', 'panda_link8')
        assert chain.joint_names == [f'panda_joint{i}' for i in range(1, 8)]

    def test_a_finger_of_the_panda_brings_its_leader(self):
        chain = Chain.from_urdf(_example_robot_data('panda_description/urdf/panda.urdf'),
                                'panda_link0', 'panda_rightfinger')
        assert chain.joint_names[-1] == 'panda_finger_joint1'
        assert set(chain.all_joint_names[-2:]) == {'panda_finger_joint1', 'panda_finger_joint2'}

    def test_robotiq_leader_off_the_path_drives_its_followers(self):
        chain = Chain.from_urdf(ur5e_with_robotiq(), 'gripper_base_link',
                                'right_inner_finger_pad')
        assert chain.joint_names == ['finger_joint']
        assert set(chain.all_joint_names) == {'finger_joint', 'right_outer_knuckle_joint',
                                              'right_inner_finger_joint'}
        assert chain.moves_effector.tolist() == [[True]]
        # The followers' ranges ([0, 0.81] and [-0.8757, 0] at -1) narrow the leader's.
        assert (chain.lower[0], chain.upper[0]) == (0.0, 0.8)

    def test_rail_arm_ignores_its_gripper(self):
        chain = Chain.from_urdf((SHARE / 'urdf' / 'rail_arm.urdf').read_text(), 'base_link',
                                'tool0')
        assert chain.joint_names == ['rail', 'turret_yaw', 'shoulder_pitch', 'elbow_pitch',
                                     'wrist_pitch']
        assert chain.joints[0].prismatic and chain.max_velocity[0] == 0.5


ARM = ('<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
       '<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>'
       '<limit lower="-2" upper="2" velocity="1"/></joint>'
       '<joint name="j2" type="revolute"><parent link="l1"/><child link="tip"/>'
       '<origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>'
       '<limit lower="-2" upper="2" velocity="1"/></joint>')
ARM_LINKS = ('base', 'l1', 'tip')
EXTRAS = {
    'gripper fingers with a mimic': (
        ('f1', 'f2'),
        '<joint name="finger1" type="prismatic"><parent link="tip"/><child link="f1"/>'
        '<axis xyz="0 1 0"/><limit lower="0" upper="0.04" velocity="0.1"/></joint>'
        '<joint name="finger2" type="prismatic"><parent link="tip"/><child link="f2"/>'
        '<axis xyz="0 -1 0"/><limit lower="0" upper="0.04" velocity="0.1"/>'
        '<mimic joint="finger1"/></joint>'),
    'a mimic of an unknown joint off the path': (
        ('f1',), '<joint name="finger1" type="revolute"><parent link="l1"/><child link="f1"/>'
                 '<limit lower="0" upper="1" velocity="1"/><mimic joint="nobody"/></joint>'),
    'a floating camera mount': (
        ('camera',), '<joint name="camera_mount" type="floating"><parent link="base"/>'
                     '<child link="camera"/></joint>'),
    'a planar base above a second root': (
        ('world', 'cart'), '<joint name="cart_joint" type="planar"><parent link="world"/>'
                           '<child link="cart"/><axis xyz="0 0 1"/></joint>'),
    'a second arm with odd limits': (
        ('r1', 'r2'), '<joint name="k1" type="revolute"><parent link="base"/>'
                      '<child link="r1"/><limit lower="3" upper="-3" velocity="1"/></joint>'
                      '<joint name="k2" type="screw"><parent link="r1"/><child link="r2"/>'
                      '</joint>'),
    'sensor links and an unparsable origin': (
        ('imu',), '<joint name="imu_joint" type="fixed"><parent link="l1"/>'
                  '<child link="imu"/><origin xyz="what"/></joint>'),
}


class TestIgnored:
    """Whatever hangs off the paths changes nothing, as for robot_state_publisher."""

    @pytest.mark.parametrize('extra', list(EXTRAS))
    def test_extras_off_the_path_are_ignored(self, extra):
        links, joints = EXTRAS[extra]
        plain = Chain.from_urdf(_robot(ARM_LINKS, ARM), 'base', 'tip')
        busy = Chain.from_urdf(_robot(ARM_LINKS + links, ARM + joints), 'base', 'tip')
        assert busy.joint_names == plain.joint_names == ['j1', 'j2']
        q = np.array([0.3, -0.4])
        np.testing.assert_array_equal(busy.tip_position(q), plain.tip_position(q))

    def test_a_cycle_anywhere_is_refused(self):
        joints = ('<joint name="a" type="fixed"><parent link="x"/><child link="y"/></joint>'
                  '<joint name="b" type="fixed"><parent link="y"/><child link="x"/></joint>')
        with pytest.raises(ChainError, match='form a cycle'):
            Chain.from_urdf(_robot(ARM_LINKS + ('x', 'y'), ARM + joints), 'base', 'tip')

    def test_a_floating_joint_on_the_path_is_refused(self):
        joints = ('<joint name="free" type="floating"><parent link="tip"/>'
                  '<child link="object"/></joint>')
        with pytest.raises(ChainError, match="joint 'free' has type 'floating' on the path"):
            Chain.from_urdf(_robot(ARM_LINKS + ('object',), ARM + joints), 'base', 'object')


def _robot(links, joints: str) -> str:
    return (f'<robot name="r">{"".join(f"<link name={chr(34)}{k}{chr(34)}/>" for k in links)}'
            f'{joints}</robot>')
