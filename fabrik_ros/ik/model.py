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
The point model FABRIK sees: the base, distinct joint origins and effectors of a Chain.

Co-located joints (a spherical wrist) form one multi-axis point. The model holds the
compiled sweep (plain FK, and FABRIK's root-to-tip pass), the Jacobians and Hessians;
the tip-to-root pass is in passes.
"""

from __future__ import annotations

from typing import Sequence

from fabrik_ros.chain import Chain
import numpy as np

from .layout import (_ball_joints, _effector_records, _fit_lists, _joint_records,
                     _lay_out_points, _with_markers)
from .points import _Effector, _Fit, _Joint, _State
from .rotations import _ORIGIN
from .sweep import _compiled_sweep
from .tuning import KEPT_WEIGHTS

_new_tuple = tuple.__new__     # a _State from its fields without NamedTuple's Python __new__


class _Tree:
    """
    The chain compiled for the solver: canonical frames and the point tree.

    Canonical frame of joint j: its URDF frame (after its motion) times C_j, where C_j's z
    column is the joint axis; a rotation by q is then Rz(q), a translation q along z.
    neutral: the state of the chain's neutral pose.
    Point 0 is the base origin; points are numbered depth-first, parents first. A prismatic
    joint's origin is a point of its own, whose distance to its parent point slides.
    Building it takes time and memory linear in the number of joints.

    markers: per effector, points fixed in its tool frame (metres) that become effectors of
    their own, after the chain's: the multi-point end effector of orientation solves, whose
    points the passes fit like any other. `tools` counts the chain's own effectors.
    """

    def __init__(self, chain: Chain, markers: Sequence[Sequence[np.ndarray]] = ()) -> None:
        self.tools = len(chain.effectors)
        self.marker_points = [[tuple(map(float, point)) for point in points]
                              for points in markers]    # metres, tool frame
        effectors, self.markers, self.marker_owners = _with_markers(chain, markers)
        layout = _lay_out_points(chain, effectors)
        self.root_rigid = layout.root_rigid  # points fixed to the base link (no joint between)
        lower, upper = chain.lower.tolist(), chain.upper.tolist()
        self.lower, self.upper = lower, upper   # per independent joint
        self.joints: list[_Joint] = _joint_records(chain, layout)
        self.effectors: list[_Effector] = _effector_records(chain, effectors, layout)
        self.effector_links = [(e.parent, e.point, e.offset) for e in self.effectors]
        self.marker_point_set = {e.point for e in self.effectors[self.tools:]}
        parent_point, length, sliding = layout.parent_point, layout.length, layout.sliding
        self.n_points = len(parent_point)
        # Per point its children and their distance (None: it slides, measure it).
        self.children: list[list[tuple[int, float | None]]] = [[] for _ in parent_point]
        for point in range(1, self.n_points):
            self.children[parent_point[point]].append(
                (point, None if sliding[point] else length[point]))
        # Joint points (not the root, not effectors), children before parents.
        effector_points = set(layout.effector_point)
        self.inner_points = [k for k in range(self.n_points - 1, 0, -1)
                             if k not in effector_points]
        self.chain_links = _chain_links(self.inner_points, self.children, effector_points)
        self.ball_joints = _ball_joints(chain, layout.point_of_joint)
        self.whole_fit, self.next_fit, self.straight_fit = _fit_lists(
            self.joints, self.children, layout)
        # Plain FK, and per effector its Jacobian's rows and Hessian, and per tool of a tree
        # with marker points its orientation rows and its full pose's kernels (the six rows
        # and the damped step), of a single effector its position rows' damped step, plain
        # and steered off the limits, and the forward kinematics of the plain one added to
        # the joints within their limits (see _compiled_sweep).
        self._forward, self._rows, self._hessians, self.turns, self.pose_kernels, \
            self.position_steps, self.position_moves = _compiled_sweep(self)
        # Per effector, its Jacobian's columns: (joint, coordinate, multiplier, prismatic).
        self.columns = [tuple((j, self.joints[j].coordinate, self.joints[j].multiplier,
                               self.joints[j].prismatic) for j in effector.joints)
                        for effector in self.effectors]
        self.tool_points = [effector.point for effector in self.effectors[:self.tools]]
        # Per effector, the joints that turn it: (joint, coordinate, multiplier); a slide
        # does not, and a mimic joint adds its column, times its multiplier, to its leader's.
        self.turning = [tuple((j, c, m) for j, c, m, prismatic in columns if not prismatic)
                        for columns in self.columns]
        # Root-to-tip passes, compiled per fit list on first use: {ids of the fits: [fits,
        # function, its variant from the neutral state (compiled on first use, see sweep)]};
        # holding the fits keeps their ids unique.
        self._fittings: dict[tuple[int, ...], list] = {}
        # The last pass used and its fits list: the next pass with that list needs no key.
        self._fitting: list = [None, None, None]
        # Per point the weight below it, per (goal points, weights): see subtree_weights.
        self._subtree_weights: dict[tuple[tuple[int, ...], tuple[float, ...]], list[float]] = {}
        self.neutral = self.sweep(chain.neutral().tolist(), _ORIGIN)
        self._made_from = (chain, markers)

    def __reduce__(self) -> tuple:
        """Pickle as the chain (and markers) it compiles: the compiled sweeps are made anew."""
        return _Tree, self._made_from

    @staticmethod
    def fit_points(fit: _Fit) -> list[int]:
        """Return the points of a fit."""
        return [k for first, stop, _ in fit for k in range(first, stop)]

    def sweep(self, q: list[float], base: tuple[float, float, float],
              desired: list[tuple[float, float, float]] | None = None,
              old: _State | None = None,
              fits: list[_Fit] | None = None) -> _State:
        """
        Run forward kinematics root to tips; with `desired` points, choose q on the way.

        Without `desired` this is plain FK of q (the independent joints, radians or metres)
        from the root point `base` (metres). With it, `old` (the state the desired points
        were made from) and `fits` (per joint, see whole_fit), each deciding joint takes the
        in-limit angle (or slide) that best moves its fit points, rigid below it as in
        `old`, onto their desired points: FABRIK's root-to-tip pass. Mimic joints follow.
        From the neutral state (a solve's first pass from the neutral seed) a variant with
        that state's own terms computed once, as constants, does the same arithmetic less.
        """
        if desired is None:
            q, frames, points = self._forward(q, base)
        else:
            fitting = self._fitting
            if fitting[0] is not fits:  # else the same fits as the last pass: no key to make
                key = tuple(map(id, fits))
                if key not in self._fittings:
                    self._fittings[key] = [fits, _compiled_sweep(self, fits)[0], None]
                fitting = self._fitting = self._fittings[key]
            if old is self.neutral:     # a solve's first pass from the neutral seed
                if fitting[2] is None:
                    fitting[2] = _compiled_sweep(self, fits, old)[0]
                q, frames, points = fitting[2](q, base, old.frames, old.points, desired)
            else:
                q, frames, points = fitting[1](q, base, old.frames, old.points, desired)
        return _new_tuple(_State, (q, base, frames, points))

    def subtree_weights(self, goal_points: list[int], weights: list[float]) -> list[float]:
        """
        Return per point the summed weight of the goal points (effectors) at or below it.

        The same goals and weights come back solve after solve: the totals are kept (a few
        sets; not to be modified).
        """
        key = (tuple(goal_points), tuple(weights))
        totals = self._subtree_weights.get(key)
        if totals is None:
            totals = [0.0] * self.n_points
            for point, weight in zip(goal_points, weights):
                totals[point] = weight
            for point in self.inner_points + [0]:
                totals[point] += sum(totals[child] for child, _ in self.children[point])
            if len(self._subtree_weights) >= KEPT_WEIGHTS:
                self._subtree_weights.clear()
            self._subtree_weights[key] = totals
        return totals

    def jacobian(self, state: _State, free_root: bool, effectors: list[int]
                 ) -> list[list[float]]:
        """
        Return the position Jacobian rows (3 per effector listed), metres per radian (or metre).

        Columns: the n independent joints (a mimic joint adds its column, times its
        multiplier, to its leader's), then the root's x, y, z when it is free.
        """
        rows: list[list[float]] = []
        frames, points = state.frames, state.points
        for index in effectors:
            rows += self._rows[index](frames, *points[self.effectors[index].point])
        if free_root:
            for axis, row in enumerate(rows):
                row += (0.0, 0.0, 0.0)
                row[-3 + axis % 3] = 1.0
        return rows

    def hessian(self, state: _State, index: int, weight: float,
                goal: tuple[float, float, float]) -> tuple[list[float], list[list[float]]]:
        """
        Return an effector's J^T w r per coordinate and its objective's Hessian (m^2).

        The objective is w |goal - x|^2 / 2, r = goal - x, so J^T w r is minus its gradient;
        the Hessian is w J^T J - C, its lower triangle by coordinate rows. C = w r . d2x/dq2
        is the term Gauss-Newton drops, as large as the rest out of reach: for joints j
        upstream of k (or j = k) on the effector's path d2x/dq_j dq_k is a_j x J_k for a
        turning j, 0 for a sliding one, so their entry is J_k . u_j with u_j = w J_j -
        (w r) x a_j. A mimic joint adds its entries, times its multiplier, to its leader's.
        Compiled per effector like its Jacobian's rows (_hessian_source) where its path has
        at most COMPILED_PAIRS pairs of joints, with numpy beyond.
        """
        ex, ey, ez = state.points[self.effectors[index].point]
        px, py, pz = weight * (goal[0] - ex), weight * (goal[1] - ey), weight * (goal[2] - ez)
        if self._hessians[index] is not None:
            return self._hessians[index](state.frames, ex, ey, ez, px, py, pz, weight)
        # J_j and u_j as rows; every pair J_j . u_k at once, those with k upstream of j (or
        # j) kept and mirrored, then summed into coordinates by the map joint -> coordinate
        # times its multiplier (two joints of one coordinate meet in both orders).
        joints, coordinates, multipliers, prismatic = map(list, zip(*self.columns[index]))
        frames = np.array([state.frames[j] for j in joints])
        axes, levers = frames[:, [2, 5, 8]], (ex, ey, ez) - frames[:, 9:]
        sliding = np.array(prismatic)[:, np.newaxis]
        columns = np.where(sliding, axes, np.cross(axes, levers))
        turned = np.where(sliding, weight * axes, weight * columns - np.cross((px, py, pz), axes))
        pairs = np.tril(columns @ turned.T)
        mapping = np.zeros((len(joints), len(self.lower)))
        mapping[np.arange(len(joints)), coordinates] = multipliers
        hessian = mapping.T @ (pairs + np.tril(pairs, -1).T) @ mapping
        descent = mapping.T @ (columns @ (px, py, pz))
        return descent.tolist(), [row[:c + 1] for c, row in enumerate(hessian.tolist())]


def _chain_links(inner_points: list[int], children: list[list[tuple[int, float | None]]],
                 effector_points: set[int]) -> tuple[int, list[tuple[int, float]]] | None:
    """
    Return a chain's links for FABRIK's tip-to-root pass (see reach_back), or None.

    A chain to one effector whose points' distances are fixed: the effector's point, and
    per inner point, tip to root, it and its distance (metres) to its only child, the point
    before; None for any other tree.
    """
    if len(effector_points) != 1:
        return None
    tip, = effector_points
    child, links = tip, []
    for point in inner_points:
        if len(children[point]) != 1 or children[point][0][0] != child \
                or children[point][0][1] is None:
            return None
        links.append((point, children[point][0][1]))
        child = point
    return tip, links
