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
Where fabrik_ros's solve time goes: a profile of one arm's stage of bench/ik_bench.py.

    python3 bench/ik_profile.py [--arm ur5e] [--stage full_pose_from_neutral] [--solves 300]
                                [--top 20] [--sampler] [--baseline REV]

The same targets as ik_bench.py's arms (arm_references.stage_poses), solved by fabrik_ros
alone as there (from the neutral seed, or tracking with each answer seeding the next), after
the same warm-up. First every solve is timed by wall clock without a profiler (the figure
to compare with ik_bench.py); then the same solves run again under cProfile, enabled
around the solve calls only: functions by their own time and by their cumulative time,
each as a share of the profiled total. cProfile charges a cost to every call, so it
overstates code made of many small calls; --sampler profiles the solves instead with
pyinstrument (bench/requirements.txt), a statistical sampler that does not, and prints its
call tree of wall time.

--baseline REV times the same solves by this tree's solver and by REV's (ik_bench.py's
baseline_solver) instead, taking turns target by target (solve_timing.in_turns, one timed
solve each), each tracking its own answers: both medians, their ratio, and whether every
answer (q) is identical to the bit.
"""

from __future__ import annotations

import argparse
import cProfile
from pathlib import Path
import pstats
import sys
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from arm_references import arm_chain, ARMS, FAST_STEPS, SMOOTH_STEPS, split_name, \
    stage_poses, STAGES, WARMUP  # noqa: E402
from fabrik_ros.chain import quaternion_from_rotation  # noqa: E402
from fabrik_ros.ik import IkSolver  # noqa: E402
import numpy as np  # noqa: E402
from solve_timing import in_turns, spread, timed  # noqa: E402


def solves_of(arm: str, stage: str, count: int) -> tuple[str, Callable[[], None]]:
    """
    Return the arm's split and a function making the stage's first `count` solves in turn.

    The function takes an optional record(wall_us), called with each solve's time.
    """
    _, chain = arm_chain(arm)
    solver = IkSolver(chain)
    full = stage.startswith('full_pose')
    path = stage[len('full_pose_'):] if full else stage[len('position_'):]
    poses, start = stage_poses(chain, count, SMOOTH_STEPS, FAST_STEPS)[path]
    targets = [(pose[:3, 3].copy(), quaternion_from_rotation(pose[:3, :3]))
               for pose in poses[:count]]
    neutral = chain.neutral()

    def solve_all(record: Callable[[float], None] | None = None) -> None:
        q = neutral if start is None else start
        for position, quaternion in targets:
            seed = q
            if record is None:
                answer = solver.solve(position, seed, orientation=quaternion if full else None)
            else:
                answer, wall, _ = timed(lambda: solver.solve(
                    position, seed, orientation=quaternion if full else None))
                record(wall)
            q = q if start is None else answer.q

    for position, quaternion in targets[:WARMUP]:
        solver.solve(position, neutral, orientation=quaternion if full else None)
    return split_name(solver), solve_all


def baseline_report(arm: str, stage: str, count: int, ref: str) -> str:
    """Return the stage's medians by this solver and by ref's, alternating, and a verdict."""
    from ik_bench import baseline_solver
    _, chain = arm_chain(arm)
    full = stage.startswith('full_pose')
    path = stage[len('full_pose_'):] if full else stage[len('position_'):]
    poses, start = stage_poses(chain, count, SMOOTH_STEPS, FAST_STEPS)[path]
    targets = [(pose[:3, 3].copy(), quaternion_from_rotation(pose[:3, :3]))
               for pose in poses[:count]]
    solvers = {'now': IkSolver(chain), ref: baseline_solver(ref)(chain)}
    neutral = chain.neutral()
    for solver in solvers.values():
        for position, quaternion in targets[:WARMUP]:
            solver.solve(position, neutral, orientation=quaternion if full else None)
    seeds = dict.fromkeys(solvers, neutral if start is None else start)
    walls: dict[str, list[float]] = {name: [] for name in solvers}
    answers: dict[str, list[np.ndarray]] = {name: [] for name in solvers}
    for index, name in in_turns(solvers, range(len(targets))):
        position, quaternion = targets[index]
        seed = seeds[name]
        answer, wall, _ = timed(lambda: solvers[name].solve(
            position, seed, orientation=quaternion if full else None))
        walls[name].append(wall)
        answers[name].append(answer.q)
        if start is not None:
            seeds[name] = answer.q
    now, before = (spread(walls[name])['median_us'] for name in solvers)
    same = all(np.array_equal(a, b) for a, b in zip(*answers.values()))
    return (f'{arm}, {stage}: {len(targets)} solves each, wall median now {now:.0f} µs, '
            f'{ref} {before:.0f} µs: {now / before:.3f}x; answers '
            f"{'identical to the bit' if same else 'differ'}")


def cprofile_report(solve_all: Callable[[], None], top: int) -> str:
    """Return the top functions by own and by cumulative time, shares of the total."""
    profile = cProfile.Profile()
    profile.enable()
    solve_all()
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt
    lines = []
    for key, title in (('tottime', 'own time'), ('cumulative', 'cumulative time')):
        column = 2 if key == 'tottime' else 3
        rows = sorted(stats.stats.items(), key=lambda item: item[1][column], reverse=True)
        lines.append(f'\nby {title} (share of {total * 1e3:.0f} ms profiled):')
        for (path, line, function), (_, calls, own, cumulative, _) in rows[:top]:
            share = (own if key == 'tottime' else cumulative) / total
            lines.append(f'{share:6.1%}  {calls:8d} calls  {Path(path).name}:{line} '
                         f'{function}')
    return '\n'.join(lines)


def sampler_report(solve_all: Callable[[], None]) -> str:
    """Return pyinstrument's call tree of the solves' wall time."""
    import pyinstrument
    profiler = pyinstrument.Profiler(interval=0.0001)
    profiler.start()
    solve_all()
    profiler.stop()
    return profiler.output_text(unicode=True, show_all=False)


def main(argv: list[str] | None = None) -> None:
    """Time the stage's solves, then print where their time goes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--arm', choices=list(ARMS), default='ur5e')
    parser.add_argument('--stage', choices=list(STAGES), default='full_pose_from_neutral')
    parser.add_argument('--solves', type=int, default=300)
    parser.add_argument('--top', type=int, default=20)
    parser.add_argument('--sampler', action='store_true', help='pyinstrument, not cProfile')
    parser.add_argument('--baseline', metavar='REV',
                        help="time REV's solver against this one instead of profiling")
    args = parser.parse_args(argv)
    if args.baseline:
        print(baseline_report(args.arm, args.stage, args.solves, args.baseline))
        return
    split, solve_all = solves_of(args.arm, args.stage, args.solves)
    walls: list[float] = []
    solve_all(walls.append)
    times = spread(walls)
    print(f'{args.arm}, {args.stage}, closed-form split {split}: {args.solves} solves, wall '
          f"median {times['median_us']:.0f} µs, p90 {times['p90_us']:.0f}, max "
          f"{times['max_us']:.0f} (no profiler)")
    print(sampler_report(solve_all) if args.sampler else cprofile_report(solve_all, args.top))
    print(f'mean wall per solve without a profiler: {np.mean(walls):.0f} µs')


if __name__ == '__main__':
    main()
