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
What every benchmark here shares: target poses and paths, success, and how a solve is timed.

A solve is timed as a caller waits for it: wall clock (time.perf_counter_ns) around the
solve call only, once per target, never the fastest of repeats (a repeat of the same target
is warmer than anything a node sees). The process's CPU time around the same call is the
second figure: it shows what a solver spends in threads of its own (TRAC-IK solves with two
at once), and how much of the wall time other processes took on a shared machine. Solvers
compared in one run take turns target by target, the order alternating (A B, B A, ...), so
a slow spell of the machine falls on all of them alike and their ratios hold.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Iterable, Iterator, TypeVar

from fabrik_ros.chain import Chain
import numpy as np

SEED = 2011             # FABRIK's year: fixed targets, comparable runs
SUCCESS_M = 1e-3        # a solve succeeds when FK of its answer is this close (metres)
SUCCESS_RAD = math.radians(1.0)  # ... and its tool frame this close (full poses)
TIGHT_M, TIGHT_RAD = 1e-4, 1e-3  # fabrik_ros's default tolerances: the share within them too
LIMIT_SLACK_RAD = 1e-9  # an answer further than this outside a limit counts as a violation

T = TypeVar('T')


def timed(call: Callable[[], T]) -> tuple[T, float, float]:
    """Return call()'s answer, its wall time and the process's CPU time, in microseconds."""
    cpu_start = time.process_time_ns()
    wall_start = time.perf_counter_ns()
    answer = call()
    wall = time.perf_counter_ns() - wall_start
    cpu = time.process_time_ns() - cpu_start
    return answer, wall * 1e-3, cpu * 1e-3


def spread(values: Iterable[float]) -> dict[str, float]:
    """Return the median, 90th percentile and maximum of some times (microseconds)."""
    values = np.asarray(list(values), dtype=float)
    return {'median_us': float(np.median(values)), 'p90_us': float(np.percentile(values, 90)),
            'max_us': float(values.max())}


def in_turns(names: Iterable[str], items: Iterable[T]) -> Iterator[tuple[T, str]]:
    """
    Yield (item, name) for every item and every name, the names' order rotated every item.

    Each name goes first as often (two names: A B, B A, ...), so a shared machine's slow
    spells fall on all of them alike and ratios between them hold.
    """
    order = list(names)
    for item in items:
        for name in order:
            yield item, name
        order.append(order.pop(0))


def random_poses(chain: Chain, count: int, rng: np.random.Generator) -> np.ndarray:
    """Return (count, n) joint vectors uniform in the limits (continuous joints: +-pi)."""
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    return rng.uniform(lower, upper, size=(count, chain.dof))


def smooth_poses(chain: Chain, steps: int, rng: np.random.Generator) -> np.ndarray:
    """
    Return joint vectors (steps, n) along a smooth closed path, like a user dragging a target.

    Each joint swings around a random mid-range angle by 1/8 of its range (ranges cut to
    +-pi), once or twice over the whole path.
    """
    lower = np.maximum(chain.lower, -math.pi)
    upper = np.minimum(chain.upper, math.pi)
    middle = lower + (upper - lower) * rng.uniform(0.3, 0.7, chain.dof)
    frequency = rng.integers(1, 3, chain.dof)
    phase = rng.uniform(0.0, 2.0 * math.pi, chain.dof)
    angle = np.linspace(0.0, 2.0 * math.pi, steps)[:, None]
    return middle + (upper - lower) / 8.0 * np.sin(frequency * angle + phase)


FAST_AMPLITUDE_RAD = 0.25  # the fast path: each joint swings this far either way ...
FAST_PERIOD = 200          # ... joint j through j + 1 cycles every this many samples


def fast_poses(chain: Chain, steps: int, rng: np.random.Generator) -> np.ndarray:
    """
    Return joint vectors (steps, n) of fast motion: a target streamed from a moving arm.

    Joint j swings by FAST_AMPLITUDE_RAD around a random mid-range angle, j + 1 cycles every
    FAST_PERIOD samples (the last joint of a 7-DOF arm moves up to 0.055 rad a sample), so
    the solver meets a new pose far from the last one, and often near a wrist flip.
    """
    lower = np.maximum(chain.lower, -math.pi) + FAST_AMPLITUDE_RAD
    upper = np.minimum(chain.upper, math.pi) - FAST_AMPLITUDE_RAD
    middle = lower + (upper - lower) * rng.uniform(0.3, 0.7, chain.dof)
    phase = rng.uniform(0.0, 2.0 * math.pi, chain.dof)
    cycles = np.arange(1, chain.dof + 1)
    angle = 2.0 * math.pi * np.arange(steps)[:, None] / FAST_PERIOD
    return middle + FAST_AMPLITUDE_RAD * np.sin(cycles * angle + phase)


def limit_violation(chain: Chain, q: np.ndarray) -> float:
    """Return how far (radians) q lies outside the limits; 0 inside."""
    return float(np.max(np.maximum(chain.lower - q, 0.0) + np.maximum(q - chain.upper, 0.0)))


def pose_errors(chain: Chain, q: np.ndarray, pose: np.ndarray) -> tuple[float, float]:
    """Return the position (metres) and orientation (radians) errors of FK(q) to a pose."""
    reached = chain.tip_pose(q)
    cosine = (np.trace(reached[:3, :3].T @ pose[:3, :3]) - 1.0) / 2.0
    return (float(np.linalg.norm(reached[:3, 3] - pose[:3, 3])),
            float(np.arccos(np.clip(cosine, -1.0, 1.0))))
