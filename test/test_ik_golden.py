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
The solver answers the golden corpus to the bit (see ik_golden.py).

A change that is meant to move answers (a better heuristic) records a new corpus with
`python3 test/ik_golden.py` and says why in its commit; a refactoring never does.
"""

import json
from pathlib import Path
import subprocess
import sys

import ik_golden
import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope='module')
def today():
    """Return today's corpus, recorded in a fresh interpreter (cold kernel caches)."""
    environment = ik_golden.arithmetic_environment()
    if environment is None:
        pytest.skip('this CPU has no AVX2: the corpus is kept in the arithmetic of the AVX2 '
                    'kernels of numpy and OpenBLAS, whose last bits other CPUs do not reproduce')
    run = subprocess.run([sys.executable, str(HERE / 'ik_golden.py'), '--print'],
                         check=True, capture_output=True, text=True, env=environment)
    return json.loads(run.stdout)


def test_the_corpus_covers_every_robot(today):
    assert sorted(today) == sorted(ik_golden.load())
    assert {'arm', 'dual_arm', 'spider', 'tentacle', 'finger', 'offset_arm', 'rail_arm'} \
        <= set(today)


@pytest.mark.parametrize('robot', sorted(ik_golden.load()))
def test_every_answer_and_kernel_is_bitwise_the_recorded_one(today, robot):
    stored = ik_golden.load()[robot]
    now = today[robot]
    assert sorted(now) == sorted(stored)
    for kind in stored:
        if isinstance(stored[kind], list):
            for index, (answer, recorded) in enumerate(zip(now[kind], stored[kind])):
                assert answer == recorded, f'{robot} {kind}[{index}] moved'
            assert len(now[kind]) == len(stored[kind])
        else:
            assert now[kind] == stored[kind], f'{robot} {kind} moved'
