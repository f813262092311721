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
at 100 Hz (--rate) through the IK controller in two streams. Adversarial: toward random
tool poses whose configurations keep 3 cm clear (from a start as clear) but whose paths
mostly run into something, each then jogged on (a tool twist, 0.3 m/s) for as long, into
what is there. Typical: toward tool poses whose straight joint paths pass every obstacle
by more than the slowdown distance (margin included; the stream's own path, shaped per
joint, may pass closer) and keep 2 cm between the links, no jog. Each motion runs from
the same state with the stream's check (self-collision on, the obstacles) and without it
(self-collision off, no obstacles: the stream as it was), and with --baseline REV also
with REV's check (its controller_collision.py, stream_bounds.py and collision/separation.py,
closest.py and nearest.py in this tree: everything it runs per command), taking turns
target by target. Reported per stream, robot, motion (stream, jog) and check: wall and
CPU time per command (median, p99), the check's own wall time per command (in the
controller's collision methods: median, p99, mean), the share of commands slowed and
halted, the collision stops (a command cut short), and the least clearance
(chain.clearance's self pairs and obstacles, in a model of their own) sampled at 5 points
along every motion between two commands. The load average is recorded before and after.
Run:

    python3 bench/stream_bench.py [--rate 100] [--robot ur5e] [--baseline REV]

It prints a table and writes bench/results/stream_bench.json with the commit and command.
Timings depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import time
import types

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / 'bench'), str(REPO / 'test')]

from collision_bench import clear_targets  # noqa: E402
from fabrik_ros import controller as controller_module  # noqa: E402
from fabrik_ros.collision import CollisionModel  # noqa: E402
from fabrik_ros.controller import IkController, Target  # noqa: E402
from fabrik_ros.model.rotations import quaternion_from_rotation  # noqa: E402
from ik_bench import _commit, publish  # noqa: E402
import numpy as np  # noqa: E402
from test_collision_descriptions import NEUTRAL, ROBOTS, SCENE  # noqa: E402
from test_controller import make_settings  # noqa: E402

SAMPLES = np.linspace(0.0, 1.0, 5)
CHECK_METHODS = ('update', 'slowdown', 'clear_step', 'settle')
STREAMS = {'adversarial': False, 'typical': True}    # the streams, whether typical
SELF_CLEAR = 0.02   # m: the typical stream's links keep this from each other


CHECK_MODULES = ('fabrik_ros.collision.nearest', 'fabrik_ros.collision.closest',
                 'fabrik_ros.collision.separation', 'fabrik_ros.stream_bounds',
                 'fabrik_ros.controller_collision')   # the check's code, imported in order


def baseline_check(ref: str) -> types.ModuleType:
    """
    Return the stream's check as of git revision `ref`, as a module (controller_collision).

    Its own modules (CHECK_MODULES: the distances, closest points, planes and bounds it
    calls per command) come from `ref` too, each importing the ones before; one that `ref`
    does not have stays this tree's. The pairs' stacked constants are `ref`'s too (its
    nearest.CheckRows, built from this tree's collision model once per scene).
    """
    saved = {name: sys.modules.get(name) for name in CHECK_MODULES}
    loaded = {}
    try:
        for name in CHECK_MODULES:
            path = name.replace('.', '/') + '.py'
            shown = subprocess.run(['git', '-C', str(REPO), 'show', f'{ref}:{path}'],
                                   capture_output=True, text=True)
            if shown.returncode != 0 and name != CHECK_MODULES[-1]:
                continue
            shown.check_returncode()
            source = shown.stdout
            module = types.ModuleType('baseline_' + name.rsplit('.', 1)[1])
            sys.modules[module.__name__] = module   # dataclasses look their module up
            exec(compile(source, f'{ref}:{path}', 'exec'), module.__dict__)  # noqa: S102
            sys.modules[name] = loaded[name] = module  # the later ones import this one
    finally:
        for name, original in saved.items():
            sys.modules[name] = original
    nearest = loaded.get(CHECK_MODULES[0])
    if nearest is not None:
        module.Collisions = _with_rows_of(module.Collisions, nearest.CheckRows)
    return module


def _with_rows_of(collisions: type, check_rows: type) -> type:
    """Return collisions whose model stacks the check's pairs by `check_rows` (a revision's)."""
    class Model:
        """The collision model, its check's pairs stacked by `check_rows`."""

        def __init__(self, model) -> None:
            """Wrap model."""
            self._model = model

        def __getattr__(self, name: str):
            """Return the model's own attribute."""
            return getattr(self._model, name)

        def check_rows(self, obstacles):
            """Return `check_rows` of the model against obstacles."""
            return check_rows(self._model, self._model.scene(obstacles))

    class RevisionCollisions(collisions):
        """The collisions, their model's check stacked by `check_rows`."""

        @property
        def model(self):
            """Return the model, its check's pairs stacked by `check_rows`."""
            return Model(super().model)
    return RevisionCollisions


class Arm:
    """A streaming controller and the check it runs (None: the current one), timed."""

    def __init__(self, chain, checked: bool, start: np.ndarray, dt: float,
                 check: types.ModuleType | None = None) -> None:
        """Make the controller at `start`: checked (by `check`'s code), or unchecked."""
        settings = make_settings(chain, self_collision=checked, max_restarts=8,
                                 max_iterations=100, tolerance=1e-4,
                                 default_max_acceleration=20.0)
        self.controller = IkController(settings, 0.0, command_period=dt, feedback=False)
        self.controller.set_obstacles(SCENE if checked else [])
        self.controller.stream.start(start)
        self.step = controller_module.guarded_step if check is None else check.guarded_step
        if check is not None:
            self.controller.collision = check.StreamCollision()
        self.check_time = 0.0   # s spent in the collision methods so far
        for name in CHECK_METHODS:
            setattr(self.controller.collision, name,
                    self._timed(getattr(self.controller.collision, name)))

    def _timed(self, method):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.check_time += time.perf_counter() - start
        return timed

    def tick(self, now: float):
        """Tick the controller with its own check's code."""
        saved = controller_module.guarded_step
        controller_module.guarded_step = self.step
        try:
            return self.controller.tick(now)
        finally:
            controller_module.guarded_step = saved


class Record:
    """Per-command times and what the check did, for one robot and one setting."""

    def __init__(self) -> None:
        """Start empty."""
        self.wall, self.cpu, self.check, self.states = [], [], [], []
        self.stops, self.least = 0, np.inf

    def tick(self, arm: Arm, now: float, chain, reference: CollisionModel) -> None:
        """Tick once, timed; sample the clearance along the motion (reference: its model)."""
        controller = arm.controller
        before = controller.stream.position.copy()
        check = arm.check_time
        wall, cpu = time.perf_counter(), time.process_time()
        command = arm.tick(now).command
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(time.process_time() - cpu)
        self.check.append(arm.check_time - check)
        self.states.append(controller.collision.state)
        self.stops += controller.collision.cut
        self.least = min(self.least, *(reference.min_distance(chain.world_frames(
            before + t * (command.position - before)), SCENE) for t in SAMPLES[1:]))

    def summary(self) -> dict:
        """Return the figures of the run."""
        def percentiles(values: list[float]) -> dict:
            return {'median_us': 1e6 * float(np.median(values)),
                    'p99_us': 1e6 * float(np.percentile(values, 99)),
                    'mean_us': 1e6 * float(np.mean(values))}
        count = len(self.states)
        return {'commands': count, 'wall': percentiles(self.wall),
                'cpu': percentiles(self.cpu), 'check_wall': percentiles(self.check),
                'slowed_share': self.states.count('slowed') / count,
                'halted_share': self.states.count('halted') / count,
                'collision_stops': self.stops, 'least_clearance_m': float(self.least)}


def passing_targets(chain, count: int, generator: np.random.Generator, room: float
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
    """
    Return a start and tool poses whose straight joint paths keep `room` from the obstacles.

    A random walk (steps up to 0.6 rad a joint) among configurations whose links keep
    `room` from every obstacle, and SELF_CLEAR from each other, at 9 points along the way
    from the one before.
    """
    links = CollisionModel(chain.collision.bodies, ())
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)

    def clear(q: np.ndarray) -> bool:
        return (links.min_distance(chain.world_frames(q), SCENE) >= room
                and chain.clearance(q, []) >= SELF_CLEAR)
    start = generator.uniform(low, high)
    while not clear(start):
        start = generator.uniform(low, high)
    q, poses = start, []
    while len(poses) < count:
        step = np.clip(q + generator.uniform(-0.6, 0.6, len(q)), low, high)
        if all(clear(q + t * (step - q)) for t in np.linspace(0.0, 1.0, 9)[1:]):
            q = step
            poses.append(chain.tip_pose(q))
    return start, poses


def run(name: str, targets: int, seconds: float, dt: float,
        baseline: tuple[str, types.ModuleType] | None, typical: bool = False) -> dict:
    """
    Stream one robot to random poses, the settings taking turns.

    Adversarial: clear poses whose paths mostly run into something, each then jogged on
    into what is there. Typical: poses whose straight joint paths pass every obstacle by
    more than the slowdown distance (margin included), no jog.
    """
    chain = ROBOTS[name]()
    # chain.clearance's pairs in a model of its own: its kept scene is not the stream's
    reference = CollisionModel(chain.collision.bodies, map(tuple, chain.collision.pairs.tolist()))
    generator = np.random.default_rng(0)
    if typical:
        settings = make_settings(chain)
        start, poses = passing_targets(chain, targets + 1, generator,
                                       settings.collision_margin
                                       + settings.collision_slowdown_distance)
    else:
        poses = clear_targets(chain, SCENE, targets + 1, generator)
        start = NEUTRAL[name]
        while chain.clearance(start, SCENE) < 0.03:  # the stream starts clear
            start = generator.uniform(np.maximum(chain.lower, -np.pi),
                                      np.minimum(chain.upper, np.pi))
    arms = {'checked': Arm(chain, True, start, dt), 'unchecked': Arm(chain, False, start, dt)}
    if baseline is not None:
        arms[f'checked by {baseline[0]}'] = Arm(chain, True, start, dt, baseline[1])
    records = {(setting, phase): Record() for setting in arms for phase in ('stream', 'jog')}
    steps = int(round(seconds / dt))
    now = 0.0
    for index, pose in enumerate(poses):
        order = list(arms)[index % len(arms):] + list(arms)[:index % len(arms)]
        twist = np.concatenate([pose[:3, 3] - chain.tip_position(start), np.zeros(3)])
        for setting in order:   # each starts where the checked arm started this target
            arm = arms[setting]
            arm.controller.stream.start(start)
            arm.controller.on_target(0, Target(pose[:3, 3], _quaternion(pose)), now)
            for k in range(steps):
                records[setting, 'stream'].tick(arm, now + dt * (k + 1), chain, reference)
            for k in range(0 if typical else steps):   # then jog on, into what is there
                moment = now + seconds + dt * (k + 1)
                arm.controller.jog.on_twist(0, 0.3 * twist / np.linalg.norm(twist), moment,
                                            'base')
                records[setting, 'jog'].tick(arm, moment, chain, reference)
        now += 2.0 * seconds + 1.0
        start = arms['checked'].controller.stream.position.copy()
    return {'runs': {f'{phase}, {setting}': record.summary()
                     for (setting, phase), record in records.items() if record.states},
            'self_pairs': len(chain.collision.pairs), 'obstacles': len(SCENE)}


def _quaternion(pose: np.ndarray) -> np.ndarray:
    return np.asarray(quaternion_from_rotation(pose[:3, :3]), dtype=float)


def report(results: dict) -> str:
    """Return the markdown table of the results."""
    rows = ['| stream | robot | motion, check | wall median / p99 us | CPU median us | check '
            'median / p99 / mean us | slowed | halted | collision stops | least clearance m |',
            '|---|---|---|---|---|---|---|---|---|---|']
    for stream, name, robot in [(stream, name, robot) for stream in STREAMS
                                for name, robot in results[stream].items()]:
        for key, r in robot['runs'].items():
            check = r['check_wall']
            rows.append(f"| {stream} | {name} | {key} | {r['wall']['median_us']:.0f} / "
                        f"{r['wall']['p99_us']:.0f} | {r['cpu']['median_us']:.0f} | "
                        f"{check['median_us']:.0f} / {check['p99_us']:.0f} / "
                        f"{check['mean_us']:.0f} | "
                        f"{r['slowed_share']:.1%} | {r['halted_share']:.1%} | "
                        f"{r['collision_stops']} | {r['least_clearance_m']:.4f} |")
    return '\n'.join(rows) + (f"\n\nload average {results['load_before']} before, "
                              f"{results['load_after']} after")


def main(argv: list[str] | None = None) -> None:
    """Run the robots, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--targets', type=int, default=10)
    parser.add_argument('--seconds', type=float, default=1.0, help='per target and per jog')
    parser.add_argument('--rate', type=float, default=100.0, help='commands per second')
    parser.add_argument('--robot', default='', help='only the robots whose name has this')
    parser.add_argument('--baseline', default='', help='a git revision to compare with')
    args = parser.parse_args(argv)
    baseline = (args.baseline, baseline_check(args.baseline)) if args.baseline else None
    load = os.getloadavg()
    results = {'command': ' '.join(['python3', 'bench/stream_bench.py'] + sys.argv[1:]),
               'commit': _commit(), 'command_rate_hz': args.rate, 'streams': STREAMS}
    for stream, typical in STREAMS.items():
        results[stream] = {name: run(name, args.targets, args.seconds, 1.0 / args.rate,
                                     baseline, typical)
                           for name in ROBOTS if args.robot in name}
    results['load_before'], results['load_after'] = list(load), list(os.getloadavg())
    publish(results, report(results), 'stream_bench.json')


if __name__ == '__main__':
    main()
