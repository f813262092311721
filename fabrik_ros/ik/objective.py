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
The objective a pass minimises: sum w_i d_i^2, its excess over the floors, the miss.

d_i: metres from effector i to its goal; w_i its weight; a floor is the distance by which
a target lies beyond its effector's reach (a lower bound of d_i). Orientation errors count
as metres through orientation_scale, with weight 1.
"""

from __future__ import annotations

import math
from operator import mul
from typing import NamedTuple, Sequence

from .points import _State

_new_tuple = tuple.__new__     # a _Score from its fields without NamedTuple's Python __new__


class _Score(NamedTuple):
    """How well a state meets the goals."""

    objective: float            # m^2, sum of w_i d_i^2: what the solver minimises
    error: float                # metres, the largest d_i
    excess: float               # metres, sqrt(sum w_i e_i^2), e_i = d_i above its floor
    distances: list[float]      # metres, d_i per effector
    miss: float                 # metres, the largest d_i in groups with no target beyond
    #                             reach (see _Group)
    shares: tuple[float, ...]   # m^2, each group's part of the objective (if several)


class _Objective:
    """
    _Solve's scoring of states (reads its goals, weights, floors, groups, judged).

    lone: one effector's (goal, point, weight) where it is all the pass scores (no
    orientation, no floor), else None: measure then does score's arithmetic in one call.
    """

    __slots__ = ()

    def measure(self, state: _State) -> _Score:
        """Return how well the state meets the goals."""
        if self.lone is not None:   # score's one-effector case, its floats to the bit
            goal, point, weight = self.lone
            distance = math.dist(goal, state.points[point])
            objective = weight * (distance * distance)
            return _new_tuple(_Score, (objective, distance, max(math.sqrt(objective), 1e-15),
                                       [distance], distance, ()))
        points = state.points
        goals = self.goals
        distances = [math.dist(goals[0], points[self.goal_points[0]])] if len(goals) == 1 \
            else [math.dist(goal, points[p]) for goal, p in zip(goals, self.goal_points)]
        return self.score(distances,
                          self.orientations.squares(state) if self.orientations else ())

    def score(self, distances: list[float], turned: Sequence[float] = ()) -> _Score:
        """
        Return how well a pose whose effectors are `distances` from their goals does.

        turned: the squared orientation errors as metres^2 (see _Orientations); they count
        in the objective, the error and the excess with weight 1.
        """
        if len(distances) == 1:     # one effector (most solves, every iteration): the same
            (distance,), (weight,), (floor,) = distances, self.weights, self.floors
            objective = weight * (distance * distance) + sum(turned)
            error = distance if not turned else max(distance, math.sqrt(max(turned)))
            if floor:
                excess = math.sqrt(weight * max(distance - floor, 0.0) ** 2 + sum(turned))
                return _Score(objective, error, max(excess, 1e-15), distances, 0.0, ())
            return _Score(objective, error, max(math.sqrt(objective), 1e-15), distances, error,
                          ())
        terms = list(map(mul, self.weights, map(mul, distances, distances)))
        objective = sum(terms) + sum(turned)
        shares = ()
        if len(self.groups) > 1:
            shares = tuple(sum(terms[i] for i in group.effectors) for group in self.groups)
        error = max(distances)
        if turned:
            error = max(error, math.sqrt(max(turned)))
        if self.out_of_reach:
            excess = math.sqrt(sum(w * max(d - f, 0.0) ** 2 for w, d, f
                                   in zip(self.weights, distances, self.floors)) + sum(turned))
            miss = max((distances[i] for i in self.judged), default=0.0)
        else:
            excess, miss = math.sqrt(objective), error
        return _Score(objective, error, max(excess, 1e-15), distances, miss, shares)
