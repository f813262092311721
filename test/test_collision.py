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
Clearance against coal's exact distances: conservative always, exact on primitives.

Random plain chains (their links are capsules, so the robot's geometry is exact), random
configurations and random boxes, spheres and cylinders: every checked pair's distance is
never above coal's, equal to it (within coal's solver tolerance) for capsules, spheres and
boxes, and short of it by at most the cylinder's radius for cylinders, whose bound is
their capsule and end planes. A pair in contact is reported in contact. The hot check's
broad phase never bounds a pair above its exact distance, so what it rules out is never
the nearest pair, and its "at least d clear" answer is the exact one.
"""

import math

from fabrik_ros.chain import Chain
from fabrik_ros.collision import Box, Cylinder, nearest, Scene, Sphere
from fabrik_ros.collision.capsules import cylinder_points, fit_capsule
from fabrik_ros.model.rotations import rotation_from_rpy
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

coal = pytest.importorskip('coal', reason='coal is not installed (pip install -r '
                           'requirements.txt)')

COAL_TOLERANCE = 1e-5   # m: coal's GJK stops within about 1e-6 of the exact distance
coordinates = st.floats(-1.0, 1.0)
lengths = st.floats(0.03, 0.6)


def _pose(xyz, rpy) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3] = rotation_from_rpy(rpy)
    pose[:3, 3] = xyz
    return pose


points3 = st.tuples(coordinates, coordinates, coordinates)
angles3 = st.tuples(*[st.floats(-math.pi, math.pi)] * 3)
obstacles = st.one_of(
    st.builds(lambda size, xyz, rpy: Box(size, _pose(xyz, rpy)),
              st.tuples(lengths, lengths, lengths), points3, angles3),
    st.builds(Sphere, lengths, points3),
    st.builds(lambda radius, length, xyz, rpy: Cylinder(radius, length, _pose(xyz, rpy)),
              st.floats(0.02, 0.3), lengths, points3, angles3))


@st.composite
def robots(draw):
    """Return a random plain chain and a configuration within its limits."""
    segments = draw(st.integers(2, 6))
    chain = Chain.from_parameters(
        segments, draw(st.lists(st.floats(0.1, 0.5), min_size=segments, max_size=segments)),
        joint_type=draw(st.sampled_from(['hinge', 'two_axis'])), joint_limit=2.5)
    fractions = draw(st.lists(st.floats(0.0, 1.0), min_size=chain.dof, max_size=chain.dof))
    return chain, chain.lower + np.array(fractions) * (chain.upper - chain.lower)


def _transform(pose: np.ndarray):
    return coal.Transform3s(pose[:3, :3].copy(), pose[:3, 3].copy())


def _coal_capsule(start: np.ndarray, end: np.ndarray, radius: float):
    """Return a coal capsule and its transform for the segment start-end."""
    axis = end - start
    length = float(np.linalg.norm(axis))
    pose = np.eye(4)
    pose[:3, 3] = (start + end) / 2.0
    if length > 0.0:
        z = axis / length
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        pose[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    return coal.Capsule(radius, length), _transform(pose)


def _coal_obstacle(obstacle):
    if isinstance(obstacle, Box):
        return coal.Box(*obstacle.size_xyz), _transform(obstacle.pose)
    if isinstance(obstacle, Sphere):
        return coal.Sphere(obstacle.radius), _transform(obstacle.pose)
    return coal.Cylinder(obstacle.radius, obstacle.length), _transform(obstacle.pose)


def _coal_distance(first, second) -> float:
    return coal.distance(first[0], first[1], second[0], second[1], coal.DistanceRequest(),
                         coal.DistanceResult())


def _reference_rows(chain: Chain, q: np.ndarray, scene: Scene):
    """Return coal's distance for every row of pair_distances, and the obstacle of each."""
    model = chain.collision
    starts, ends = model.segments(chain.world_frames(q))
    capsules = [_coal_capsule(s, e, r) for s, e, r in zip(starts, ends, model.radii)]
    rows = model.pair_distances(chain.world_frames(q), scene)
    reference, kinds = [], []
    for row, (first, second) in enumerate(zip(rows.first, rows.second)):
        if row < rows.self_pairs:
            reference.append(_coal_distance(capsules[first], capsules[second]))
            kinds.append(None)
        else:
            obstacle = scene.obstacles[second]
            reference.append(_coal_distance(capsules[first], _coal_obstacle(obstacle)))
            kinds.append(obstacle)
    return rows.distances, np.array(reference), kinds


@settings(max_examples=60, deadline=None)
@given(robots(), st.lists(obstacles, min_size=1, max_size=5))
def test_every_pair_is_exact_on_primitives_and_never_above_the_truth(robot, obstacle_list):
    chain, q = robot
    ours, truth, kinds = _reference_rows(chain, q, Scene(obstacle_list))
    for distance, exact, kind in zip(ours, truth, kinds):
        if exact < 0.0:
            assert distance < COAL_TOLERANCE        # contact is reported as contact
            continue
        assert distance <= exact + COAL_TOLERANCE
        if isinstance(kind, Cylinder):
            assert distance >= exact - kind.radius - COAL_TOLERANCE
        else:
            assert distance == pytest.approx(exact, abs=COAL_TOLERANCE)


@settings(max_examples=60, deadline=None)
@given(robots(), st.lists(obstacles, max_size=5))
def test_clearance_is_the_smallest_pair_and_the_fast_path_agrees(robot, obstacle_list):
    chain, q = robot
    scene = Scene(obstacle_list)
    rows = chain.collision.pair_distances(chain.world_frames(q), scene)
    closest = chain.closest_pair(q, scene)
    expected = rows.distances.min() if len(rows.distances) else math.inf
    assert closest.distance == pytest.approx(expected, abs=1e-12)
    assert chain.clearance(q, obstacle_list) == closest.distance
    if len(rows.distances):
        gap = np.linalg.norm(closest.points[1] - closest.points[0])
        assert gap == pytest.approx(abs(closest.distance), abs=1e-9) or closest.distance < 0


def assert_bounds_hold(chain: Chain, q: np.ndarray, scene: Scene) -> None:
    """Assert every pair's smallest bound <= its exact distance == pair_distances' row."""
    model = chain.collision
    world = chain.world_frames(q)
    rows = nearest.CheckRows(model, scene)
    flat, points = nearest.bounds(rows, world)
    reference = model.pair_distances(world, scene).distances
    assert len(rows.pairs) == len(reference)
    lowest = np.full(len(rows.pairs), np.inf)
    np.minimum.at(lowest, rows.entry_pair, flat)
    distances = np.array([nearest.exact(rows, points, pair) for pair in range(len(rows.pairs))])
    np.testing.assert_allclose(distances, reference, rtol=0.0, atol=1e-12)
    assert np.all(lowest <= distances + 1e-12)


@settings(max_examples=80, deadline=None)
@given(robots(), st.lists(obstacles, max_size=5), st.floats(-0.3, 0.6))
def test_the_broad_phase_never_bounds_a_pair_above_its_distance(robot, obstacle_list, distance):
    chain, q = robot
    scene = Scene(obstacle_list)
    assert_bounds_hold(chain, q, scene)
    world = chain.world_frames(q)
    clearance = chain.collision.min_distance(world, scene)
    assert chain.collision.is_clear(world, scene, distance) == (clearance >= distance)
    assert chain.collision.is_clear(world, scene, clearance)
    every = chain.collision.pair_distances(world, scene)
    near = chain.collision.pair_distances(world, scene, within=distance)
    kept = every.distances < distance
    for field, expected in zip(near[:3], every[:3]):
        np.testing.assert_allclose(field, expected[kept], rtol=0.0, atol=1e-12)
    assert near.self_pairs == np.count_nonzero(kept[:every.self_pairs])
    gaps = np.linalg.norm(near.points_second - near.points_first, axis=1)
    outside = near.distances > 0.0      # closest points need not be unique, their gap is
    np.testing.assert_allclose(gaps[outside], near.distances[outside], rtol=0.0, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.01, 0.5), st.floats(0.01, 1.0), points3, angles3,
       st.lists(st.tuples(coordinates, coordinates, coordinates), min_size=1, max_size=20))
def test_a_cylinders_capsule_holds_every_point_of_it(radius, length, xyz, rpy, samples):
    pose = _pose(xyz, rpy)
    capsule = fit_capsule(*cylinder_points(radius, length, pose))
    for u, v, w in samples:          # points anywhere in the solid cylinder
        angle, reach = math.pi * u, radius * math.sqrt(abs(v))
        local = np.array([reach * math.cos(angle), reach * math.sin(angle), w * length / 2])
        point = pose[:3, :3] @ local + pose[:3, 3]
        axis = capsule.end - capsule.start
        t = np.clip(np.dot(point - capsule.start, axis) / max(np.dot(axis, axis), 1e-300),
                    0.0, 1.0)
        assert np.linalg.norm(point - capsule.start - t * axis) <= capsule.radius


def test_links_that_can_never_meet_are_not_checked():
    assert Chain.from_parameters(3, 0.3, joint_limit=0.5).collision.pair_names == []


def test_a_plain_chain_checks_no_adjacent_links():
    chain = Chain.from_parameters(5, 0.3, joint_limit=3.0)
    adjacent = {frozenset((joint.link_name, chain.joints[joint.parent].link_name))
                for joint in chain.joints if joint.parent >= 0}
    names = chain.collision.pair_names
    assert names
    assert not adjacent & {frozenset(pair) for pair in names}


def test_a_chain_folded_onto_itself_is_in_collision():
    chain = Chain.from_parameters(4, 0.3, joint_limit=3.1)
    assert chain.clearance(chain.neutral()) > 0.0
    folded = chain.closest_pair(np.array([0.0, 3.1, 3.1, 0.0]))
    assert folded.distance < 0.0
