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
Benchmark of the FABRIK solver core on serial arms: a benchmark, not a test.

    python3 bench/ik_bench.py [--targets 1000] [--quick] [--baseline REV]

For config/arm.yaml (the 6-DOF demo arm), config/tentacle.yaml (12 two-axis segments),
urdf/offset_arm.urdf (a UR5-like arm), urdf/rail_arm.urdf (a linear axis) and
urdf/finger.urdf (coupled joints):

- reachable: targets drawn as FK of random in-limit poses (fixed seed), solved from the
  neutral seed: success (FK of the answer within 1 mm), solve time, mean iterations, the
  largest limit violation, and how much of the distance each stage removed;
- tracking: warm-started solves along a smooth closed path of 1000 steps (FK of slow joint
  sinusoids, so every target is reachable): time, success, largest joint jump per step;
- near stretch: reachable targets at the edge of the workspace (the farthest 2 % of many
  random poses), where solvers struggle;
- out of reach: targets 1.2 to 2 reaches away: remaining distance, excess over the bound
  |target - anchor| - reach, and time;
- variants, measured in the same run and given as ratios to the default: the joint-angle fit
  (whole downstream chain vs next point; the default picks by the chain's joints), FABRIK
  alone, the closing step alone;
- speed against the baseline: the same neutral-seed targets and tracking path solved by this
  solver and by --baseline's (a git revision, default main), alternating target by target
  so both see the same machine; ratios, and solves per 16.7 ms frame;
- the hard cases, and a 5 cm copy of each robot.

Then the arms against the reference solvers (arm_references.py: the project's arms and the
published UR5e, Panda arm and iiwa 14; full poses and positions, from neutral, tracking a
smooth and a fast path; fabrik_ros, TRAC-IK and pinocchio). The reference solvers and the
descriptions of the published arms come from bench/requirements.txt (bench-only); without
them their rows are skipped with a note.

Every solve is timed as solve_timing.py says: wall clock around the solve call, once per
target, CPU time beside it (the tables give wall medians, CPU in brackets), solvers taking
turns target by target. Prints markdown tables and writes bench/results/ik_bench.json with
the commit and the command that made it.

To see where a solve's time goes, profile the same solves with bench/ik_profile.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import os
from pathlib import Path
import platform
import re
import subprocess
import sys
import tempfile
import time
import types
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from arm_references import ARMS, arms_report, compare_arm, FAST_STEPS, \
    SMOOTH_STEPS  # noqa: E402
from fabrik_ros.chain import Chain  # noqa: E402
from fabrik_ros.config import chain_from_parameters, load_config  # noqa: E402
from fabrik_ros.ik import IkResult, IkSolver  # noqa: E402
import numpy as np  # noqa: E402
from solve_timing import in_turns, limit_violation, random_poses, SEED, smooth_poses, \
    SUCCESS_M, timed  # noqa: E402

FRAME_US = 1e6 / 60.0   # one 60 Hz frame, microseconds: solves per frame = FRAME_US / median

ROBOTS: dict[str, Callable[[], Chain]] = {
    'arm': lambda: chain_from_parameters(load_config(REPO / 'config' / 'arm.yaml'), REPO),
    'tentacle': lambda: chain_from_parameters(load_config(REPO / 'config' / 'tentacle.yaml'),
                                              REPO),
    'offset_arm': lambda: Chain.from_urdf((REPO / 'urdf' / 'offset_arm.urdf').read_text(),
                                          'base_link', 'tool0'),
    # A prismatic axis: a 4-joint arm on a linear rail, its gripper ignored.
    'rail_arm': lambda: Chain.from_urdf((REPO / 'urdf' / 'rail_arm.urdf').read_text(),
                                        'base_link', 'tool0'),
    # Coupled joints: a finger whose three flexion joints share one tendon.
    'finger': lambda: Chain.from_urdf((REPO / 'urdf' / 'finger.urdf').read_text(), 'palm',
                                      'fingertip'),
}

VARIANTS: dict[str, dict[str, Any]] = {
    'default (auto fit)': {},
    'fit whole chain': {'fit': 'chain'},
    'fit next point': {'fit': 'next'},
    'FABRIK alone': {'fabrik_gain': 0.999999, 'closing_radius': 0.0, 'max_restarts': 0},
    'closing step alone': {'closing_radius': math.inf},
}


def timed_solve(solver: IkSolver, target: Any, seed: np.ndarray | None
                ) -> tuple[IkResult, tuple[float, float]]:
    """Return the solve's result and its (wall, CPU) time in microseconds, one solve."""
    result, wall, cpu = timed(lambda: solver.solve(target, seed))
    return result, (wall, cpu)


def _thread_time_cost() -> float:
    """Return the cost (seconds) of reading the thread CPU clock, to subtract it."""
    return min(-time.thread_time() + time.thread_time() for _ in range(1000))


_THREAD_TIME_COST = _thread_time_cost()


def reference_us(statistic: Callable[[list[float]], float] = min) -> float:
    """
    Return the CPU time (microseconds) of a fixed pure-Python workload, fastest of 200.

    Solve times scale with it: it tells how fast this machine ran Python during the run
    (a shared machine under load runs it slower), so runs can be compared. The fastest
    shows the machine's speed; statistic=median shows its noise too (another virtual
    machine's bursts slow some runs of the workload, as they slow some solves).
    """
    times = []
    for _ in range(200):
        start = time.thread_time()
        sum(i * i for i in range(1000))
        times.append(time.thread_time() - start - _THREAD_TIME_COST)
    return statistic(times) * 1e6


def summary(times: list[tuple[float, float]]) -> dict[str, float]:
    """Return median and 95th percentile of (wall, CPU) solve times, microseconds."""
    wall, cpu = np.array(times).T
    return {'median_us': float(np.median(wall)), 'p95_us': float(np.percentile(wall, 95)),
            'cpu_median_us': float(np.median(cpu)),
            'cpu_p95_us': float(np.percentile(cpu, 95))}


def solve_targets(chain: Chain, solvers: dict[str, IkSolver], targets: np.ndarray,
                  seeds: list[np.ndarray | None]) -> dict[str, dict[str, Any]]:
    """
    Solve each target from its seed; per solver, success, time, iteration and stage figures.

    The solvers take turns target by target (in_turns), so their ratios hold.
    """
    records = {name: ([], [], [], [], [], [], [], []) for name in solvers}
    for (target, seed), name in in_turns(solvers, zip(targets, seeds)):
        times, errors, violations, iterations, fabrik, closing, restarts, fabrik_share = \
            records[name]
        result, micros = timed_solve(solvers[name], target, seed)
        times.append(micros)
        errors.append(float(np.linalg.norm(chain.tip_position(result.q) - target)))
        violations.append(limit_violation(chain, result.q))
        iterations.append(result.iterations)
        fabrik.append(result.fabrik_iterations)
        closing.append(result.closing_steps)
        restarts.append(result.restarts)
        if result.initial_error > 0.0:
            fabrik_share.append(1.0 - result.fabrik_error / result.initial_error)
    figures = {}
    for name, (times, errors, violations, iterations, fabrik, closing, restarts,
               fabrik_share) in records.items():
        errors = np.array(errors)
        figures[name] = {
            'targets': len(targets),
            'success_rate': float(np.mean(errors <= SUCCESS_M)),
            'within_tolerance_rate': float(np.mean(errors <= solvers[name].tolerance)),
            **summary(times),
            'mean_iterations': float(np.mean(iterations)),
            'mean_fabrik_iterations': float(np.mean(fabrik)),
            'mean_closing_steps': float(np.mean(closing)),
            'restart_rate': float(np.mean(np.array(restarts) > 0)),
            'median_share_of_distance_removed_by_fabrik': float(np.median(fabrik_share))
            if fabrik_share else math.nan,
            'max_limit_violation_rad': float(max(violations)),
            'max_error_m': float(errors.max()),
        }
    return figures


def reachable(chain: Chain, targets: int, rng: np.random.Generator) -> dict[str, Any]:
    """Solve FK-of-random-pose targets from the neutral seed."""
    poses = random_poses(chain, targets, rng)
    points = np.array([chain.tip_position(q) for q in poses])
    return solve_targets(chain, {'': IkSolver(chain)}, points, [None] * len(points))['']


def smooth_path(chain: Chain, steps: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """
    Return a smooth closed path: (steps, 3) targets, FK of slow sinusoids, and its start pose.

    Each joint swings around a random mid-range angle by 1/8 of its range, so every target
    is reachable and consecutive targets are close, like a user dragging a target around.
    """
    poses = smooth_poses(chain, steps, rng)
    return np.array([chain.tip_position(q) for q in poses]), poses[0]


def tracking(chain: Chain, steps: int, rng: np.random.Generator) -> dict[str, Any]:
    """Track a smooth reachable path from its start pose, seeding with the previous answer."""
    solver = IkSolver(chain)
    path, q = smooth_path(chain, steps, rng)
    times, errors, jumps = [], [], []
    for target in path[1:]:
        result, micros = timed_solve(solver, target, q)
        times.append(micros)
        errors.append(float(np.linalg.norm(chain.tip_position(result.q) - target)))
        jumps.append(float(np.max(np.abs(result.q - q))))
        q = result.q
    return {
        'steps': steps - 1,
        'mean_step_mm': float(np.mean(np.linalg.norm(np.diff(path, axis=0), axis=1)) * 1e3),
        'success_rate': float(np.mean(np.array(errors) <= SUCCESS_M)),
        **summary(times),
        'largest_joint_jump_rad': float(max(jumps)),
    }


def near_stretch(chain: Chain, targets: int, rng: np.random.Generator) -> dict[str, Any]:
    """Solve reachable targets at the outer edge of the workspace, from the neutral seed."""
    solver = IkSolver(chain)
    effector = solver._tree.effectors[0]
    anchor = _anchor(chain)
    poses = random_poses(chain, targets * 50, rng)
    points = np.array([chain.tip_position(q) for q in poses])
    distance = np.linalg.norm(points - anchor, axis=1)
    farthest = np.argsort(distance)[-targets:]
    result = solve_targets(chain, {'': solver}, points[farthest], [None] * targets)['']
    result['distance_over_reach'] = [float(distance[farthest].min() / effector.reach),
                                     float(distance[farthest].max() / effector.reach)]
    return result


def _anchor(chain: Chain) -> np.ndarray:
    """Return the fixed point the reach is measured from (the first joint's origin)."""
    return chain.joint_positions(chain.neutral())[0]


def out_of_reach(chain: Chain, targets: int, rng: np.random.Generator) -> dict[str, Any]:
    """Solve targets 1.2 to 2 reaches away: how close the chain gets, and how fast."""
    solver = IkSolver(chain)
    reach = solver._tree.effectors[0].reach
    anchor = _anchor(chain)
    directions = rng.normal(size=(targets, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    points = anchor + directions * reach * rng.uniform(1.2, 2.0, size=(targets, 1))
    times, remaining, excess, violations = [], [], [], []
    for target in points:
        result, micros = timed_solve(solver, target, None)
        times.append(micros)
        error = float(np.linalg.norm(chain.tip_position(result.q) - target))
        remaining.append(error)
        excess.append(error - (np.linalg.norm(target - anchor) - reach))
        violations.append(limit_violation(chain, result.q))
    return {
        'targets': targets,
        **summary(times),
        'mean_remaining_m': float(np.mean(remaining)),
        'mean_excess_over_straight_m': float(np.mean(excess)),
        'max_limit_violation_rad': float(max(violations)),
    }


def variants(chain: Chain, targets: int, rng: np.random.Generator) -> dict[str, Any]:
    """Solve one target set with each variant, taking turns; ratios are to the default's."""
    poses = random_poses(chain, targets, rng)
    points = np.array([chain.tip_position(q) for q in poses])
    figures = solve_targets(chain, {name: IkSolver(chain, **options)
                                    for name, options in VARIANTS.items()},
                            points, [None] * targets)
    base = figures['default (auto fit)']
    for entry in figures.values():
        entry['median_time_ratio'] = entry['median_us'] / base['median_us']
        entry['p95_time_ratio'] = entry['p95_us'] / base['p95_us']
    return figures


def speed(chain: Chain, count: int, steps: int, baseline: type | None) -> dict[str, Any]:
    """
    Time this solver and the baseline's on the same targets, alternating target by target.

    From the neutral seed: FK of `count` random poses; tracking: a smooth path of `steps`
    (seeded with each solver's own previous answer). Returns per solver ('now', 'baseline')
    and stage the success rate, median / p95 wall µs and solves per 60 Hz frame, and the
    time ratios now / baseline.
    """
    rng = np.random.default_rng(SEED + 11)
    poses = random_poses(chain, count, rng)
    path, start = smooth_path(chain, steps, rng)
    solvers = {'now': IkSolver(chain)}
    if baseline is not None:
        solvers['baseline'] = baseline(chain)
    times = {name: {'from_neutral': [], 'tracking': []} for name in solvers}
    errors = {name: {'from_neutral': [], 'tracking': []} for name in solvers}
    for pose, name in in_turns(solvers, poses):
        target = chain.tip_position(pose)
        result, (micros, _) = timed_solve(solvers[name], target, None)
        times[name]['from_neutral'].append(micros)
        errors[name]['from_neutral'].append(tip_distance(chain, result.q, target))
    seeds = {name: start for name in solvers}
    for target, name in in_turns(solvers, path[1:]):
        result, (micros, _) = timed_solve(solvers[name], target, seeds[name])
        times[name]['tracking'].append(micros)
        errors[name]['tracking'].append(tip_distance(chain, result.q, target))
        seeds[name] = result.q
    figures: dict[str, Any] = {}
    for name in solvers:
        figures[name] = {}
        for stage, stage_times in times[name].items():
            median = float(np.median(stage_times))
            figures[name][stage] = {
                'success_rate': float(np.mean(np.array(errors[name][stage]) <= SUCCESS_M)),
                'median_us': median, 'p95_us': float(np.percentile(stage_times, 95)),
                'solves_per_frame': FRAME_US / median}
    if baseline is not None:
        figures['ratio_now_to_baseline'] = {
            stage: {stat: figures['now'][stage][stat] / figures['baseline'][stage][stat]
                    for stat in ('median_us', 'p95_us')}
            for stage in ('from_neutral', 'tracking')}
    return figures


def tip_distance(chain: Chain, q: np.ndarray, target: np.ndarray) -> float:
    """Return the distance (metres) from FK(q)'s tip to the target."""
    return float(np.linalg.norm(chain.tip_position(q) - target))


def baseline_solver(ref: str) -> type:
    """
    Return IkSolver as of git revision `ref` (the solver before a change), same process.

    The revision's solver is the package fabrik_ros/ik/ (relative imports inside), loaded
    from a copy under a name of its own, or the single file fabrik_ros/ik.py, run with that
    revision's fabrik_ros/wrist.py standing in for the module of that name.
    """
    def show(path: str) -> str:
        return subprocess.run(['git', '-C', str(REPO), 'show', f'{ref}:{path}'], check=True,
                              capture_output=True, text=True).stdout
    name = 'baseline_ik_' + re.sub(r'\W', '_', ref)
    files = subprocess.run(['git', '-C', str(REPO), 'ls-tree', '-r', '--name-only', ref,
                            'fabrik_ros/ik', 'fabrik_ros/ik.py', 'fabrik_ros/wrist.py'],
                           check=True, capture_output=True, text=True).stdout.split()
    if 'fabrik_ros/ik.py' not in files:
        package = Path(tempfile.mkdtemp(prefix=f'{name}_')) / name
        package.mkdir()
        for path in files:
            (package / Path(path).name).write_text(show(path))
        spec = importlib.util.spec_from_file_location(
            name, package / '__init__.py', submodule_search_locations=[str(package)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module.IkSolver
    module = types.ModuleType(name)
    sys.modules[module.__name__] = module   # dataclasses look their module up
    saved = sys.modules.get('fabrik_ros.wrist')
    if 'fabrik_ros/wrist.py' in files:
        wrist = types.ModuleType(f'{name}_wrist')
        sys.modules[wrist.__name__] = wrist
        source = show('fabrik_ros/wrist.py')
        exec(compile(source, f'{ref}:fabrik_ros/wrist.py', 'exec'), wrist.__dict__)  # noqa: S102
        sys.modules['fabrik_ros.wrist'] = wrist
    try:
        exec(compile(show('fabrik_ros/ik.py'), f'{ref}:fabrik_ros/ik.py', 'exec'),  # noqa: S102
             module.__dict__)
    finally:
        if saved is None:
            sys.modules.pop('fabrik_ros.wrist', None)
        else:
            sys.modules['fabrik_ros.wrist'] = saved
    return module.IkSolver


def in_reach_sphere(chain: Chain, count: int, rng: np.random.Generator) -> np.ndarray:
    """Return points uniform in the ball of the reach around the first joint: 'click anywhere'."""
    reach = IkSolver(chain)._tree.effectors[0].reach
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return _anchor(chain) + directions * reach * rng.uniform(0.0, 1.0, (count, 1)) ** (1 / 3)


def hard_cases(chain: Chain, count: int, rng: np.random.Generator,
               baseline: type | None) -> dict[str, Any]:
    """
    Targets that cannot be solved exactly now and with the baseline solver.

    Uniform points in the reach sphere (split into reached and not by the current solver),
    far targets (1.2 to 2 reaches), each solved from the neutral seed: time median / p95 /
    max and mean remaining distance; the baseline solves the same targets in the same run,
    the two taking turns target by target (in_turns).
    """
    solvers = {'now': IkSolver(chain)}
    if baseline is not None:
        solvers['before'] = baseline(chain)
    points = in_reach_sphere(chain, count, rng)
    reach = solvers['now']._tree.effectors[0].reach
    directions = rng.normal(size=(count // 4, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    far = _anchor(chain) + directions * reach * rng.uniform(1.2, 2.0, (count // 4, 1))
    figures: dict[str, Any] = {name: {'sphere': [], 'far': []} for name in solvers}
    # Far targets spread evenly among the sphere points: the far / reachable ratios compare
    # times taken in the same spells of a shared machine.
    mixed = sorted([(i / len(points), 'sphere', target) for i, target in enumerate(points)]
                   + [((i + 0.5) / len(far), 'far', target) for i, target in enumerate(far)],
                   key=lambda entry: entry[0])
    for (_, case, target), name in in_turns(solvers, mixed):
        figures[name][case].append(timed_solve(solvers[name], target, None))
    reached = np.array([result.reached for result, _ in figures['now']['sphere']])
    out: dict[str, Any] = {'sphere_points': count, 'reachable_share': float(reached.mean())}
    for name, runs in figures.items():
        for case, mask in (('reachable', reached), ('unreachable', ~reached),
                           ('far', np.ones(len(far), bool))):
            chosen = [run for run, keep in zip(runs['far' if case == 'far' else 'sphere'],
                                               mask) if keep]
            if not chosen:
                continue
            wall = np.array([micros[0] for _, micros in chosen])
            out[f'{name}_{case}'] = {
                'median_us': float(np.median(wall)), 'p95_us': float(np.percentile(wall, 95)),
                'max_us': float(wall.max()),
                'mean_remaining_m': float(np.mean([r.error for r, _ in chosen])),
                'mean_restarts': float(np.mean([r.restarts for r, _ in chosen]))}
    return out


def scaled(chain: Chain, factor: float) -> Chain:
    """Return the chain with every length multiplied by factor: offsets and slides' travel."""
    travel = {'prismatic': factor}  # a hinge's limits are angles: they stay
    joints = [dataclasses.replace(j, origin_xyz=j.origin_xyz * factor,
                                  lower=j.lower * travel.get(j.kind, 1.0),
                                  upper=j.upper * travel.get(j.kind, 1.0))
              for j in chain.joints]
    effectors = [dataclasses.replace(e, offset=e.offset * factor) for e in chain.effectors]
    return Chain(chain.base_link, joints, effectors)


def small_robot(chain: Chain, count: int, rng: np.random.Generator,
                baseline: type | None) -> dict[str, Any]:
    """Solve reachable targets on the chain scaled to a 5 cm reach, cold and from a near seed."""
    reach = IkSolver(chain)._tree.effectors[0].reach
    small = scaled(chain, 0.05 / reach)
    poses = random_poses(small, count, rng)
    seeds = np.clip(poses + rng.normal(0.0, 0.05, poses.shape), small.lower, small.upper)
    out = {}
    for name, solver_class in (('now', IkSolver), ('before', baseline)):
        if solver_class is None:
            continue
        solver = solver_class(small)
        errors = [solver.solve(small.tip_position(q), seed).error
                  for q, seed in zip(poses, seeds) for seed in (None, seed)]
        out[name] = {'solves': len(errors),
                     'within_tolerance_rate': float(np.mean(np.array(errors) <= 1e-4)),
                     'max_error_m': float(max(errors))}
    return out


def table(rows: list[list[str]], header: list[str]) -> str:
    """Return a markdown table."""
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the tables and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--targets', type=int, default=1000)
    parser.add_argument('--quick', action='store_true', help='100 targets, short paths')
    parser.add_argument('--baseline', default='main', help='git revision whose solver the '
                        "hard cases and the speed are compared with in the same run ('' for "
                        'none)')
    parser.add_argument('--hard-only', action='store_true',
                        help='only the hard cases: holes, far targets, small robots')
    parser.add_argument('--arms-only', action='store_true',
                        help='only the arms against the reference solvers')
    args = parser.parse_args(argv)
    baseline = baseline_solver(args.baseline) if args.baseline else None
    count = 100 if args.quick else args.targets
    small = max(count // 5, 20)
    results: dict[str, Any] = {
        'commit': _commit(),
        'command': ' '.join(['python3', 'bench/ik_bench.py', *sys.argv[1:]]),
        'machine': {'python': platform.python_version(), 'numpy': np.__version__,
                    'processor': platform.processor() or platform.machine(),
                    'reference_us_before': reference_us(),
                    'load_average_before': os.getloadavg()},
        'settings': {'success_m': SUCCESS_M, 'tolerance_m': IkSolver.__init__.__defaults__[0],
                     'timing': 'wall clock around the solve call, one solve per target; CPU '
                               'time of the process beside it', 'seed': SEED},
        'robots': {},
    }
    if not args.hard_only:
        results['arms'] = {}
        for name in ARMS:
            print(f'{name} against the reference solvers ...', file=sys.stderr)
            noise, load = reference_us(statistic=np.median), os.getloadavg()[0]
            results['arms'][name] = compare_arm(name, count,
                                                201 if args.quick else SMOOTH_STEPS,
                                                200 if args.quick else FAST_STEPS)
            # How busy the machine was: TRAC-IK's two threads wait for a free core.
            results['arms'][name]['reference_median_us'] = [
                noise, reference_us(statistic=np.median)]
            results['arms'][name]['load_average'] = [load, os.getloadavg()[0]]
    for name, build in ({} if args.arms_only else ROBOTS).items():
        chain = build()
        rng = np.random.default_rng(SEED)
        print(f'{name}: {chain.dof} joints ...', file=sys.stderr)
        noise = reference_us(statistic=np.median)
        if args.hard_only:
            results['robots'][name] = {'dof': chain.dof}
        else:
            results['robots'][name] = {
                'dof': chain.dof,
                'reachable': reachable(chain, count, rng),
                'tracking': tracking(chain, 1001, rng),
                'near_stretch': near_stretch(chain, small, rng),
                'out_of_reach': out_of_reach(chain, small, rng),
                'variants': variants(chain, small, rng),
                'speed': speed(chain, count, 1001, baseline),
            }
        results['robots'][name]['hard_cases'] = hard_cases(chain, count, rng, baseline)
        results['robots'][name]['small_robot'] = small_robot(chain, small, rng, baseline)
        results['robots'][name]['reference_median_us'] = [
            noise, reference_us(statistic=np.median)]   # before and after its section
    results['machine']['reference_us_after'] = reference_us()
    results['machine']['load_average_after'] = os.getloadavg()
    if args.arms_only:
        tables = arms_report(results['arms'], table)
    else:
        tables = hard_report(results)
        if not args.hard_only:
            tables = report(results) + '\n\n' + tables
    publish(results, tables, 'ik_hard_bench.json' if args.hard_only else 'ik_bench.json')


def _commit() -> str:
    """
    Return the commit the benchmark runs on, '+changes' after it if the code differs.

    bench/results is left out: benchmarks run one after another rewrite it.
    """
    def git(*words: str) -> str:
        return subprocess.run(['git', '-C', str(REPO), *words], capture_output=True,
                              text=True).stdout.strip()
    changed = git('status', '--porcelain', '--', '.', ':(exclude)bench/results')
    return git('rev-parse', 'HEAD') + ('+changes' if changed else '')


def publish(results: dict[str, Any], tables: str, file_name: str) -> None:
    """Print the tables and write the results as bench/results/<file_name>."""
    print(tables)
    out = REPO / 'bench' / 'results' / file_name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + '\n')
    print(f'\nwrote {out.relative_to(REPO)}')


def report(results: dict[str, Any]) -> str:
    """Return the markdown tables of a results dict."""
    robots = results['robots']
    rows = []
    for name, r in robots.items():
        reach, track, edge, far = (r['reachable'], r['tracking'], r['near_stretch'],
                                   r['out_of_reach'])
        rows.append([
            f"{name} ({r['dof']})", f"{reach['success_rate']:.1%}",
            f"{reach['median_us']:.0f} / {reach['p95_us']:.0f}",
            f"{reach['mean_iterations']:.1f} ({reach['mean_fabrik_iterations']:.1f} + "
            f"{reach['mean_closing_steps']:.1f})",
            f"{reach['median_share_of_distance_removed_by_fabrik']:.1%}",
            f"{reach['restart_rate']:.1%}", f"{reach['max_limit_violation_rad']:.0e}",
            f"{track['success_rate']:.1%}, {track['median_us']:.0f} / {track['p95_us']:.0f}"
            f", {track['largest_joint_jump_rad']:.3f}",
            f"{edge['success_rate']:.1%}, {edge['median_us']:.0f}",
            f"{far['mean_excess_over_straight_m'] * 1e3:.2f} mm, {far['median_us']:.0f}",
        ])
    text = table(rows, [
        'robot (DOF)', 'success ≤1 mm', 'wall median / p95 µs', 'iterations (FABRIK + closing)',
        'distance removed by FABRIK', 'restarted', 'max limit violation rad',
        'tracking: success, median / p95 µs, max jump rad', 'near stretch: success, median µs',
        'out of reach: excess over straight, median µs'])
    text += ('\n\nTimes are wall clock around the solve call, one solve per target; the CPU '
             'time of the same calls is in the JSON.')
    variant_rows = []
    for name, r in robots.items():
        for variant, v in r['variants'].items():
            variant_rows.append([
                name, variant, f"{v['success_rate']:.1%}", f"{v['median_us']:.0f}",
                f"{v['median_time_ratio']:.2f}", f"{v['p95_time_ratio']:.2f}",
                f"{v['mean_fabrik_iterations']:.1f} + {v['mean_closing_steps']:.1f}"])
    machine = results['machine']
    medians = [value for r in robots.values() for value in r['reference_median_us']]
    text += (f"\n\nReference Python workload: {machine['reference_us_before']:.1f} µs before, "
             f"{machine['reference_us_after']:.1f} µs after the run (solve times scale with "
             "it; compare runs by it). Its median, before and after each robot's section: "
             f'{min(medians):.1f}-{max(medians):.1f} µs (far above the fastest: a noisy '
             'machine, whose bursts slow some solves too).')
    text += '\n\nVariants (same targets, same run; time ratios to the default):\n\n'
    text += table(variant_rows, ['robot', 'variant', 'success ≤1 mm', 'median µs',
                                 'median ratio', 'p95 ratio', 'FABRIK + closing'])
    text += '\n\n' + arms_report(results['arms'], table)
    return text + '\n\n' + speed_report(results)


def speed_report(results: dict[str, Any]) -> str:
    """Return the table of this solver's speed against the baseline's, same targets and run."""
    rows = []
    for name, r in results['robots'].items():
        for stage, label in (('from_neutral', 'from neutral'), ('tracking', 'tracking')):
            cells = [name, label]
            for solver in ('now', 'baseline'):
                f = r['speed'].get(solver, {}).get(stage)
                cells.append(f"{f['success_rate']:.1%}, {f['median_us']:.0f} / "
                             f"{f['p95_us']:.0f}, {f['solves_per_frame']:.0f}" if f else '')
            ratio = r['speed'].get('ratio_now_to_baseline', {}).get(stage)
            cells.append(f"{ratio['median_us']:.2f} / {ratio['p95_us']:.2f}" if ratio else '')
            rows.append(cells)
    return ('Speed against the baseline (same targets, alternating target by target):\n\n'
            + table(rows, ['robot', 'stage', 'now: success, wall median / p95 µs, per 60 Hz frame',
                           'baseline: the same', 'time ratio now / baseline (median / p95)']))


def hard_report(results: dict[str, Any]) -> str:
    """Return the markdown table of the hard cases, now and before, same run."""
    rows = []
    for name, r in results['robots'].items():
        hard = r['hard_cases']
        for who in ('now', 'before'):
            if f'{who}_unreachable' not in hard:
                continue
            base, hole, far = (hard[f'{who}_reachable'], hard[f'{who}_unreachable'],
                               hard[f'{who}_far'])
            small = r['small_robot'].get(who, {})
            rows.append([
                f"{name} ({r['dof']})", who, f"{hard['reachable_share']:.0%}",
                f"{base['median_us']:.0f}",
                f"{hole['median_us']:.0f} / {hole['p95_us']:.0f} / {hole['max_us']:.0f}",
                f"{hole['median_us'] / base['median_us']:.1f}x",
                f"{hole['mean_remaining_m'] * 1e3:.3f}", f"{hole['mean_restarts']:.1f}",
                f"{far['median_us']:.0f} ({far['median_us'] / base['median_us']:.1f}x)",
                f"{far['mean_remaining_m'] * 1e3:.3f}",
                f"{small.get('within_tolerance_rate', math.nan):.2%}"])
    return table(rows, [
        'robot (DOF)', 'solver', 'sphere points reachable', 'reachable median µs',
        'unreachable median / p95 / max µs', 'unreachable / reachable median',
        'unreachable mean remaining mm', 'restarts', 'far median µs', 'far mean remaining mm',
        '5 cm robot within tolerance'])


if __name__ == '__main__':
    main()
