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
The clearance check of an earlier commit against this tree's, in one run: a benchmark.

    python3 bench/collision_compare.py BEFORE [--configurations 1000]

Extracts commit BEFORE (git archive) to a temporary directory, builds the UR5e with its
gripper and the Panda with its hand from each tree's fabrik_ros (both stay loaded: the
old modules leave sys.modules once each chain's model is built and run), and times
chain.clearance(q, scene) of each among test_collision_descriptions' five obstacles and
with none, alternating old and new on every configuration (random within the limits),
wall clock per call. Prints medians and
the median of the per-configuration ratios, over all configurations and over those clear
of everything; writes bench/results/collision_compare.json.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = Path(__file__).resolve().parents[1]


def _load(tree: Path) -> dict:
    """Return the robots' builders and Scene of the fabrik_ros in tree, then unload it."""
    sys.path[:0] = [str(tree), str(tree / 'test')]
    from fabrik_ros.collision import Scene
    from test_collision_descriptions import ROBOTS, SCENE
    loaded = {'Scene': Scene, 'SCENE': SCENE,
              'chains': {name: build() for name, build in ROBOTS.items()}}
    for chain in loaded['chains'].values():     # built and run before the modules go
        chain.clearance(chain.neutral(), Scene(SCENE))
    for name in [name for name in sys.modules if name.split('.')[0] in (
            'fabrik_ros', 'test_collision_descriptions', 'test_descriptions')]:
        del sys.modules[name]
    del sys.path[:2]
    return loaded


def main(argv: list[str] | None = None) -> None:
    """Time both trees' checks alternately, print a table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('before')
    parser.add_argument('--configurations', type=int, default=1000)
    args = parser.parse_args(argv)
    import numpy as np
    with tempfile.TemporaryDirectory() as directory:
        archive = subprocess.run(['git', 'archive', args.before], cwd=REPO,
                                 capture_output=True, check=True).stdout
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(directory)
        old = _load(Path(directory))
    new = _load(REPO)
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    results = {'command': ' '.join(['python3', 'bench/collision_compare.py'] + sys.argv[1:]),
               'commit': commit, 'before': args.before, 'robots': {}}
    generator = np.random.default_rng(0)
    for name, chain in new['chains'].items():
        chains = {'before': old['chains'][name], 'after': chain}
        scenes = {'before': old['Scene'](old['SCENE']), 'after': new['Scene'](new['SCENE'])}
        empty = {'before': old['Scene'](), 'after': new['Scene']()}
        low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
        configurations = generator.uniform(low, high, (args.configurations, chain.dof))
        clear = np.array([chain.clearance(q, scenes['after']) > 0.0 for q in configurations])
        row = {'configurations': len(configurations), 'clear': int(clear.sum())}
        for label, scene in (('five_obstacles', scenes), ('no_obstacles', empty)):
            times = {'before': [], 'after': []}
            for index, q in enumerate(configurations):
                for which in (('before', 'after') if index % 2 else ('after', 'before')):
                    start = time.perf_counter()
                    chains[which].clearance(q, scene[which])
                    times[which].append(time.perf_counter() - start)
            before, after = np.array(times['before']), np.array(times['after'])
            for subset, mask in (('all', np.ones(len(clear), bool)), ('clear', clear)):
                row[f'{label}_{subset}'] = {
                    'before_median_us': float(np.median(before[mask]) * 1e6),
                    'after_median_us': float(np.median(after[mask]) * 1e6),
                    'median_ratio': float(np.median(before[mask] / after[mask]))}
        results['robots'][name] = row
        print(f'{name}: {row["clear"]} of {row["configurations"]} configurations clear')
        for key, value in row.items():
            if isinstance(value, dict):
                print(f'  {key:22s} before {value["before_median_us"]:7.1f} us  after '
                      f'{value["after_median_us"]:7.1f} us  speed-up {value["median_ratio"]:.2f}x')
    out = REPO / 'bench' / 'results' / 'collision_compare.json'
    out.write_text(json.dumps(results, indent=2) + '\n')
    print(f'wrote {out.relative_to(REPO)}')


if __name__ == '__main__':
    main()
