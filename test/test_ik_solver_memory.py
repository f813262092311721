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
Specification of what a solver remembers between solves, and what that memory may change.

A solver keeps its last answer (a seed equal to it reuses its forward kinematics) and, on a
fast track, the move that led there (the next solve seeded with that answer may start ahead
of it). Neither changes a solve seeded anywhere else: that one answers as a solver that
never solved anything, to the bit. A solve seeded with the last answer answers as from its
seed, or reaches its target from ahead of it, within the limits.
"""

from fabrik_ros.chain import quaternion_from_rotation
from fabrik_ros.ik import IkSolver
from hypothesis import given, settings, strategies as st
import numpy as np
from test_ik import assert_within_limits, hypothesis_draws, random_pose, random_serial_chain
from test_ik_tracking import assert_same_answer


@st.composite
def solve_sequences(draw):
    """
    Draw a chain, a path of joint vectors moving up to 0.25 rad a step, and per step a seed.

    The seeds are None where a step is seeded with the last answer, else a random pose;
    oriented: whether the targets are full poses.
    """
    real, integer = hypothesis_draws(draw)
    chain = random_serial_chain(real, integer, min_joints=5)
    step = draw(st.sampled_from([0.05, 0.15, 0.25]))
    path = [random_pose(chain, real)]
    for _ in range(integer(3, 6)):
        move = np.array([real(-1.0, 1.0) for _ in range(chain.dof)]) * step
        path.append(np.clip(path[-1] + move, chain.lower, chain.upper))
    seeds = [None if draw(st.booleans()) else random_pose(chain, real) for _ in path[1:]]
    return chain, path, seeds, draw(st.booleans())


class TestRemembersNothingThatMovesOtherSeeds:
    """A long-lived solver answers other seeds as a new one; its own last answer as a seed."""

    @settings(max_examples=30, deadline=None)
    @given(solve_sequences())
    def test_a_solve_answers_as_a_new_solver_unless_seeded_with_the_last_answer(
            self, sequence):
        chain, path, seeds, oriented = sequence
        solver, reference = IkSolver(chain), IkSolver(chain)
        q = path[0]
        for goal, other in zip(path[1:], seeds):
            target = chain.tip_position(goal)
            options = {'orientation': quaternion_from_rotation(chain.tip_pose(goal)[:3, :3])
                       } if oriented else {}
            seed = q if other is None or np.array_equal(other, q) else other
            result = solver.solve(target, seed, **options)
            # A traced solve remembers nothing and always runs the full solve, the lean
            # paths' reference to the bit.
            fresh = reference.solve(target, seed.copy(), trace=True, **options)
            assert_within_limits(chain, result.q)
            if seed is not q or not result.reached:
                assert_same_answer(result, fresh)
            elif not np.array_equal(result.q, fresh.q):
                assert result.error <= solver.tolerance     # reached from ahead of the seed
            q = result.q
