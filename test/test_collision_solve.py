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
Collision-aware solves: a reached answer is clear, its clearance never above the truth.

Random plain chains among random obstacles, measured independently by coal (capsules and
primitives), and the real descriptions (the UR5e with its gripper, the Panda with its
hand) beside a table and a pillar, measured by coal on their own meshes. A target only
reachable in collision ends clear and not reached; another branch is found where the
first answer collides; with nothing to check the answers are those of today.
"""

from collections import defaultdict
from pathlib import Path

from fabrik_ros.chain import Chain
from fabrik_ros.collision import Box, Cylinder, Scene, Sphere
from fabrik_ros.ik import IkSolver
from fabrik_ros.model.rotations import quaternion_from_rotation
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from test_collision import _reference_rows, COAL_TOLERANCE, obstacles, robots

pytest.importorskip('coal', reason='coal is not installed (pip install -r requirements.txt)')

MARGIN = 0.01   # m, the default collision_margin
TABLE = Box((1.6, 1.6, 0.04), np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -0.03],
                                        [0, 0, 0, 1.0]]))
PILLAR = Cylinder(0.07, 1.4, np.array([[1, 0, 0, 0.45], [0, 1, 0, 0.3], [0, 0, 1, 0.7],
                                       [0, 0, 0, 1.0]]))


def _truth(chain: Chain, q: np.ndarray, scene: Scene) -> float:
    """Return coal's smallest distance over the checked pairs at q (capsules, primitives)."""
    _, reference, _ = _reference_rows(chain, q, scene)
    return float(reference.min()) if len(reference) else float('inf')


@settings(max_examples=40, deadline=None)
@given(robots(), st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
       st.lists(obstacles, max_size=4))
def test_a_reached_answer_is_clear_and_its_clearance_is_never_above_the_truth(
        robot, fractions, obstacle_list):
    chain, seed = robot
    q = chain.lower + np.array(fractions[:chain.dof]) * (chain.upper - chain.lower)
    solver = IkSolver(chain, self_collision=True, max_restarts=4)
    solver.set_obstacles(obstacle_list)
    result = solver.solve(chain.tip_position(q), seed=seed)
    truth = _truth(chain, result.q, Scene(obstacle_list))
    assert result.clearance <= max(truth, 0.0) + COAL_TOLERANCE    # depths are bounds
    assert result.clearance == pytest.approx(chain.clearance(result.q, obstacle_list),
                                             abs=1e-12)
    if result.reached:
        assert truth >= MARGIN - COAL_TOLERANCE
        assert result.error <= solver.tolerance
    assert np.all(result.q >= chain.lower) and np.all(result.q <= chain.upper)
    np.testing.assert_allclose(result.effector_positions, chain.effector_positions(result.q),
                               atol=1e-12)


def test_a_target_inside_an_obstacle_ends_clear_and_not_reached():
    chain = Chain.from_parameters(4, 0.25, joint_type='two_axis', joint_limit=2.5)
    target = chain.tip_position(np.full(chain.dof, 0.4))
    solver = IkSolver(chain, self_collision=True)
    solver.set_obstacles([Sphere(0.06, center=tuple(target))])
    result = solver.solve(target)
    assert not result.reached
    assert result.clearance >= MARGIN
    assert result.closest_pair[1] == 'obstacle 0 (sphere)'
    assert result.error >= 0.06
    assert result.clearance == pytest.approx(chain.clearance(result.q, solver.obstacles))


def test_a_pose_reachable_only_through_the_pillar_ends_at_a_clear_compromise_near_it():
    """
    The demo's arm and scene: the tool upright beside the pillar, which every answer crosses.

    The free answer's upper arm runs through the pillar (its axis inside it: no direction
    between closest points); the search pushes it out from the pillar's centre and closes
    in, where steps capped at their largest from the seed alone would stop far short.
    """
    share = Path(__file__).resolve().parents[1]
    chain = Chain.from_urdf((share / 'urdf' / 'arm.urdf').read_text(), 'base_link', 'tool0')
    scene = [Box((0.8, 0.8, 0.04), _at(-0.15, 0.5, 0.08)),
             Cylinder(0.05, 0.55, _at(0.075, 0.175, 0.375))]
    target, upright = np.array([0.125, 0.438, 0.395]), np.array([0.0, 0.0, 0.0, 1.0])
    free = IkSolver(chain).solve(target, orientation=upright)
    assert chain.clearance(free.q, scene) < 0.0
    solver = IkSolver(chain)
    solver.set_obstacles(scene)
    result = solver.solve(target, orientation=upright)
    assert not result.reached and result.clearance >= MARGIN
    assert result.error < 0.1       # the seed's tool is 0.84 m from the target
    assert result.clearance == pytest.approx(chain.clearance(result.q, scene))


def _at(x: float, y: float, z: float) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = (x, y, z)
    return pose


def test_without_anything_to_check_the_answers_are_todays():
    chain = Chain.from_parameters(5, 0.2, joint_type='two_axis', joint_limit=2.5)
    rng = np.random.default_rng(4)
    plain, checked_off = IkSolver(chain), IkSolver(chain, self_collision=False)
    assert not plain.self_collision     # a chain from parameters: its capsules are guesses
    for _ in range(10):
        target = chain.tip_position(rng.uniform(chain.lower, chain.upper))
        first, second = plain.solve(target), checked_off.solve(target)
        assert first.q.tobytes() == second.q.tobytes()
        assert first.clearance == second.clearance == float('inf')


def test_bad_settings_and_obstacles_are_refused_in_one_line():
    chain = Chain.from_parameters(3, 0.3)
    for margin in (-0.01, float('nan'), 'wide'):
        with pytest.raises(ValueError, match='collision_margin') as error:
            IkSolver(chain, collision_margin=margin)
        assert '\n' not in str(error.value)
    with pytest.raises(ValueError, match='self_collision'):
        IkSolver(chain, self_collision='yes')
    with pytest.raises(TypeError, match='obstacle 1 is a str'):
        IkSolver(chain).set_obstacles([Sphere(0.1), 'table'])
    with pytest.raises(TypeError, match='obstacles must be a list'):
        IkSolver(chain).set_obstacles(3)


# ---------------------------------------------------------------- real descriptions

coal = pytest.importorskip('coal')


@pytest.fixture(params=['ur5e with gripper', 'panda with hand'], scope='module')
def described(request):
    """Return a real description, its coal meshes, and clear full-pose targets."""
    from test_collision_descriptions import _coal_links, ROBOTS
    chain = ROBOTS[request.param]()
    rng = np.random.default_rng(11)
    poses = []
    for _ in range(2000):
        if len(poses) == 8:
            break
        q = rng.uniform(np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi))
        if chain.clearance(q, [TABLE, PILLAR]) >= 0.03:
            poses.append(chain.tip_pose(q))
    return chain, _coal_links(chain), poses


def _mesh_clearance(chain: Chain, meshes: dict, q: np.ndarray, scene: Scene) -> float:
    """Return coal's smallest distance between the real meshes over the checked pairs."""
    from test_collision_descriptions import _distance
    from test_descriptions import reference_tip_transform
    model = chain.collision
    urdf = chain.collision_source.urdf_xml
    positions = defaultdict(float, zip(chain.all_joint_names, chain.expand(q)))
    placed = {name: [(shape, (reference_tip_transform(urdf, chain.base_link, name, positions)
                              if name != chain.base_link else np.eye(4)) @ origin)
                     for shape, origin in meshes[name]] for name in model.names}
    rows = model.pair_distances(chain.world_frames(q), scene)
    distances = []
    for row, (first, second) in enumerate(zip(rows.first, rows.second)):
        if row < rows.self_pairs:
            other = placed[model.names[second]]
        else:
            obstacle = scene.obstacles[second]
            other = [(coal.Box(*obstacle.size_xyz) if isinstance(obstacle, Box)
                      else coal.Cylinder(obstacle.radius, obstacle.length), obstacle.pose)]
        distances.append(_distance(placed[model.names[first]], other))
    return min(distances)


def test_real_arms_never_reach_in_collision_and_never_overstate_clearance(described):
    chain, meshes, poses = described
    solver = IkSolver(chain)
    assert solver.self_collision        # read from a URDF: its own collision geometry
    solver.set_obstacles([TABLE, PILLAR])
    scene = Scene([TABLE, PILLAR])
    for pose in poses:
        result = solver.solve(pose[:3, 3], orientation=quaternion_from_rotation(pose[:3, :3]))
        truth = _mesh_clearance(chain, meshes, result.q, scene)
        assert result.clearance <= max(truth, 0.0) + COAL_TOLERANCE
        if result.reached:
            assert truth >= MARGIN - COAL_TOLERANCE


def test_a_described_arm_without_obstacles_checks_itself(described):
    chain, _, poses = described
    solver = IkSolver(chain)            # set_obstacles never called: its links alone
    for pose in poses[:3]:
        result = solver.solve(pose[:3, 3], orientation=quaternion_from_rotation(pose[:3, :3]))
        assert np.isfinite(result.clearance) and all(result.closest_pair)
        assert result.clearance <= chain.clearance(result.q) + 1e-12
        assert not result.reached or result.clearance >= MARGIN


def _first_answer_colliding(chain: Chain, scene: list, count: int) -> list:
    """Return (position, quaternion) of clear poses whose collision-free answer collides."""
    free = IkSolver(chain, self_collision=False)
    rng = np.random.default_rng(5)
    targets = []
    while len(targets) < count:
        q = rng.uniform(-np.pi, np.pi, chain.dof)
        if chain.clearance(q, scene) < 0.03:
            continue
        pose = chain.tip_pose(q)
        orientation = quaternion_from_rotation(pose[:3, :3])
        first = free.solve(pose[:3, 3], orientation=orientation)
        if first.reached and chain.clearance(first.q, scene) < MARGIN:
            targets.append((pose[:3, 3], orientation))
    return targets


def test_where_the_first_answer_collides_another_branch_is_found_clear():
    from test_collision_descriptions import ur5e_with_gripper
    chain = ur5e_with_gripper()
    scene = [TABLE, PILLAR]
    aware = IkSolver(chain)
    aware.set_obstacles(scene)
    for position, orientation in _first_answer_colliding(chain, scene, 3):
        result = aware.solve(position, orientation=orientation)
        assert result.reached
        assert result.clearance >= MARGIN
        assert chain.clearance(result.q, scene) == pytest.approx(result.clearance)


def test_a_solve_out_of_time_when_its_answer_collides_returns_that_answer_unreached():
    from test_collision_descriptions import ur5e_with_gripper
    chain = ur5e_with_gripper()
    scene = [TABLE, PILLAR]
    ticks = [0.0]

    def clock() -> float:       # each reading a second later: late once the answer is in
        ticks[0] += 1.0
        return ticks[0]
    late = IkSolver(chain, clock=clock, timeout=1.5)
    late.set_obstacles(scene)
    for position, orientation in _first_answer_colliding(chain, scene, 2):
        result = late.solve(position, orientation=orientation)
        assert result.timed_out and not result.reached
        assert result.clearance == pytest.approx(chain.clearance(result.q, scene))
        assert result.clearance < MARGIN


@pytest.fixture(scope='module')
def ur5e() -> Chain:
    from test_collision_descriptions import ur5e_with_gripper
    return ur5e_with_gripper()


@settings(max_examples=60, deadline=None)
@given(angles=st.lists(st.floats(-np.pi, np.pi), min_size=12, max_size=12))
def test_the_searched_branches_are_every_exact_solution_nearest_the_seed_first(ur5e, angles):
    from fabrik_ros.ik.branches import offset_wrist_solutions
    from fabrik_ros.ik.offset_wrist import offset_wrist_angles
    chain = ur5e
    solver = IkSolver(chain, self_collision=False)
    arm, limits = solver._split.arm, solver.limits
    q, seed = np.array(angles[:6]), angles[6:]
    assume(abs(np.sin(q[2])) > 0.05 and abs(np.sin(q[4])) > 0.05)     # off the singularities
    pose = chain.tip_pose(q)
    solutions = list(offset_wrist_solutions(arm, pose[:3, 3], pose[:3, :3].ravel(), seed,
                                            limits.lower, limits.upper))
    for solution in solutions:
        assert np.allclose(chain.tip_pose(solution), pose, atol=1e-9)
        assert np.all(chain.lower <= solution) and np.all(solution <= chain.upper)
    moved = [sum((a - s) ** 2 for a, s in zip(solution, seed)) for solution in solutions]
    assert moved == sorted(moved)
    nearest = offset_wrist_angles(arm, pose[:3, 3], pose[:3, :3].ravel(), seed, limits.lower,
                                  limits.upper)
    assert nearest == pytest.approx(solutions[0], abs=1e-9)
    turns = [np.remainder(np.array(solution) - q + np.pi, 2 * np.pi) - np.pi
             for solution in solutions]
    assert min(np.abs(turn).max() for turn in turns) < 1e-6     # q's own branch among them


def test_a_colliding_answer_gives_way_to_the_first_clear_exact_solution_nearest_the_seed(ur5e):
    from fabrik_ros.ik.branches import offset_wrist_solutions
    chain, scene = ur5e, [TABLE, PILLAR]
    aware = IkSolver(chain)
    aware.set_obstacles(scene)
    limits = aware.limits
    for position, orientation in _first_answer_colliding(chain, scene, 3):
        result = aware.solve(position, orientation=orientation)
        rotation = aware._orientations(orientation, [tuple(position)])[0]
        solutions = offset_wrist_solutions(aware._split.arm, position, rotation,
                                           chain.neutral().tolist(), limits.lower,
                                           limits.upper)
        first = next(q for q in solutions if chain.clearance(q, scene) >= MARGIN)
        assert result.reached and result.q.tolist() == first
        tip = chain.tip_pose(result.q)
        assert result.error == pytest.approx(np.linalg.norm(tip[:3, 3] - position), abs=1e-12)
        assert result.clearance == pytest.approx(chain.clearance(result.q, scene), abs=1e-12)
