#!/usr/bin/env python3

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
One configuration's clearance on real arms among obstacles: a benchmark, not a test.

    python3 bench/collision_bench.py [--configurations 2000] [--reference 100] [--targets 200]

For the UR5e with its Robotiq gripper and the Panda with its hand (their own collision
meshes, loaded as test/test_collision_descriptions.py loads them) and five obstacles (a
table, two spheres, a pillar, a box), at random configurations within the limits, it times
per call, wall clock (median, p90) and CPU (the loop's process time over its calls):
chain.clearance(q, scene) (forward kinematics included, the hot check), the same over the
configurations that are clear (a solver's answers are; a clear configuration leaves more
pairs that no bound rules out), the same with the obstacles as a plain list, with no
obstacles, and from FK frames already computed (all configurations, the clear ones, and
is_clear's "at least 1 cm apart"); chain.closest_pair (names and points too); forward
kinematics alone. The machine's load average is recorded before and after. On
--reference of the configurations it compares the clearance with coal's exact distance
between the real meshes over the same pairs: how much lower ours is (it must never be
higher). Prints a table and writes bench/results/collision_bench.json with the commit and
the command. Needs coal, airo-models and example-robot-data (requirements.txt).

Solves among obstacles (a table under the base, a pillar beside it and three random
obstacles): --targets reachable collision-free tool poses per robot (random configurations
within the limits whose clearance is at least 3 cm, target = their FK pose), each solved
from the neutral seed once by the collision-aware solver (IkSolver with the obstacles,
self-collision on) and once by the collision-free one (self_collision=False, no
obstacles), in alternating order, wall clock and CPU per solve, after both have solved
WARM_UP other targets untimed. Reported: the share the aware solver solves clear within
1 mm and 1 degree (clear: chain.clearance at least collision_margin), answers reported
reached while in collision (chain.clearance below the margin), the time of the aware solve
against the free one (mean and median ratios), and the share of the free solver's reached
answers that collide.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
import json
import os
from pathlib import Path
import platform
import subprocess
import sys
import time
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / 'test')]

import coal  # noqa: E402
from fabrik_ros.collision import Box, Cylinder, Scene, Sphere  # noqa: E402
from fabrik_ros.ik import IkSolver  # noqa: E402
from fabrik_ros.model.rotations import quaternion_from_rotation  # noqa: E402
import numpy as np  # noqa: E402
from test_collision_descriptions import _coal_links, _distance, ROBOTS, SCENE  # noqa: E402
from test_descriptions import reference_tip_transform  # noqa: E402


NO_OBSTACLES = Scene()
CLEAR_TARGETS = 0.03    # m: the targets' configurations keep this clear of everything
POSITION_GOAL = 1e-3    # m
ANGLE_GOAL = np.radians(1.0)
WARM_UP = 10            # untimed solves of other clear targets before the timed ones


def _pose(xyz) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = xyz
    return pose


TABLE_AND_PILLAR = [Box((1.6, 1.6, 0.04), _pose((0.0, 0.0, -0.03))),
                    Cylinder(0.07, 1.4, _pose((0.45, 0.3, 0.7)))]


def random_obstacles(generator: np.random.Generator, count: int) -> list:
    """Return spheres and boxes placed at random in an arm's workspace, off its base."""
    obstacles = []
    while len(obstacles) < count:
        xyz = generator.uniform((-0.8, -0.8, 0.1), (0.8, 0.8, 1.0))
        if np.linalg.norm(xyz[:2]) < 0.35:
            continue
        size = generator.uniform(0.04, 0.12)
        obstacles.append(Sphere(size, tuple(xyz)) if len(obstacles) % 2 else
                         Box((size, 1.5 * size, 2 * size), _pose(xyz)))
    return obstacles


def clear_targets(chain, scene: list, count: int, generator: np.random.Generator
                  ) -> list[np.ndarray]:
    """Return tool poses (4, 4) of random configurations at least CLEAR_TARGETS clear."""
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    poses = []
    while len(poses) < count:
        q = generator.uniform(low, high)
        if chain.clearance(q, scene) >= CLEAR_TARGETS:
            poses.append(chain.tip_pose(q))
    return poses


def solve_among_obstacles(chain, scene: list, poses: list[np.ndarray],
                          warm_up: list[np.ndarray]) -> dict:
    """
    Return the collision-aware and collision-free solves' outcomes and times.

    Each solver first solves the warm_up poses untimed: a solver's first solves compile its
    kernels, which a node does once at start-up, not per target.
    """
    aware = IkSolver(chain)
    aware.set_obstacles(scene)
    free = IkSolver(chain, self_collision=False)
    for pose in warm_up:
        orientation = quaternion_from_rotation(pose[:3, :3])
        for solver in (aware, free):
            solver.solve(pose[:3, 3], orientation=orientation)
    times = {'aware': [], 'free': []}
    cpu = {'aware': 0.0, 'free': 0.0}
    clear, in_collision, free_reached, free_colliding = 0, 0, 0, 0
    for index, pose in enumerate(poses):
        orientation = quaternion_from_rotation(pose[:3, :3])
        order = ('aware', 'free') if index % 2 == 0 else ('free', 'aware')
        results = {}
        for name in order:
            solver = aware if name == 'aware' else free
            cpu_start, start = time.process_time(), time.perf_counter()
            results[name] = solver.solve(pose[:3, 3], orientation=orientation)
            times[name].append(time.perf_counter() - start)
            cpu[name] += time.process_time() - cpu_start
        answer = results['aware']
        clearance = chain.clearance(answer.q, scene)
        close = answer.error <= POSITION_GOAL and answer.orientation_error <= ANGLE_GOAL
        clear += close and clearance >= aware.collision_margin
        in_collision += answer.reached and clearance < aware.collision_margin
        other = results['free']
        free_reached += other.reached
        free_colliding += other.reached and chain.clearance(other.q, scene) < \
            aware.collision_margin
    aware_times, free_times = np.array(times['aware']), np.array(times['free'])
    return {
        'targets': len(poses), 'obstacles': len(scene),
        'solved_clear_share': clear / len(poses),
        'reached_in_collision': int(in_collision),
        'free_solver_collision_share': free_colliding / max(free_reached, 1),
        'aware_median_us': float(np.median(aware_times) * 1e6),
        'aware_p95_us': float(np.percentile(aware_times, 95) * 1e6),
        'aware_mean_us': float(aware_times.mean() * 1e6),
        'free_median_us': float(np.median(free_times) * 1e6),
        'free_mean_us': float(free_times.mean() * 1e6),
        'mean_ratio': float(aware_times.mean() / free_times.mean()),
        'median_ratio': float(np.median(aware_times) / np.median(free_times)),
        'cpu_ratio': cpu['aware'] / cpu['free']}


def per_call(action: Callable[[object], object], inputs: list) -> dict:
    """Return wall-clock median and p90 and mean CPU time per call, microseconds."""
    wall = np.empty(len(inputs))
    cpu_start = time.process_time()
    for row, argument in enumerate(inputs):
        start = time.perf_counter()
        action(argument)
        wall[row] = time.perf_counter() - start
    cpu = (time.process_time() - cpu_start) / len(inputs)
    return {'median_us': float(np.median(wall) * 1e6),
            'p90_us': float(np.percentile(wall, 90) * 1e6), 'cpu_us': cpu * 1e6}


def reference_gaps(chain, configurations: np.ndarray) -> dict:
    """
    Return how far below coal's exact mesh clearance ours is, metres, over the pairs.

    Gaps over the configurations where the meshes are clear; above_truth counts those where
    ours is above coal's (above zero when the meshes touch), which must never happen.
    """
    meshes = _coal_links(chain)
    scene = Scene(SCENE)
    urdf = chain.collision_source.urdf_xml
    model = chain.collision
    gaps, above = [], 0
    for q in configurations:
        positions = _positions(chain, q)
        placed = {name: [(shape, (reference_tip_transform(urdf, chain.base_link, name,
                                                          positions)
                                  if name != chain.base_link else np.eye(4)) @ origin)
                         for shape, origin in meshes[name]] for name in model.names}
        rows = model.pair_distances(chain.world_frames(q), scene)
        truth = min(
            _distance(placed[model.names[first]],
                      placed[model.names[second]] if row < rows.self_pairs
                      else _obstacle_shape(scene.obstacles[second]))
            for row, (first, second) in enumerate(zip(rows.first, rows.second)))
        ours = chain.clearance(q, scene)
        above += ours > max(truth, 0.0) + 1e-5
        if truth > 0.0:
            gaps.append(truth - ours)
    gaps = np.array(gaps) if gaps else np.full(1, np.nan)
    return {'configurations': len(configurations), 'clear_configurations': len(gaps),
            'above_truth': int(above), 'lowest_gap_m': float(gaps.min()),
            'median_gap_m': float(np.median(gaps)), 'p90_gap_m': float(np.percentile(gaps, 90))}


def _positions(chain, q: np.ndarray) -> dict:
    """Return every joint's position by name; joints off the chain read zero."""
    return defaultdict(float, zip(chain.all_joint_names, chain.expand(q)))


def _obstacle_shape(obstacle) -> list:
    """Return an obstacle as coal shapes with their poses."""
    shape = (coal.Box(*obstacle.size_xyz) if isinstance(obstacle, Box) else
             coal.Sphere(obstacle.radius) if isinstance(obstacle, Sphere) else
             coal.Cylinder(obstacle.radius, obstacle.length))
    return [(shape, obstacle.pose)]


def main(argv: list[str] | None = None) -> None:
    """Time the clearance on each robot, print a table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--configurations', type=int, default=2000)
    parser.add_argument('--reference', type=int, default=100)
    parser.add_argument('--targets', type=int, default=200)
    args = parser.parse_args(argv)
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    results = {'command': ' '.join(['python3', 'bench/collision_bench.py'] + sys.argv[1:]),
               'commit': commit, 'obstacles': len(SCENE), 'load_before': os.getloadavg(),
               'machine': {'python': platform.python_version(), 'numpy': np.__version__},
               'robots': {}}
    generator = np.random.default_rng(0)
    for name, build in ROBOTS.items():
        chain = build()
        start = time.perf_counter()
        model = chain.collision
        build_s = time.perf_counter() - start
        low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
        configurations = generator.uniform(low, high, (args.configurations, chain.dof))
        scene = Scene(SCENE)
        configurations = list(configurations)
        frames = [chain.world_frames(q) for q in configurations]
        clear = [q for q in configurations if chain.clearance(q, scene) > 0.0]
        timings = {
            'clearance': per_call(lambda q: chain.clearance(q, scene), configurations),
            'clearance_clear_configurations': per_call(lambda q: chain.clearance(q, scene),
                                                       clear),
            'clearance_obstacle_list': per_call(lambda q: chain.clearance(q, SCENE),
                                                configurations),
            'self_collision_only': per_call(lambda q: chain.clearance(q, NO_OBSTACLES),
                                            configurations),
            'clearance_from_frames': per_call(lambda world: model.min_distance(world, scene),
                                              frames),
            'clear_frames_only': per_call(lambda world: model.min_distance(world, scene),
                                          [chain.world_frames(q) for q in clear]),
            'is_clear_1cm_from_frames': per_call(
                lambda world: model.is_clear(world, scene, 0.01), frames),
            'closest_pair': per_call(lambda q: chain.closest_pair(q, scene), configurations),
            'forward_kinematics': per_call(chain.world_frames, configurations)}
        results['robots'][name] = {
            'bodies': len(model.bodies), 'checked_self_pairs': len(model.pairs),
            'clear_configurations': len(clear),
            'model_build_s': build_s, 'timings': timings,
            'against_coal_meshes': reference_gaps(chain, configurations[:args.reference])}
        print(f'{name}: {len(model.bodies)} capsules, {len(model.pairs)} self pairs, '
              f'{len(SCENE)} obstacles, model built in {build_s:.2f} s; {len(clear)} of '
              f'{len(configurations)} configurations clear')
        for what, timing in timings.items():
            print(f'  {what:30s} median {timing["median_us"]:7.1f} us  p90 '
                  f'{timing["p90_us"]:7.1f} us  cpu {timing["cpu_us"]:7.1f} us')
        scene_list = TABLE_AND_PILLAR + random_obstacles(generator, 3)
        poses = clear_targets(chain, scene_list, args.targets, generator)
        warm_up = clear_targets(chain, scene_list, WARM_UP, np.random.default_rng(1))
        solves = solve_among_obstacles(chain, scene_list, poses, warm_up)
        results['robots'][name]['solves_among_obstacles'] = solves
        print(f'  solves among {solves["obstacles"]} obstacles, {solves["targets"]} clear '
              f'targets: {solves["solved_clear_share"] * 100:.1f} % solved clear within 1 mm '
              f'and 1 deg, {solves["reached_in_collision"]} reached in collision; time '
              f'{solves["mean_ratio"]:.2f}x mean, {solves["median_ratio"]:.2f}x median of '
              f'the collision-free solve ({solves["aware_median_us"]:.0f} vs '
              f'{solves["free_median_us"]:.0f} us median); the collision-free solver '
              f'collides in {solves["free_solver_collision_share"] * 100:.1f} % of its '
              'reached answers')
        gaps = results['robots'][name]['against_coal_meshes']
        print(f'  above coal (meshes)      {gaps["above_truth"]} of {gaps["configurations"]}')
        print(f'  below coal (meshes)      lowest {gaps["lowest_gap_m"] * 1e3:.2f} mm  median '
              f'{gaps["median_gap_m"] * 1e3:.1f} mm  p90 {gaps["p90_gap_m"] * 1e3:.1f} mm')
    results['load_after'] = os.getloadavg()
    print(f'load average before {results["load_before"]}, after {results["load_after"]}')
    out = REPO / 'bench' / 'results' / 'collision_bench.json'
    out.write_text(json.dumps(results, indent=2) + '\n')
    print(f'wrote {out.relative_to(REPO)}')


if __name__ == '__main__':
    main()
