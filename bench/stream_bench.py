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
The command stream's collision check: what it costs per command and what it keeps.

The UR5e with its gripper and the Panda with its hand (their own collision meshes as
capsules, test/test_collision_descriptions.py) among that file's five obstacles, streamed
at 100 Hz through the IK controller toward random tool poses whose configurations keep
3 cm clear (from a start as clear), each then jogged on (a tool twist, 0.3 m/s) for as
long. Each motion runs twice from the same state, in alternating order: with the stream's
check (self-collision on, the obstacles) and without it (self-collision off, no
obstacles: the stream as it was). Reported per robot, motion (stream, jog) and check: wall
and CPU time per command (median, p99), the share of commands slowed and halted, the
collision stops (a command cut short), and the least clearance (chain.clearance's self
pairs and obstacles, in a model of their own) sampled at 5 points along every motion
between two commands. Run:

    python3 bench/stream_bench.py

It prints a table and writes bench/results/stream_bench.json with the commit and command.
Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / 'bench'), str(REPO / 'test')]

from collision_bench import clear_targets  # noqa: E402
from fabrik_ros.collision import CollisionModel  # noqa: E402
from fabrik_ros.controller import IkController, Target  # noqa: E402
from fabrik_ros.model.rotations import quaternion_from_rotation  # noqa: E402
from ik_bench import _commit, publish  # noqa: E402
import numpy as np  # noqa: E402
from test_collision_descriptions import NEUTRAL, ROBOTS, SCENE  # noqa: E402
from test_controller import make_settings  # noqa: E402

DT = 0.01           # s: 100 Hz
SAMPLES = np.linspace(0.0, 1.0, 5)


def controller(chain, checked: bool, start: np.ndarray) -> IkController:
    """Return a streaming controller at `start`: checked, or as without the check."""
    settings = make_settings(chain, self_collision=checked, max_restarts=8,
                             max_iterations=100, tolerance=1e-4,
                             default_max_acceleration=20.0)
    result = IkController(settings, 0.0, command_period=DT, feedback=False)
    result.set_obstacles(SCENE if checked else [])
    result.stream.start(start)
    return result


class Record:
    """Per-command times and what the check did, for one robot and one setting."""

    def __init__(self) -> None:
        """Start empty."""
        self.wall, self.cpu, self.states, self.stops, self.least = [], [], [], 0, np.inf

    def tick(self, arm: IkController, now: float, chain, reference: CollisionModel) -> None:
        """Tick once, timed; sample the clearance along the motion (reference: its model)."""
        before = arm.stream.position.copy()
        wall, cpu = time.perf_counter(), time.process_time()
        command = arm.tick(now).command
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(time.process_time() - cpu)
        self.states.append(arm.collision.state)
        self.stops += arm.collision.cut
        self.least = min(self.least, *(reference.min_distance(chain.world_frames(
            before + t * (command.position - before)), SCENE) for t in SAMPLES[1:]))

    def summary(self) -> dict:
        """Return the figures of the run."""
        def percentiles(values: list[float]) -> dict:
            return {'median_us': 1e6 * float(np.median(values)),
                    'p99_us': 1e6 * float(np.percentile(values, 99))}
        count = len(self.states)
        return {'commands': count, 'wall': percentiles(self.wall),
                'cpu': percentiles(self.cpu),
                'slowed_share': self.states.count('slowed') / count,
                'halted_share': self.states.count('halted') / count,
                'collision_stops': self.stops, 'least_clearance_m': float(self.least)}


def run(name: str, targets: int, seconds: float) -> dict:
    """Stream one robot to random clear poses, then jog it; both settings alternated."""
    chain = ROBOTS[name]()
    # chain.clearance's pairs in a model of its own: its kept scene is not the stream's
    reference = CollisionModel(chain.collision.bodies, map(tuple, chain.collision.pairs.tolist()))
    generator = np.random.default_rng(0)
    poses = clear_targets(chain, SCENE, targets + 1, generator)
    start = NEUTRAL[name]
    while chain.clearance(start, SCENE) < 0.03:  # the stream starts clear
        start = generator.uniform(np.maximum(chain.lower, -np.pi),
                                  np.minimum(chain.upper, np.pi))
    arms = {True: controller(chain, True, start), False: controller(chain, False, start)}
    records = {(checked, phase): Record() for checked in (True, False)
               for phase in ('stream', 'jog')}
    now = 0.0
    for index, pose in enumerate(poses):
        order = (True, False) if index % 2 else (False, True)
        twist = np.concatenate([pose[:3, 3] - chain.tip_position(start), np.zeros(3)])
        for checked in order:   # both start from the checked arm's state
            arm = arms[checked]
            arm.stream.start(arms[True].stream.position)
            arm.on_target(0, Target(pose[:3, 3], _quaternion(pose)), now)
            for k in range(int(seconds / DT)):
                records[checked, 'stream'].tick(arm, now + DT * (k + 1), chain, reference)
            for k in range(int(seconds / DT)):   # then jog on past it, into what is there
                moment = now + seconds + DT * (k + 1)
                arm.jog.on_twist(0, 0.3 * twist / np.linalg.norm(twist), moment, 'base')
                records[checked, 'jog'].tick(arm, moment, chain, reference)
        now += 2.0 * seconds + 1.0
        start = arms[True].stream.position.copy()
    return {'runs': {f"{phase}, {'checked' if checked else 'unchecked'}": record.summary()
                     for (checked, phase), record in records.items()},
            'self_pairs': len(chain.collision.pairs), 'obstacles': len(SCENE)}


def _quaternion(pose: np.ndarray) -> np.ndarray:
    return np.asarray(quaternion_from_rotation(pose[:3, :3]), dtype=float)


def report(results: dict) -> str:
    """Return the markdown table of the results."""
    rows = ['| robot | motion, check | wall median / p99 us | CPU median us | slowed | '
            'halted | collision stops | least clearance m |', '|---|---|---|---|---|---|---|---|']
    for name, robot in results['robots'].items():
        for key, r in robot['runs'].items():
            rows.append(f"| {name} | {key} | {r['wall']['median_us']:.0f} / "
                        f"{r['wall']['p99_us']:.0f} | {r['cpu']['median_us']:.0f} | "
                        f"{r['slowed_share']:.1%} | {r['halted_share']:.1%} | "
                        f"{r['collision_stops']} | {r['least_clearance_m']:.4f} |")
    return '\n'.join(rows)


def main(argv: list[str] | None = None) -> None:
    """Run both robots, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--targets', type=int, default=10)
    parser.add_argument('--seconds', type=float, default=1.0, help='per target and per jog')
    args = parser.parse_args(argv)
    results = {'command': ' '.join(['python3', 'bench/stream_bench.py'] + sys.argv[1:]),
               'commit': _commit(), 'command_rate_hz': 1.0 / DT,
               'robots': {name: run(name, args.targets, args.seconds) for name in ROBOTS}}
    publish(results, report(results), 'stream_bench.json')


if __name__ == '__main__':
    main()
