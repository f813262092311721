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
The solver's golden corpus: answers on every shipped robot, recorded to the bit.

record() solves a fixed set of problems through the public API (IkSolver.solve) on the
robots of config/*.yaml and urdf/: cold solves from neutral, tracking sequences each
seeded with the previous answer, full, axis and position poses, holes (targets inside the
reach ball that no pose reaches), far targets, trees with some effectors holding, and a
free root. Each answer is kept as the bytes of every array and float in its IkResult
(hex), with per robot a digest of the straight-line source the solver compiled. A
refactoring that keeps the solver's behaviour keeps record() equal to the stored corpus.

    python3 test/ik_golden.py           # rewrite test/data/ik_golden.json.gz
    python3 test/ik_golden.py --print   # print today's corpus (JSON) instead

The digests depend on which kernels are already cached in the process, so a corpus is
recorded in a fresh interpreter. The last bits of numpy's and OpenBLAS's arithmetic depend on
which SIMD kernels the CPU lets them pick (their AVX-512 kernels round differently from their
AVX2 ones), so the corpus is recorded and checked with both held to their AVX2 kernels
(`arithmetic_environment`).
"""

import builtins
from contextlib import contextmanager
import gzip
import hashlib
import json
import math
import os
from pathlib import Path
import sys
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fabrik_ros.chain import Chain  # noqa: E402
from fabrik_ros.config import chain_from_parameters, load_config  # noqa: E402
from fabrik_ros.ik import IkResult, IkSolver  # noqa: E402
import numpy as np  # noqa: E402

CORPUS = REPO / 'test' / 'data' / 'ik_golden.json.gz'
URDF_ROBOTS = {'finger': ('palm', 'fingertip'), 'offset_arm': ('base_link', 'tool0'),
               'rail_arm': ('base_link', 'tool0')}
COLD = 24        # cold solves per robot and kind of target
TRACK = 15       # steps of a tracking sequence


def arithmetic_environment() -> dict[str, str] | None:
    """
    Return this process's environment with numpy and OpenBLAS held to their AVX2 kernels.

    A process started with it computes the corpus's arithmetic on any x86-64 CPU with AVX2,
    whatever wider kernels the CPU has. None where the CPU has no AVX2 (an older x86, an ARM
    machine): the corpus's last bits cannot be reproduced there.
    """
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    if not (__cpu_features__.get('X86_V3') or __cpu_features__.get('AVX2')):
        return None
    wider = [name for name in __cpu_dispatch__
             if __cpu_features__.get(name) and (name == 'X86_V4' or name.startswith('AVX512'))]
    return {**os.environ, 'NPY_DISABLE_CPU_FEATURES': ' '.join(wider),
            'OPENBLAS_CORETYPE': 'Haswell'}


def robots() -> dict[str, Chain]:
    """Return the chains of config/*.yaml and of the urdf/ files no config uses."""
    chains = {path.stem: chain_from_parameters(load_config(path), REPO)
              for path in sorted((REPO / 'config').glob('*.yaml'))}
    for name, (base, tip) in URDF_ROBOTS.items():
        chains[name] = Chain.from_urdf((REPO / 'urdf' / f'{name}.urdf').read_text(), base, tip)
    return chains


def quaternion(rotation: np.ndarray) -> list[float]:
    """Return a rotation matrix's unit quaternion, ROS order x y z w (Shepperd's method)."""
    m = rotation
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0] * 4
        q[i], q[j], q[k] = s / 4, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
        q[3] = (m[k, j] - m[j, k]) / s
    return q


def random_q(chain: Chain, rng: np.random.Generator) -> np.ndarray:
    """Return a pose uniform within the limits (continuous joints within one turn)."""
    lower = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    upper = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    return rng.uniform(lower, upper)


def summary(result: IkResult) -> dict[str, Any]:
    """Return every field of a result as exact text (arrays' and floats' bytes in hex)."""
    def exact(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return f'{value.dtype}{value.shape}:{value.tobytes().hex()}'
        if isinstance(value, float):
            return value.hex()
        if isinstance(value, list):
            return [exact(item) for item in value]
        return value
    return {name: exact(value) for name, value in vars(result).items()}


@contextmanager
def compiled_sources(sources: list[str]) -> Iterator[None]:
    """Collect the source text of everything the solver compiles while inside."""
    original = builtins.compile

    def recording(source, filename, *args, **kwargs):
        if isinstance(filename, str) and filename.startswith('<fabrik_ros'):
            sources.append(f'{filename}\n{source}')
        return original(source, filename, *args, **kwargs)
    builtins.compile = recording
    try:
        yield
    finally:
        builtins.compile = original


def single_cases(chain: Chain, rng: np.random.Generator) -> dict[str, Any]:
    """Return the answers of one effector's robot: cold, tracking, poses, holes, far."""
    solver = IkSolver(chain)
    axis = IkSolver(chain, orientation_mode='axis')
    position = IkSolver(chain, orientation_mode='position')
    anchor = np.zeros(3)
    reach = max(np.linalg.norm(np.diff(chain.joint_positions(chain.neutral()), axis=0),
                               axis=1).sum(), 1e-3)
    cases: dict[str, Any] = {}
    poses = [chain.tip_pose(random_q(chain, rng)) for _ in range(COLD)]
    cases['cold'] = [summary(solver.solve(p[:3, 3])) for p in poses]
    cases['cold_traced'] = [summary(solver.solve(p[:3, 3], trace=True)) for p in poses[:3]]
    cases['full'] = [summary(solver.solve(p[:3, 3], orientation=quaternion(p[:3, :3])))
                     for p in poses]
    cases['axis'] = [summary(axis.solve(p[:3, 3], orientation=quaternion(p[:3, :3])))
                     for p in poses]
    cases['position_mode'] = [summary(position.solve(p[:3, 3],
                                                     orientation=quaternion(p[:3, :3])))
                              for p in poses[:4]]
    directions = rng.normal(size=(COLD, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    ball = anchor + directions * reach * rng.uniform(0.0, 1.0, (COLD, 1)) ** (1 / 3)
    cases['ball'] = [summary(solver.solve(target)) for target in ball]
    cases['ball_full'] = [summary(solver.solve(target, orientation=quaternion(p[:3, :3])))
                          for target, p in zip(ball[:6], poses)]
    cases['far'] = [summary(solver.solve(anchor + 2.0 * reach * d)) for d in directions[:4]]
    other_fit = IkSolver(chain, fit='chain' if solver.fit == 'next' else 'next',
                         unreachable_after=None, max_restarts=6)
    cases['other_fit'] = [summary(other_fit.solve(target)) for target in ball[:6]]
    for kind, oriented in (('track', False), ('track_full', True)):
        start, end = random_q(chain, rng), random_q(chain, rng)
        q = start
        answers = []
        for step in range(TRACK):
            pose = chain.tip_pose(start + (end - start) * step / (TRACK - 1))
            result = solver.solve(pose[:3, 3], seed=q,
                                  orientation=quaternion(pose[:3, :3]) if oriented else None)
            answers.append(summary(result))
            q = result.q
        cases[kind] = answers
    seed = random_q(chain, rng)
    cases['seeded_hole'] = [summary(solver.solve(target, seed=seed)) for target in ball[:4]]
    return cases


def tree_cases(chain: Chain, rng: np.random.Generator) -> dict[str, Any]:
    """Return the answers of a tree: all targeted, some holding, tracking, poses."""
    solver = IkSolver(chain)
    names = chain.effector_names
    weighted = IkSolver(chain, effector_weights={names[0]: 3.0, names[-1]: 0.5})
    cases: dict[str, Any] = {'all': [], 'some': [], 'track': [], 'full': [], 'weighted': []}
    for _ in range(COLD // 2):
        points = chain.effector_positions(random_q(chain, rng))
        cases['all'].append(summary(solver.solve(dict(zip(names, points)))))
        half = dict(list(zip(names, points))[::2])
        cases['some'].append(summary(solver.solve(half, seed=random_q(chain, rng))))
        cases['weighted'].append(summary(weighted.solve(points * 1.3)))
    start, end = random_q(chain, rng), random_q(chain, rng)
    q = start
    for step in range(TRACK):
        points = chain.effector_positions(start + (end - start) * step / (TRACK - 1))
        result = solver.solve({names[0]: points[0]}, seed=q)
        cases['track'].append(summary(result))
        q = result.q
    for _ in range(3):
        q = random_q(chain, rng)
        poses = chain.effector_poses(q)
        cases['full'].append(summary(solver.solve(
            {n: p[:3, 3] for n, p in zip(names, poses)},
            orientation={n: quaternion(p[:3, :3]) for n, p in zip(names, poses)})))
    return cases


def free_cases(chain: Chain, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Return the answers of a free root: targets near and far, tracking."""
    solver = IkSolver(chain, root='free')
    names = chain.effector_names
    answers = []
    q = chain.neutral()
    for scale in (0.5, 1.0, 3.0):
        for _ in range(3):
            points = chain.effector_positions(random_q(chain, rng)) * scale
            result = solver.solve({names[0]: points[0]} if len(names) > 1 else points[0],
                                  seed=q)
            answers.append(summary(result))
            q = result.q
    return answers


def record() -> dict[str, Any]:
    """Return the corpus of today's solver (see the module docstring)."""
    corpus: dict[str, Any] = {}
    for index, (name, chain) in enumerate(robots().items()):
        rng = np.random.default_rng(2026 + index)
        sources: list[str] = []
        with compiled_sources(sources):
            if len(chain.effectors) == 1:
                cases = single_cases(chain, rng)
            else:
                cases = tree_cases(chain, rng)
            if name in ('arm', 'spider', 'tentacle'):
                cases['free'] = free_cases(chain, rng)
        cases['source_sha256'] = hashlib.sha256('\0'.join(sources).encode()).hexdigest()
        cases['sources'] = len(sources)
        corpus[name] = cases
    return corpus


def load() -> dict[str, Any]:
    """Return the stored corpus."""
    with gzip.open(CORPUS, 'rt', encoding='utf-8') as stream:
        return json.load(stream)


if __name__ == '__main__':
    pinned = arithmetic_environment()
    if pinned is None:
        sys.exit('ik_golden.py: this CPU has no AVX2, the arithmetic the corpus is kept in')
    if os.environ.get('OPENBLAS_CORETYPE') != pinned['OPENBLAS_CORETYPE']:  # not yet held
        os.execve(sys.executable, [sys.executable, *sys.argv], pinned)
    data = json.dumps(record(), sort_keys=True, separators=(',', ':'))
    if sys.argv[1:] == ['--print']:
        print(data)
        sys.exit(0)
    with gzip.GzipFile(CORPUS, 'wb', mtime=0) as stream:
        stream.write(data.encode())
    print(f'{CORPUS}: {CORPUS.stat().st_size} bytes')
