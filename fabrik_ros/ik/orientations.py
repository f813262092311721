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


"""The orientation objective: tool frames' errors, as metres through orientation_scale."""

from __future__ import annotations

import math
from typing import Sequence

from .model import _Tree
from .points import _State
from .rotations import _apply, _axis_error, _rotation_vector, _turn


class _Orientations:
    """
    The orientation targets of one solve, in the solver's units.

    An orientation error of angle a counts as a distance of `scale` * a metres (scale =
    tolerance / orientation_tolerance), so one objective, the sum of squares, weighs both,
    and an error within the position tolerance means within both tolerances. Per targeted
    effector: its index, mode ('full' or 'axis'), target rotation (9-tuple, base frame),
    tool axis (tool frame), target axis (base frame; None for 'full', which compares whole
    frames) and aim: what its parent joint's frame F is compared with, the target rotation
    times the tool's inverse ('full': the turn onto the target is aim @ F^T) or the tool
    axis in F ('axis': the reached axis is F @ aim).
    """

    def __init__(self, tree: _Tree, rotations: list[tuple[float, ...] | None],
                 modes: Sequence[str], axes: Sequence[tuple[float, float, float]],
                 scale: float) -> None:
        self.tree = tree
        self.scale = scale
        self.items = []
        for index, rotation in enumerate(rotations):
            mode = modes[index]
            if rotation is None or mode == 'position':
                continue
            axis, tool = axes[index], tree.effectors[index].tool
            self.items.append((index, mode, rotation, axis, None, _turn(rotation, tool))
                              if mode == 'full' else
                              (index, mode, rotation, axis, _apply(rotation, axis),
                               _apply(tool, axis)))
        self._measured: _State | None = None
        self._found: list = []
        self.goals: list[tuple[float, float, float]] = []  # per marker, see marker_goals()

    def errors(self, state: _State) -> list[tuple[float, tuple[float, float, float],
                                                  tuple[float, ...]]]:
        """
        Return per targeted effector (angle, rotation vector, what was compared).

        What was compared: the turn onto the target (9-tuple, 'full') or the reached tool
        axis ('axis'), base frame.
        """
        if state is self._measured:
            return self._found
        found = []
        effectors, frames = self.tree.effectors, state.frames
        for index, mode, _, _, target_axis, aim in self.items:
            frame = frames[effectors[index].parent]
            if mode == 'full':
                turn = _turn(aim, frame)
                angle, vector = _rotation_vector(turn)
                found.append((angle, vector, turn))
            else:
                reached = _apply(frame, aim)
                angle, vector = _axis_error(reached, target_axis)
                found.append((angle, vector, reached))
        self._measured, self._found = state, found     # measured, then stepped from
        return found

    def squares(self, state: _State) -> list[float]:
        """Return the squared orientation errors, as metres^2 (see the class docstring)."""
        # (scale * angle) squared by a product, as _one_effector_fit squares it: ** 2 (C's
        # pow) may round differently, and the tracking path must answer the full solve's
        # answer to the bit.
        scale = self.scale
        squared = []    # (a loop: no comprehension's frame per call, mostly for one item)
        for angle, _, _ in self.errors(state):
            squared.append(scale * angle * (scale * angle))
        return squared

    def marker_goals(self, goals: list[tuple[float, float, float]]
                     ) -> list[tuple[float, float, float]]:
        """Return where the tools' marker points go: the target frames' points (metres)."""
        tree = self.tree
        found: list[tuple[float, float, float] | None] = [None] * (len(tree.effectors)
                                                                   - tree.tools)
        for index, _, rotation, _, _, _ in self.items:
            gx, gy, gz = goals[index]
            for marker, local in zip(tree.markers[index], tree.marker_points[index]):
                dx, dy, dz = _apply(rotation, local)
                found[marker - tree.tools] = (gx + dx, gy + dy, gz + dz)
        return found

    def placed(self, state: _State, goals: list[tuple[float, float, float]]
               ) -> dict[int, tuple[float, float, float]]:
        """
        Return where the tools' rigid bodies put their parent joints' points (FABRIK pass 1).

        The tool and the point of the joint it hangs from are one rigid body: with the tool
        on its target frame, that point goes where the body takes it ('full'), or, with the
        roll about the tool axis free ('axis'), to the nearest such place.
        """
        tree = self.tree
        placed = {}
        for (index, mode, _, _, target_axis, _), (_, _, compared) in zip(
                self.items, self.errors(state)):
            effector = tree.effectors[index]
            if effector.parent < 0:
                continue
            point = tree.joints[effector.parent].point
            if point in tree.root_rigid:
                continue
            px, py, pz = state.points[point]
            tx, ty, tz = state.points[effector.point]
            gx, gy, gz = goals[index]
            rel = (px - tx, py - ty, pz - tz)
            if mode == 'full':     # compared: the turn onto the target frame
                dx, dy, dz = _apply(compared, rel)
                placed[point] = (gx + dx, gy + dy, gz + dz)
                continue
            ax, ay, az = compared   # the reached tool axis
            height = rel[0] * ax + rel[1] * ay + rel[2] * az
            radial = math.sqrt(max(sum(v * v for v in rel) - height * height, 0.0))
            bx, by, bz = target_axis
            wx, wy, wz = px - gx, py - gy, pz - gz
            along = wx * bx + wy * by + wz * bz
            wx, wy, wz = wx - along * bx, wy - along * by, wz - along * bz
            norm = math.sqrt(wx * wx + wy * wy + wz * wz)
            scale = radial / norm if norm > 1e-12 else 0.0
            placed[point] = (gx + height * bx + scale * wx, gy + height * by + scale * wy,
                             gz + height * bz + scale * wz)
        return placed

    def extend(self, state: _State, rows: list[list[float]], residual: list[float]) -> None:
        """
        Append the orientation rows of the Jacobian and the residual, scaled to metres.

        A joint turns the tool about its own axis: the rows are that axis times scale, for
        the joints that move the tool; with a free roll ('axis') the part along the tool axis
        changes nothing and is taken out. The residual is the rotation vector times scale.
        """
        width = len(rows[0])
        scale = self.scale
        frames = state.frames
        tree = self.tree
        turning = tree.turning
        found = self.errors(state)
        for (index, mode, *_), (_, (vx, vy, vz), compared) in zip(self.items, found):
            if mode == 'full':
                rx, ry, rz = tree.turns[index](frames, scale)
                if width > len(rx):     # a free root's columns: translating turns nothing
                    rx, ry, rz = (row + [0.0] * (width - len(row)) for row in (rx, ry, rz))
            else:   # the part along the reached tool axis changes nothing: taken out
                rx, ry, rz = [0.0] * width, [0.0] * width, [0.0] * width
                ax, ay, az = compared
                for j, c, m in turning[index]:
                    frame = frames[j]
                    ux, uy, uz = frame[2], frame[5], frame[8]
                    along = ux * ax + uy * ay + uz * az
                    m *= scale
                    rx[c] += m * (ux - along * ax)
                    ry[c] += m * (uy - along * ay)
                    rz[c] += m * (uz - along * az)
            rows += [rx, ry, rz]
            residual += [scale * vx, scale * vy, scale * vz]


def _one_effector_fit(state: _State, goal: tuple[float, float, float], point: int,
                      orientations: _Orientations | None) -> tuple[float, float]:
    """Return one effector's objective and error at weight 1, as _Solve.score does."""
    distance = math.dist(goal, state.points[point])
    if orientations is None:
        return distance * distance, distance
    (angle, _, _), = orientations.errors(state)
    turned = orientations.scale * angle     # metres, see _Orientations
    # max(distance, turned), without the call (a tracking solve measures two fits)
    return distance * distance + turned * turned, turned if turned > distance else distance
