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


"""The answer of a solve (IkResult) and what a solve did (its counters and history)."""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import NamedTuple

import numpy as np

from .model import _Tree
from .orientations import _Orientations
from .points import _State
from .rotations import _ORIGIN, _product, _rotation_error


@dataclass
class IkResult:
    """
    Outcome of one solve.

    q: (n,) radians, always within the joint limits. effector_positions: (m, 3) metres in
    the base frame, FK(q) (with base_position added for a free root). errors: (m,) metres
    from each effector to its target, NaN where it had none; error: their maximum.
    history: the weighted error sqrt(sum w_i d_i^2) over effectors with a target or a held
    pose (d_i metres, w_i their weights, see IkSolver) of the best pose so far after the
    seed and after each iteration, so it never grows; trace: the matching joint vectors
    when solve(..., trace=True), else None. timed_out: the time budget ended the solve
    (the answer is the best pose found until then). Orientation errors count in the
    history as orientation_scale metres per radian (weight 1). A full pose split at a
    spherical wrist (see IkSolver) logs its seed and its answer only.
    orientation_errors: (m,) radians per effector with an orientation target: the angle
    between the target frame and the reached tool frame ('full' and 'position' modes), or
    between the target's and the tool's axes ('axis'); NaN where it had none;
    orientation_error: their maximum (NaN for a position-only solve); the reached tool
    frames are chain.effector_poses(q). reached: every error within its tolerance (the
    orientation errors of effectors in 'position' mode are reported, not required).
    clearance: metres, the smallest distance over the checked pairs (links against each
    other and against the obstacles; < 0 penetration; inf with nothing to check), never
    above the true distance of the geometries; closest_pair: that pair's names (a link,
    then a link or 'obstacle 2 (box)'). A reached answer is at least the solver's
    collision_margin clear.
    """

    q: np.ndarray
    error: float
    errors: np.ndarray
    iterations: int
    reached: bool
    base_position: np.ndarray
    effector_positions: np.ndarray
    fabrik_iterations: int = 0      # accepted FABRIK iterations, all attempts
    closing_steps: int = 0          # accepted damped least-squares steps, all attempts
    restarts: int = 0               # attempts from other seeds after a stall
    initial_error: float = 0.0      # metres, at the seed (max over targets)
    fabrik_error: float = 0.0       # metres, after the first FABRIK stage (NaN: none ran)
    history: list[float] = field(default_factory=list)
    trace: list[np.ndarray] | None = None
    timed_out: bool = False
    orientation_error: float = math.nan
    orientation_errors: np.ndarray = field(default_factory=lambda: np.empty(0))
    clearance: float = math.inf
    closest_pair: tuple[str, str] = ('', '')


class _Steps(NamedTuple):
    """What a solve did, for its IkResult (see there)."""

    fabrik_iterations: int
    closing_steps: int
    restarts: int
    initial_error: float
    fabrik_error: float
    history: list[float]
    trace: list[np.ndarray] | None
    timed_out: bool


def _packaged(state: _State, tree: _Tree, targets: list, rotations: list | None,
              steps: _Steps, orientations: _Orientations | None, tolerance: float,
              orientation_tolerance: float) -> IkResult:
    """
    Return a final state as an IkResult; errors are measured from its forward kinematics.

    orientations: the solve's, whose errors of the state are reused where it has them.
    tolerance, orientation_tolerance: metres and radians, what reached requires.
    """
    if len(tree.tool_points) == 1:
        return _one_tool_packaged(state, tree, targets[0], rotations, steps, orientations,
                                  tolerance, orientation_tolerance)
    positions = list(map(state.points.__getitem__, tree.tool_points))
    errors = [math.dist(goal, position) if goal is not None else math.nan
              for goal, position in zip(targets, positions)]
    error = max([e for e in errors if e == e])  # NaN != NaN: effectors without one
    reached = error <= tolerance
    angles = [math.nan] * len(positions)
    orientation_error = math.nan
    if rotations is not None:   # position-only solves skip the orientation bookkeeping
        # The errors sought (measured already, most likely of this state) decide reached;
        # those of effectors in 'position' mode are reported only.
        found = []
        if orientations is not None:
            found = orientations.errors(state)
            for item, (angle, _, _) in zip(orientations.items, found):
                angles[item[0]] = angle
                reached = reached and angle <= orientation_tolerance
        if len(found) < len(rotations) - rotations.count(None):
            for index, (effector, rotation) in enumerate(zip(tree.effectors, rotations)):
                if rotation is not None and angles[index] != angles[index]:
                    tool = _product(state.frames[effector.parent][:9], effector.tool)
                    angles[index] = _rotation_error(tool, rotation)[0]
        orientation_error = max([a for a in angles if a == a], default=math.nan)
    return IkResult(
        q=np.array(state.q), error=error, errors=np.array(errors),
        iterations=steps.fabrik_iterations + steps.closing_steps, reached=reached,
        base_position=np.array(state.base),
        effector_positions=np.array(positions), fabrik_iterations=steps.fabrik_iterations,
        closing_steps=steps.closing_steps, restarts=steps.restarts,
        initial_error=steps.initial_error, fabrik_error=steps.fabrik_error,
        history=steps.history, trace=steps.trace, timed_out=steps.timed_out,
        orientation_error=orientation_error, orientation_errors=np.array(angles))


def _one_tool_packaged(state: _State, tree: _Tree, target: tuple[float, float, float],
                       rotations: list | None, steps: _Steps,
                       orientations: _Orientations | None, tolerance: float,
                       orientation_tolerance: float) -> IkResult:
    """Return _packaged's answer for one effector (it has the target), with less to do."""
    position = state.points[tree.tool_points[0]]
    error = math.dist(target, position)
    reached = error <= tolerance
    angle = math.nan
    if orientations is not None:    # one effector with an orientation sought: one item
        (angle, _, _), = orientations.errors(state)
        reached = reached and angle <= orientation_tolerance
    elif rotations is not None and rotations[0] is not None:    # 'position' mode: reported
        effector = tree.effectors[0]
        angle = _rotation_error(_product(state.frames[effector.parent][:9], effector.tool),
                                rotations[0])[0]
    fabrik, closing, restarts, initial, fabrik_error, history, trace, timed_out = steps
    # IkResult's fields in its order, positional (keywords cost a tracking solve 0.5 µs), its
    # arrays from tuples and a pinned root's origin as zeros: numpy makes those quicker.
    base = np.zeros(3) if state.base is _ORIGIN else np.array(state.base)
    return IkResult(np.array(state.q), error, np.array((error,)), fabrik + closing, reached,
                    base, np.array((position,)), fabrik, closing, restarts, initial,
                    fabrik_error, history, trace, timed_out, angle, np.array((angle,)))
