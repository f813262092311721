#!/usr/bin/env python3
"""
Benchmark of the FABRIK solver on trees (issue 4): a benchmark, not a test.

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
  largest joint jump between solves and how many solves jump more than 0.2 rad (a flip).

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
from ik_bench import limit_violation, publish, random_poses, REPO, SEED, SUCCESS_M, summary, \
    table, timed_solve  # noqa: E402
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


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the tables and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--targets', type=int, default=300)
    count = parser.parse_args(argv).targets
    results: dict[str, Any] = {'settings': {'success_m': SUCCESS_M, 'seed': SEED},
                               'robots': {}}
    for name in ROBOTS:
        chain = chain_from_parameters(load_config(REPO / 'config' / f'{name}.yaml'), REPO)
        rng = np.random.default_rng(SEED)
        print(f'{name}: {chain.dof} joints, {len(chain.effectors)} effectors ...',
              file=sys.stderr)
        entry = {
            'dof': chain.dof, 'effectors': len(chain.effectors),
            'simultaneous': simultaneous(chain, IkSolver(chain), count, rng),
            'one_moves_others_hold': one_moves_others_hold(chain, count // 3, rng),
            'conflicting_out_of_reach': conflicting(chain, count // 3, rng),
            'tracking': tracking(chain, 5, 201, rng),
        }
        if name == 'spider':
            entry['simultaneous_free_root'] = simultaneous(
                chain, IkSolver(chain, root='free'), count, rng)
        results['robots'][name] = entry
    publish(results, report(results), 'tree_bench.json')


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
