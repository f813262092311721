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
The collision check's lean path: the first clear exact solution, from the solver's own FK.

A closed form of the UR family answers with the solution nearest the seed whatever it
hits; where that answer reached its target and collides, its other exact solutions
(fabrik_ros.ik.branches: all of the pose's, nearest the seed first) are the answers to
try before any search (fabrik_ros.ik.collisions). Each is placed by the solver's sweep and
checked from those frames (fabrik_ros.ik.answer_frames), first on the pairs that ruled
out those before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabrik_ros.collision.nearest import CheckRows, nearest_pair

from .branches import exact_solutions
from .result import _Steps, IkResult
from .rotations import _ORIGIN
from .search_task import goals_met

if TYPE_CHECKING:   # the collisions module imports this one
    from .collisions import Collisions, Problem
    from .solver import IkSolver


def first_clear_solution(collisions: Collisions, solver: IkSolver, answer: IkResult,
                         problem: Problem, rows: CheckRows, pair: int) -> IkResult | None:
    """
    Return the first clear exact solution, nearest the seed first, as the solve's answer.

    For an answer that reached its target (the caller's check), where the closed form
    lists all of the pose's solutions (exact_solutions) and the answer's frames are the
    solver's: each measured from the solver's own FK, first on the pairs closer than
    the margin at those before (pair: one at the answer); the clear one is packaged as
    the solver packages an answer (its errors measured once), and reached if its goals
    are met. None: no such list, no clear solution, its goals not met or the time up (the
    search then runs as without it).
    """
    tree, state = solver._last
    chain, margin = collisions.chain, collisions.margin
    seed = collisions.neutral if problem.seed is None else chain.clip(problem.seed).tolist()
    solutions = (problem.rotations is not None and state.q == answer.q.tolist()
                 and exact_solutions(getattr(solver._split, 'arm', None),
                                     problem.targets[0], problem.rotations[0], seed,
                                     solver.limits.lower, solver.limits.upper))
    if not solutions or not solutions[1]:
        return None
    colliding = [pair]
    for q in solutions[0]:
        if solver.clock() > problem.deadline:
            return None
        if q == state.q:
            continue
        found = tree.sweep(q, _ORIGIN)
        distance, nearest, _ = nearest_pair(rows, None, margin,
                                            collisions._frames.placed(rows, found), colliding)
        if distance < margin:
            if nearest not in colliding:    # (a suspect found again)
                colliding.append(nearest)
            continue
        result = solver._result(found, tree, problem.targets, problem.rotations, _Steps(
            answer.fabrik_iterations, answer.closing_steps, answer.restarts,
            answer.initial_error, answer.fabrik_error, answer.history, answer.trace,
            answer.timed_out))
        result.reached = result.reached and goals_met(
            solver.tolerance, solver.orientation_tolerance, [],
            [(solver.orientation_modes[0], result.orientation_error)])
        result.clearance, result.closest_pair = distance, collisions.pair_names(nearest)
        return result if result.reached else None
    return None
