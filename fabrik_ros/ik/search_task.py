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
The collision search's terms: joint frames and point Jacobians, the target's residual.

Geometry: a chain's joint axes, point Jacobians and tool frames from its FK frames (the
closing steps' constraints move the closest points of near pairs with them). Task: the
target's weighted residual and its Jacobian, weighed as the solver weighs them
(fabrik_ros.ik.collisions runs the search).
"""

from __future__ import annotations

import math
from typing import Iterable, TYPE_CHECKING

import numpy as np

from .rotations import _rotation_error
from .tuning import HELD_WEIGHT

if TYPE_CHECKING:   # the solver imports the search, which imports this module
    from fabrik_ros.collision import CollisionModel

    from .collisions import Problem
    from .solver import IkSolver

# a x p = [a]x p: _SKEW maps a (3,) to [a]x, row-major (9,).
_SKEW = np.zeros((3, 9))
_SKEW[[2, 1, 2, 0, 1, 0], [1, 2, 3, 5, 6, 7]] = [-1.0, 1.0, 1.0, -1.0, -1.0, 1.0]


class Geometry:
    """A chain's joint frames, point Jacobians and tool frames from its FK frames."""

    def __init__(self, chain: object, model: CollisionModel) -> None:
        """Stack the joints' axes, which joints move each frame, and the coupling."""
        joints = chain.joints
        count = len(joints)
        self.axes_local = np.array([joint.axis for joint in joints], dtype=float)
        self.prismatic = np.array([joint.prismatic for joint in joints], dtype=bool)
        self.any_prismatic = bool(np.any(self.prismatic))
        moves = np.zeros((count + 1, count), dtype=bool)     # frame row -> its joints
        for index, joint in enumerate(joints):
            moves[index + 1] = moves[joint.parent + 1]
            moves[index + 1, index] = True
        self.moves = moves
        coupling = np.zeros((count, chain.dof))
        coupling[np.arange(count), chain.coordinate_of_joint] = (
            chain.multipliers if chain.coupled else 1.0)
        self.coupling = coupling
        self.body_frames = np.array([body.frame for body in model.bodies], dtype=int)
        self.tool_rows = np.array([effector.parent + 1 for effector in chain.effectors],
                                  dtype=int)
        tools = np.tile(np.eye(4), (len(chain.effectors), 1, 1))
        for row, effector in enumerate(chain.effectors):
            tools[row, :3, :3] = effector.rotation
            tools[row, :3, 3] = effector.offset
        self.tools = tools

    def axes(self, world: np.ndarray) -> np.ndarray:
        """Return the (n, 3) joint axes in the base frame."""
        return np.einsum('nij,nj->ni', world[1:, :3, :3], self.axes_local)

    def point_jacobians(self, world: np.ndarray, axes: np.ndarray, points: np.ndarray,
                        frames: np.ndarray) -> np.ndarray:
        """Return (k, 3, dof): how points (k, 3) fixed in frames (k,) move per coordinate."""
        # a x (p - o) for every joint and point in two products: [a]x stacked (3 n, 3).
        skew = (axes @ _SKEW).reshape(-1, 3, 3)
        jacobian = (skew.reshape(-1, 3) @ points.T).reshape(skew.shape[0], 3, -1) - \
            np.einsum('nij,nj->ni', skew, world[1:, :3, 3])[:, :, None]     # (n, 3, k)
        if self.any_prismatic:
            jacobian[self.prismatic] = axes[self.prismatic][:, :, None]
        jacobian *= self.moves[frames].T[:, None, :]
        return np.einsum('nck,nd->kcd', jacobian, self.coupling)

    def turn_jacobians(self, axes: np.ndarray, frames: np.ndarray) -> np.ndarray:
        """Return (k, 3, dof): the angular velocity of frames (k,) per coordinate."""
        turn = np.where(self.prismatic[:, None], 0.0, axes)[None] * self.moves[frames][..., None]
        return np.einsum('knc,nd->kcd', turn, self.coupling)

    def tool_frames(self, world: np.ndarray) -> np.ndarray:
        """Return the (m, 4, 4) tool frames."""
        return world[self.tool_rows] @ self.tools


def goal_turns(solver: IkSolver, rotations: list) -> list[tuple]:
    """Return (row, mode, (3, 3) target rotation, (3,) tool axis) per effector with one."""
    return [(row, mode, np.array(rotation).reshape(3, 3), np.asarray(axis, dtype=float))
            for row, (rotation, mode, axis) in enumerate(
                zip(rotations, solver.orientation_modes, solver.tool_axes))
            if rotation is not None]


def goals_met(tolerance: float, orientation_tolerance: float, errors: Iterable[float],
              turns: Iterable[tuple[str, float]]) -> bool:
    """
    Return whether a pose meets its goals, as the solver's tolerances say.

    errors: the targeted effectors' distances (m), each within tolerance; turns: (mode,
    angle in rad) of each effector with a target rotation, within orientation_tolerance
    unless its mode is 'position'.
    """
    return all(error <= tolerance for error in errors) and all(
        angle <= orientation_tolerance for mode, angle in turns if mode != 'position')


class Task:
    """The target's weighted residual and its Jacobian, as the solver weighs them."""

    def __init__(self, solver: IkSolver, geometry: Geometry, problem: Problem) -> None:
        """Gather the goals: targets, held effectors at the seed, orientations by mode."""
        self.geometry = geometry
        self.tolerance = solver.tolerance
        self.orientation_tolerance = solver.orientation_tolerance
        self.scale = solver.orientation_scale
        held = (geometry.tool_frames(solver.chain.world_frames(problem.seed))[:, :3, 3]
                if any(goal is None for goal in problem.targets) else None)   # FK if needed
        self.goals = [np.asarray(goal, dtype=float) if goal is not None else held[row]
                      for row, goal in enumerate(problem.targets)]
        self.targeted = [goal is not None for goal in problem.targets]
        self.weights = np.sqrt([
            solver.effector_weights.get(name, 1.0 if goal is not None else HELD_WEIGHT)
            for name, goal in zip(solver.chain.effector_names, problem.targets)])
        rotations = problem.rotations or [None] * len(problem.targets)
        rows = 3 * len(self.goals) + sum(
            {'full': 3, 'axis': 2}.get(mode, 0) for rotation, mode in zip(
                problem.rotations or [], solver.orientation_modes) if rotation is not None)
        self.redundant = solver.chain.dof > rows
        self.turns = goal_turns(solver, rotations)

    def residual(self, world: np.ndarray, jacobian: bool
                 ) -> tuple[np.ndarray, np.ndarray | None, bool]:
        """Return the residual, its Jacobian (if asked) and whether the goals are met."""
        tools = self.geometry.tool_frames(world)
        positions = tools[:, :3, 3]
        parts = [weight * (goal - position)
                 for goal, position, weight in zip(self.goals, positions, self.weights)]
        errors = [math.dist(goal, position)
                  for goal, position, targeted in zip(self.goals, positions, self.targeted)
                  if targeted]
        angles = []
        rows = []
        axes = self.geometry.axes(world) if jacobian else None
        if jacobian:
            frames = self.geometry.tool_rows
            rows = list(self.geometry.point_jacobians(world, axes, positions, frames)
                        * self.weights[:, None, None])
        for row, mode, rotation, axis in self.turns:
            reached = tools[row, :3, :3]
            if mode == 'full':
                angle, vector = _rotation_error(reached.ravel().tolist(),
                                                rotation.ravel().tolist())
                parts.append(self.scale * np.array(vector))
            else:
                current, wanted = reached @ axis, rotation @ axis
                angle = math.acos(max(-1.0, min(1.0, float(current @ wanted))))
                parts.append(self.scale * (wanted - current) if mode == 'axis'
                             else np.zeros(3))
            angles.append((mode, angle))
            if jacobian:
                turn = self.geometry.turn_jacobians(axes, self.geometry.tool_rows[[row]])[0]
                rows.append(self.scale * (turn if mode == 'full' else
                                          np.cross(turn.T, current).T if mode == 'axis'
                                          else np.zeros_like(turn)))
        stacked = np.concatenate(rows) if jacobian else None
        met = goals_met(self.tolerance, self.orientation_tolerance, errors, angles)
        return np.concatenate(parts), stacked, met
