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
Start-up cost against the number of joints: a benchmark, not a test.

    python3 bench/startup_bench.py [--joints 100 250 500 1000 2000]

For plain-parameter chains of N hinge joints (chain.segments = N, the tentacle's kind of
chain) it times, fastest of 3, in CPU seconds of this thread: building the model
(config.chain_from_parameters, as the nodes do), compiling the solver (IkSolver), writing
the URDF for robot_state_publisher (Chain.to_urdf) and reading it back (Chain.from_urdf,
as from robot_description), and the whole IK node's start-up in this process (IkNode: its
parameter declarations, per-joint limits included, the model, the controller; wall-clock
seconds, since rcl does part of the work; skipped where rclpy is not installed). Linear
growth shows as a flat time per joint; the table gives it, and the ratio of the largest
chain's per-joint time to the smallest's. Prints a table and writes
bench/results/startup_bench.json. Run it through scripts/ros_venv.sh (loopback DDS, a
domain of its own).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
import platform
import sys
import time
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fabrik_ros.chain import Chain, MAX_JOINTS  # noqa: E402
from fabrik_ros.config import chain_from_parameters  # noqa: E402
from fabrik_ros.ik import IkSolver  # noqa: E402
import numpy as np  # noqa: E402

REPEATS = 3


def fastest(action: Callable[[], Any]) -> tuple[Any, float]:
    """Return the action's result and its CPU time (seconds), fastest of REPEATS."""
    best = math.inf
    for _ in range(REPEATS):
        start = time.thread_time()
        result = action()
        best = min(best, time.thread_time() - start)
    return result, best


def node_start_up(params: dict[str, Any]) -> float | None:
    """Return the wall-clock seconds to build the IK node on `params`, fastest of REPEATS."""
    try:
        import rclpy
        from rclpy.parameter import Parameter
    except ImportError:
        return None
    from fabrik_ros.ik_node import IkNode
    context = rclpy.context.Context()
    rclpy.init(context=context)
    overrides = [Parameter(name, value=value) for name, value in params.items()]
    best = math.inf
    try:
        for _ in range(REPEATS):
            start = time.perf_counter()
            node = IkNode(context=context, parameter_overrides=overrides)
            best = min(best, time.perf_counter() - start)
            node.destroy_node()
    finally:
        context.try_shutdown()
    return best


def measure(joints: int) -> dict[str, float]:
    """Return the start-up stage times (seconds) of an N-joint hinge chain."""
    params = {'chain.segments': joints, 'chain.segment_length': [0.05],
              'base_link': 'base_link', 'tip_links': ['tip']}
    chain, build = fastest(lambda: chain_from_parameters(params, REPO))
    _, solver = fastest(lambda: IkSolver(chain))
    urdf, write = fastest(lambda: chain.to_urdf('bench'))
    _, read = fastest(lambda: Chain.from_urdf(urdf, 'base_link', 'tip'))
    row = {'joints': chain.dof, 'model_s': build, 'solver_s': solver, 'to_urdf_s': write,
           'from_urdf_s': read, 'total_s': build + solver + write + read}
    node = node_start_up(params)
    if node is not None:
        row['ik_node_s'] = node
    return row


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark, print the table and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--joints', type=int, nargs='+', default=[100, 250, 500, 1000, 2000])
    args = parser.parse_args(argv)
    rows = [measure(n) for n in args.joints]
    stages = ['model_s', 'solver_s', 'to_urdf_s', 'from_urdf_s', 'total_s']
    if all('ik_node_s' in row for row in rows):
        stages.append('ik_node_s')
    per_joint = {stage: [row[stage] / row['joints'] for row in rows] for stage in stages}
    results = {
        'machine': {'python': platform.python_version(), 'numpy': np.__version__},
        'max_joints': MAX_JOINTS, 'rows': rows,
        'largest_over_smallest_time_per_joint': {
            stage: values[-1] / values[0] for stage, values in per_joint.items()},
    }
    lines = ['| joints | ' + ' | '.join(f'{stage[:-2]} ms' for stage in stages)
             + ' | total µs/joint |', '|---' * (len(stages) + 2) + '|']
    for row in rows:
        lines.append(f"| {row['joints']} | " + ' | '.join(
            f'{row[stage] * 1e3:.1f}' for stage in stages)
            + f" | {row['total_s'] / row['joints'] * 1e6:.0f} |")
    ratios = results['largest_over_smallest_time_per_joint']
    lines.append('\nTime per joint, largest chain over smallest (1.0 = linear): ' + ', '.join(
        f'{stage[:-2]} {ratio:.2f}' for stage, ratio in ratios.items()))
    print('\n'.join(lines))
    out = REPO / 'bench' / 'results' / 'startup_bench.json'
    out.write_text(json.dumps(results, indent=2) + '\n')
    print(f'\nwrote {out.relative_to(REPO)}')


if __name__ == '__main__':
    main()
