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
Benchmark of the FABRIK solver on trees: a benchmark, not a test.

    python3 bench/tree_bench.py [--targets 300]

For config/dual_arm.yaml (two arms on a torso) and config/spider.yaml (six legs):

- simultaneous reachable targets: every effector gets a target, drawn together as FK of a
  random in-limit pose (fixed seed), solved from the neutral seed: success (all effectors
  within 1 mm by FK), median / p95 time, iterations, largest limit violation; pinned root,
  and for the spider also a free root;
- one effector moving while the others hold: success and the largest drift of the held ones;
- conflicting targets out of reach together (each effector's target pushed 2 reaches out
  along its own outward direction): the best compromise, every effector's remaining
  distance and the time;
- tracking: warm-started solves along smooth closed paths (FK of slow joint sinusoids, so
  every target is reachable), every effector's target changed together per step or one
  effector's per solve (targets in their own messages): success, time per solve, the
  largest joint jump between solves and how many solves jump more than 0.2 rad (a flip);
- the hard cases, now and with the solver of git revision --baseline in the same
  run: the spider with one leg sent 2 reaches out and the other feet at reachable targets
  (the other feet's errors), the dual arm with one tool sent 2 m away while the other holds
  (the held tool's drift), and the spider's free body under feet targets shifted 0.2 to
  0.5 m sideways (time, success, how far the body travelled against the shift).

Prints markdown tables and writes bench/results/tree_bench.json. Timing as in ik_bench.py.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fabrik_ros.chain import Chain  # noqa: E402
from fabrik_ros.config import chain_from_parameters, load_config  # noqa: E402
from fabrik_ros.ik import IkSolver  # noqa: E402
from ik_bench import baseline_solver, limit_violation, publish, random_poses, REPO, SEED, \
    SUCCESS_M, summary, table, timed_solve  # noqa: E402
import numpy as np  # noqa: E402

ROBOTS = ('dual_arm', 'spider')


def simultaneous(chain: Chain, solver: IkSolver, targets: int,
                 rng: np.random.Generator) -> dict[str, Any]:
    """Solve all-effector targets drawn as FK of random poses, from the neutral seed."""
    times, worst, iterations, violations = [], [], [], []
    for pose in random_poses(chain, targets, rng):
        goal = chain.effector_positions(pose)
        result, micros = timed_solve(solver, goal, None)
        times.append(micros)
        reached = chain.effector_positions(result.q) + result.base_position
        worst.append(float(np.max(np.linalg.norm(reached - goal, axis=1))))
        iterations.append(result.iterations)
        violations.append(limit_violation(chain, result.q))
    return {
        'targets': targets,
        'success_rate_all_effectors': float(np.mean(np.array(worst) <= SUCCESS_M)),
        **summary(times),
        'mean_iterations': float(np.mean(iterations)),
        'max_limit_violation_rad': float(max(violations)),
    }


def one_moves_others_hold(chain: Chain, targets: int,
                          rng: np.random.Generator) -> dict[str, Any]:
    """Move one random effector to a reachable target; the others must hold their pose."""
    solver = IkSolver(chain)
    successes, drifts, times = [], [], []
    for seed in random_poses(chain, targets, rng):
        mover = int(rng.integers(len(chain.effectors)))
        # Change only joints that move no other effector: the targets are jointly reachable.
        free = ~np.any(np.delete(chain.moves_effector, mover, axis=0), axis=0)
        pose = np.where(free, random_poses(chain, 1, rng)[0], seed)
        goal = np.full((len(chain.effectors), 3), np.nan)
        goal[mover] = chain.effector_positions(pose)[mover]
        result, micros = timed_solve(solver, goal, seed)
        times.append(micros)
        moved = chain.effector_positions(result.q)
        successes.append(np.linalg.norm(moved[mover] - goal[mover]) <= SUCCESS_M)
        start = chain.effector_positions(seed)
        drifts.append(float(np.max(np.linalg.norm(np.delete(moved - start, mover, axis=0),
                                                  axis=1))))
    return {'targets': targets, 'success_rate': float(np.mean(successes)),
            **summary(times), 'largest_drift_of_held_m': float(max(drifts))}


def conflicting(chain: Chain, targets: int, rng: np.random.Generator) -> dict[str, Any]:
    """Push every effector's target 2 reaches out along its own outward direction."""
    solver = IkSolver(chain)
    reach = max(effector.reach for effector in solver._tree.effectors)
    times, remaining = [], []
    for pose in random_poses(chain, targets, rng):
        positions = chain.effector_positions(pose)
        outward = positions - positions.mean(axis=0)
        outward /= np.linalg.norm(outward, axis=1, keepdims=True)
        result, micros = timed_solve(solver, positions + 2.0 * reach * outward, None)
        times.append(micros)
        remaining.append(result.errors.tolist())
    remaining = np.array(remaining)
    return {'targets': targets, **summary(times),
            'mean_remaining_m_per_effector': dict(zip(chain.effector_names,
                                                      remaining.mean(axis=0).tolist())),
            'all_finite': bool(np.all(np.isfinite(remaining)))}


JUMP_RAD = 0.2  # a joint moving more than this in one tracking solve has flipped branches


def tracking(chain: Chain, paths: int, steps: int, rng: np.random.Generator
             ) -> dict[str, Any]:
    """Follow smooth reachable paths, warm-started; all targets at once, and in turn."""
    lower, upper = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    angle = np.linspace(0.0, 2.0 * np.pi, steps)[:, np.newaxis]
    results = {}
    for mode in ('together', 'in_turn'):
        solver = IkSolver(chain)
        times, errors, jumps = [], [], []
        for _ in range(paths):
            middle = lower + (upper - lower) * rng.uniform(0.3, 0.7, chain.dof)
            poses = middle + (upper - lower) / 8.0 * np.sin(
                rng.integers(1, 3, chain.dof) * angle + rng.uniform(0.0, 2 * np.pi, chain.dof))
            path = np.array([chain.effector_positions(pose) for pose in poses])
            q, targets = poses[0], path[0].copy()
            for points in path[1:]:
                for changed in ([slice(None)] if mode == 'together'
                                else range(len(points))):
                    targets[changed] = points[changed]
                    result, micros = timed_solve(solver, targets, q)
                    times.append(micros)
                    errors.append(float(np.max(np.linalg.norm(
                        chain.effector_positions(result.q) - targets, axis=1))))
                    jumps.append(float(np.max(np.abs(result.q - q))))
                    q = result.q
        results[mode] = {
            'paths': paths, 'solves': len(times),
            'success_rate': float(np.mean(np.array(errors) <= SUCCESS_M)),
            **summary(times),
            'largest_joint_jump_rad': float(max(jumps)),
            'jumps_over_0.2_rad': int(np.sum(np.array(jumps) > JUMP_RAD)),
        }
    return results


def one_leg_far(chain: Chain, solver: IkSolver, targets: int, rng: np.random.Generator
                ) -> dict[str, Any]:
    """Send one random leg 2 reaches out; the other feet get FK targets of a random pose."""
    reach = max(effector.reach for effector in IkSolver(chain)._tree.effectors)
    times, others = [], []
    for pose in random_poses(chain, targets, rng):
        goal = chain.effector_positions(pose)
        leg = int(rng.integers(len(goal)))
        goal[leg] *= 1.0 + 2.0 * reach / np.linalg.norm(goal[leg])
        result, micros = timed_solve(solver, goal, None)
        times.append(micros)
        others.append(float(np.max(np.delete(result.errors, leg))))
    others = np.array(others)
    return {'targets': targets, **summary(times),
            'others_within_tolerance_rate': float(np.mean(others <= 1e-4)),
            'others_median_error_m': float(np.median(others)),
            'others_max_error_m': float(others.max())}


def held_against_far(chain: Chain, solver: IkSolver, targets: int, rng: np.random.Generator
                     ) -> dict[str, Any]:
    """Send the first tool 2 m away in a random direction; the second holds its pose."""
    times, drifts = [], []
    for seed in random_poses(chain, targets, rng):
        start = chain.effector_positions(seed)
        direction = rng.normal(size=3)
        goal = np.full_like(start, np.nan)
        goal[0] = start[0] + 2.0 * direction / np.linalg.norm(direction)
        result, micros = timed_solve(solver, goal, seed)
        times.append(micros)
        drifts.append(float(np.linalg.norm(chain.effector_positions(result.q)[1] - start[1])))
    return {'targets': targets, **summary(times),
            'held_median_drift_m': float(np.median(drifts)),
            'held_max_drift_m': float(max(drifts))}


def free_body(chain: Chain, solver: IkSolver, targets: int, rng: np.random.Generator
              ) -> dict[str, Any]:
    """Shift every foot's target 0.2 to 0.5 m sideways: the free body follows its feet."""
    times, worst, travel = [], [], []
    for pose in random_poses(chain, targets, rng):
        heading = rng.uniform(0.0, 2.0 * np.pi)
        shift = rng.uniform(0.2, 0.5) * np.array([np.cos(heading), np.sin(heading), 0.0])
        result, micros = timed_solve(solver, chain.effector_positions(pose) + shift, None)
        times.append(micros)
        worst.append(result.error)
        travel.append(float(result.base_position @ shift / (shift @ shift)))
    return {'targets': targets, **summary(times),
            'success_rate_all_effectors': float(np.mean(np.array(worst) <= SUCCESS_M)),
            'median_body_travel_over_shift': float(np.median(travel))}


HARD_CASES = {'spider': {'one_leg_far': (one_leg_far, {}),
                         'free_body': (free_body, {'root': 'free'})},
              'dual_arm': {'held_against_far': (held_against_far, {})}}


def hard_cases(name: str, chain: Chain, count: int, baseline: type | None) -> dict[str, Any]:
    """Run the robot's hard cases with the current solver and the baseline, same targets."""
    out: dict[str, Any] = {}
    for case, (run, options) in HARD_CASES[name].items():
        for who, solver_class in (('now', IkSolver), ('before', baseline)):
            if solver_class is not None:
                out[f'{who}_{case}'] = run(chain, solver_class(chain, **options), count,
                                           np.random.default_rng(SEED))
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the tables and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--targets', type=int, default=300)
    parser.add_argument('--baseline', default='main', help='git revision whose solver the '
                        "hard cases are compared with in the same run ('' for none)")
    parser.add_argument('--hard-only', action='store_true',
                        help='only the hard cases, written to tree_hard_bench.json')
    args = parser.parse_args(argv)
    count = args.targets
    baseline = baseline_solver(args.baseline) if args.baseline else None
    results: dict[str, Any] = {'settings': {'success_m': SUCCESS_M, 'seed': SEED},
                               'robots': {}}
    for name in ROBOTS:
        chain = chain_from_parameters(load_config(REPO / 'config' / f'{name}.yaml'), REPO)
        rng = np.random.default_rng(SEED)
        print(f'{name}: {chain.dof} joints, {len(chain.effectors)} effectors ...',
              file=sys.stderr)
        entry: dict[str, Any] = {'dof': chain.dof, 'effectors': len(chain.effectors)}
        if not args.hard_only:
            entry.update({
                'simultaneous': simultaneous(chain, IkSolver(chain), count, rng),
                'one_moves_others_hold': one_moves_others_hold(chain, count // 3, rng),
                'conflicting_out_of_reach': conflicting(chain, count // 3, rng),
                'tracking': tracking(chain, 5, 201, rng),
            })
            if name == 'spider':
                entry['simultaneous_free_root'] = simultaneous(
                    chain, IkSolver(chain, root='free'), count, rng)
        entry['hard_cases'] = hard_cases(name, chain, count // 3, baseline)
        results['robots'][name] = entry
    tables = hard_report(results)
    if not args.hard_only:
        tables = report(results) + '\n\n' + tables
    publish(results, tables, 'tree_hard_bench.json' if args.hard_only else 'tree_bench.json')


def hard_report(results: dict[str, Any]) -> str:
    """Return the markdown table of the hard cases, now and before, same run."""
    rows = []
    for name, r in results['robots'].items():
        hard = r['hard_cases']
        for key, h in hard.items():
            who, case = key.split('_', 1)
            if case == 'one_leg_far':
                outcome = (f"others within 0.1 mm: {h['others_within_tolerance_rate']:.0%}, "
                           f"median / max error {h['others_median_error_m'] * 1e3:.3f} / "
                           f"{h['others_max_error_m'] * 1e3:.1f} mm")
            elif case == 'held_against_far':
                outcome = (f"held tool drift median / max {h['held_median_drift_m'] * 1e3:.2f}"
                           f" / {h['held_max_drift_m'] * 1e3:.1f} mm")
            else:
                outcome = (f"all feet within 1 mm: {h['success_rate_all_effectors']:.0%}, body "
                           f"travel / shift (median) {h['median_body_travel_over_shift']:.2f}")
            rows.append([name, case.replace('_', ' '), who, str(h['targets']),
                         f"{h['median_us']:.0f} / {h['p95_us']:.0f}", outcome])
    return table(rows, ['robot', 'hard case', 'solver', 'solves', 'median / p95 µs',
                        'outcome'])


def report(results: dict[str, Any]) -> str:
    """Return the markdown tables of a results dict."""
    rows = []
    for name, r in results['robots'].items():
        for case in ('simultaneous', 'simultaneous_free_root'):
            if case in r:
                s = r[case]
                rows.append([f"{name} ({r['dof']} joints, {r['effectors']} tips)",
                             case.replace('_', ' '), f"{s['success_rate_all_effectors']:.1%}",
                             f"{s['median_us']:.0f} / {s['p95_us']:.0f}",
                             f"{s['mean_iterations']:.1f}",
                             f"{s['max_limit_violation_rad']:.0e}"])
    text = table(rows, ['robot', 'case', 'all within 1 mm', 'median / p95 µs',
                        'iterations', 'max limit violation rad'])
    rows = []
    for name, r in results['robots'].items():
        hold, far = r['one_moves_others_hold'], r['conflicting_out_of_reach']
        remaining = ', '.join(f'{d * 1e3:.0f}'
                              for d in far['mean_remaining_m_per_effector'].values())
        rows.append([name, f"{hold['success_rate']:.1%}",
                     f"{hold['largest_drift_of_held_m'] * 1e6:.1f} µm",
                     f"{hold['median_us']:.0f}", remaining, f"{far['median_us']:.0f}"])
    text += '\n\n' + table(rows, ['robot', 'one moves: success', 'held drift (max)',
                                  'median µs', 'conflicting: mean remaining mm per effector',
                                  'median µs'])
    rows = []
    for name, r in results['robots'].items():
        for mode, t in r['tracking'].items():
            rows.append([name, mode.replace('_', ' '), str(t['solves']),
                         f"{t['success_rate']:.1%}", f"{t['median_us']:.0f} / {t['p95_us']:.0f}",
                         f"{t['largest_joint_jump_rad']:.3f}", str(t['jumps_over_0.2_rad'])])
    text += '\n\n' + table(rows, ['robot', 'tracking: targets changed', 'solves',
                                  'within 1 mm', 'median / p95 µs per solve',
                                  'largest joint jump rad', 'jumps > 0.2 rad'])
    return text


if __name__ == '__main__':
    main()
