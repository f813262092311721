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
The real descriptions' collision models, checked against their own meshes with coal.

UR5e with its Robotiq 2F-85 (airo-models) and the Panda with its hand and its SRDF
(example-robot-data), found as test/test_descriptions.py finds them: every link capsule is
never closer to an obstacle or to another link than coal says the link's real meshes are;
the hot check's bounds hold on them and its clearance is the smallest pair's; the neutral
pose is clear of self-collision, a folded one is not; the checked pairs leave out adjacent
links, links that move together and the pairs an SRDF disables.
"""

from collections import defaultdict
from importlib import metadata
from pathlib import Path
import xml.etree.ElementTree as ElementTree

from fabrik_ros.chain import Chain
from fabrik_ros.collision import Box, Cylinder, Scene, Sphere
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from test_collision import assert_bounds_hold
from test_descriptions import (_example_robot_data, _numbers, _plain_xml, _rpy,
                               reference_tip_transform, ur5e_with_robotiq)

coal = pytest.importorskip('coal', reason='coal is not installed (pip install -r '
                           'requirements.txt)')
COAL_TOLERANCE = 1e-5   # m


def ur5e_with_gripper() -> Chain:
    """Return the UR5e with its Robotiq gripper to tool0, mesh names made absolute."""
    import airo_models
    share = Path(airo_models.__file__).parent
    arm_dir, gripper_dir = share / 'arms/ur5e', share / 'grippers/robotiq_2f_85/urdf'
    root = _plain_xml(ur5e_with_robotiq())
    for mesh in root.iter('mesh'):
        name = mesh.get('filename')
        folder = gripper_dir if name.startswith('../') else arm_dir
        mesh.set('filename', str((folder / name).resolve()))
    return Chain.from_urdf(ElementTree.tostring(root, encoding='unicode'), 'base_link',
                           'tool0')


def panda_with_hand() -> Chain:
    """Return the Panda with its hand to the flange and its SRDF's disabled pairs."""
    text = _example_robot_data('panda_description/urdf/panda.urdf')
    share = metadata.distribution('example-robot-data').locate_file(
        'cmeel.prefix/share/example-robot-data')
    return Chain.from_urdf(text, 'panda_link0', 'panda_link8',
                           package_dirs={'example-robot-data': share},
                           srdf_xml=_example_robot_data('panda_description/srdf/panda.srdf'))


ROBOTS = {'ur5e with gripper': ur5e_with_gripper, 'panda with hand': panda_with_hand}


@pytest.fixture(params=list(ROBOTS), scope='module')
def robot(request) -> Chain:
    return ROBOTS[request.param]()


# A pose each description's makers call neutral: the UR's zero, the Panda's 'ready'.
NEUTRAL = {'ur5e with gripper': np.zeros(6),
           'panda with hand': np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])}
# Folded onto itself: the UR's elbow closed, the Panda's wrist bent back onto its forearm.
FOLDED = {'ur5e with gripper': np.array([0.0, 0.0, 3.0, 0.0, 0.0, 0.0]),
          'panda with hand': np.array([0.0, 0.0, 0.0, -0.07, 0.0, 0.0, 0.0])}


def _name(chain: Chain) -> str:
    return 'ur5e with gripper' if 'tool0' in chain.effector_names else 'panda with hand'


def test_the_neutral_pose_is_clear_of_itself(robot):
    assert robot.clearance(NEUTRAL[_name(robot)]) > 0.0


def test_a_folded_pose_is_in_self_collision(robot):
    assert robot.clearance(FOLDED[_name(robot)]) < 0.0


def test_adjacent_links_and_links_that_move_together_are_not_checked(robot):
    model = robot.collision
    frame = {body.name: body.frame for body in model.bodies}
    pairs = {frozenset(pair) for pair in model.pair_names}
    assert pairs
    assert all(frame[a] != frame[b] for a, b in model.pair_names)
    joints = {joint.link_name: joint for joint in robot.joints}
    for link, joint in joints.items():
        if joint.parent >= 0 and link in frame and robot.joints[joint.parent].link_name in frame:
            assert frozenset((link, robot.joints[joint.parent].link_name)) not in pairs


def test_an_srdf_disables_its_pairs():
    chain = ur5e_with_gripper()
    first, second = chain.collision.pair_names[0]
    srdf = f'<robot name="ur"><disable_collisions link1="{first}" link2="{second}"/></robot>'
    urdf = chain.collision_source.urdf_xml
    disabled = Chain.from_urdf(urdf, 'base_link', 'tool0', srdf_xml=srdf)
    assert (first, second) not in disabled.collision.pair_names
    assert len(disabled.collision.pair_names) == len(chain.collision.pair_names) - 1


# ------------------------------------------------------------------ against the meshes

def _coal_links(chain: Chain) -> dict:
    """Return each link's coal geometries and their origins in the link frame."""
    source = chain.collision_source
    root = _plain_xml(source.urdf_xml)
    share = {name: Path(path) for name, path in source.package_dirs.items()}
    links = {}
    for link in root.iter('link'):
        shapes = []
        for collision in link.findall('collision'):
            shape = next(iter(collision.find('geometry')))
            origin = reference_origin(collision.find('origin'))
            if shape.tag == 'mesh':
                name = shape.get('filename')
                if name.startswith('package://'):
                    package, _, relative = name[len('package://'):].partition('/')
                    name = str(share[package] / relative)
                scale = [float(v) for v in shape.get('scale', '1 1 1').split()]
                shapes.append((coal.MeshLoader().load(name, np.array(scale)), origin))
            elif shape.tag == 'sphere':
                shapes.append((coal.Sphere(float(shape.get('radius'))), origin))
            elif shape.tag == 'box':
                shapes.append((coal.Box(*map(float, shape.get('size').split())), origin))
            else:
                shapes.append((coal.Cylinder(float(shape.get('radius')),
                                             float(shape.get('length'))), origin))
        links[link.get('name')] = shapes
    return links


def reference_origin(element) -> np.ndarray:
    """Return a URDF <origin> as a (4, 4), read independently of the package."""
    pose = np.eye(4)
    pose[:3, :3] = _rpy(*_numbers(element, 'rpy', '0 0 0'))
    pose[:3, 3] = _numbers(element, 'xyz', '0 0 0')
    return pose


def _transform(pose: np.ndarray):
    return coal.Transform3s(pose[:3, :3].copy(), pose[:3, 3].copy())


def _distance(shapes_a, shapes_b) -> float:
    return min(coal.distance(a, _transform(pa), b, _transform(pb), coal.DistanceRequest(),
                             coal.DistanceResult())
               for a, pa in shapes_a for b, pb in shapes_b)


@pytest.fixture(scope='module')
def meshes(robot):
    return _coal_links(robot)


SCENE = [Box((1.2, 1.2, 0.04), np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -0.1],
                                         [0, 0, 0, 1.0]])),
         Sphere(0.08, (0.45, 0.2, 0.35)), Sphere(0.05, (-0.3, -0.4, 0.6)),
         Cylinder(0.06, 0.9, np.array([[1, 0, 0, 0.4], [0, 1, 0, -0.35], [0, 0, 1, 0.45],
                                       [0, 0, 0, 1.0]])),
         Box((0.2, 0.3, 0.25), np.array([[0, -1, 0, -0.45], [1, 0, 0, 0.1], [0, 0, 1, 0.3],
                                         [0, 0, 0, 1.0]]))]


@settings(max_examples=15, deadline=None)
@given(fractions=st.lists(st.floats(0.0, 1.0), min_size=7, max_size=7))
def test_no_pair_is_reported_farther_than_its_meshes_are(robot, meshes, fractions):
    low, high = np.maximum(robot.lower, -np.pi), np.minimum(robot.upper, np.pi)
    q = low + np.array(fractions[:robot.dof]) * (high - low)
    urdf = robot.collision_source.urdf_xml
    # Joints off the chain (the fingers and their mimic leader) are held at zero.
    positions = defaultdict(float, zip(robot.all_joint_names, robot.expand(q)))
    model = robot.collision
    placed = {}
    for name in model.names:
        pose = reference_tip_transform(urdf, robot.base_link, name, positions) \
            if name != robot.base_link else np.eye(4)
        placed[name] = [(shape, pose @ origin) for shape, origin in meshes[name]]
    scene = Scene(SCENE)
    assert_bounds_hold(robot, q, scene)
    rows = model.pair_distances(robot.world_frames(q), scene)
    assert robot.clearance(q, scene) == pytest.approx(rows.distances.min(), abs=1e-12)
    assert rows.self_pairs > 0 and len(rows.distances) > rows.self_pairs
    for row, (first, second) in enumerate(zip(rows.first, rows.second)):
        if row < rows.self_pairs:
            other = placed[model.names[second]]
        else:
            obstacle = scene.obstacles[second]
            shape = (coal.Box(*obstacle.size_xyz) if isinstance(obstacle, Box) else
                     coal.Sphere(obstacle.radius) if isinstance(obstacle, Sphere) else
                     coal.Cylinder(obstacle.radius, obstacle.length))
            other = [(shape, obstacle.pose)]
        truth = _distance(placed[model.names[first]], other)
        assert rows.distances[row] <= max(truth, 0.0) + COAL_TOLERANCE
