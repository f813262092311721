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

Co-located joints (a spherical wrist) form one multi-axis point; the tip-to-root pass
(reach_back), the compiled sweep, Jacobians and Hessians are the model's.
"""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import Sequence

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .points import _Effector, _Fit, _Joint, _State
from .rotations import _axis_frame, _ORIGIN
from .sweep import _compiled_sweep
from .tuning import COLOCATED, FAR_WEIGHT, KEPT_WEIGHTS, PARALLEL
from .writer import _floats


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
        joints = chain.joints
        self.tools = len(chain.effectors)
        self.markers: list[list[int]] = [[] for _ in chain.effectors]  # effector indices
        self.marker_points = [[tuple(map(float, point)) for point in points]
                              for points in markers]    # metres, tool frame
        self.marker_owners: list[int] = []  # per marker effector, the effector it belongs to
        effectors = list(chain.effectors)
        for owner, points in enumerate(markers):
            tool = chain.effectors[owner]
            for point in points:
                self.markers[owner].append(len(effectors))
                self.marker_owners.append(owner)
                effectors.append(Effector(f'{tool.name}:marker', tool.parent,
                                          tool.offset + tool.rotation @ point, tool.rotation))
        canonical = [_axis_frame(joint.axis) for joint in joints]
        identity = np.eye(3)
        child_joints: list[list[int]] = [[] for _ in range(len(joints) + 1)]  # -1 last
        for index, joint in enumerate(joints):
            child_joints[joint.parent].append(index)
        child_effectors: list[list[int]] = [[] for _ in range(len(joints) + 1)]
        for index, effector in enumerate(effectors):
            child_effectors[effector.parent].append(index)
        coordinate = chain.coordinate_of_joint.tolist()
        multiplier = chain.multipliers.tolist()
        shift = chain.offsets.tolist()
        deciding: dict[int, int] = {}   # coordinate -> the first joint that moves with it
        for index, (c, m) in enumerate(zip(coordinate, multiplier)):
            if m != 0.0:
                deciding.setdefault(c, index)

        point_of_joint = [0] * len(joints)
        effector_point = [0] * len(effectors)
        parent_point = [-1]
        length: list[float] = [0.0]      # metres to the parent point (a bound if sliding)
        sliding = [False]
        first_moved = [0] * len(joints)  # per joint, the run of points it moves
        stop_moved = [0] * len(joints)
        self.root_rigid: set[int] = set()   # points fixed to the base link (no joint between)

        def new_point(parent: int, distance: float, slides: bool) -> int:
            parent_point.append(parent)
            length.append(distance)
            sliding.append(slides)
            return len(parent_point) - 1

        def add_effectors(joint: int, point: int) -> None:
            for index in child_effectors[joint]:
                offset = effectors[index].offset
                effector_point[index] = new_point(point, float(np.linalg.norm(offset)), False)
                if joint < 0:
                    self.root_rigid.add(effector_point[index])

        # Depth-first without recursion: (joint, entering) pairs; leaving closes its run.
        add_effectors(-1, 0)
        stack = [(index, True) for index in reversed(child_joints[-1])]
        while stack:
            index, entering = stack.pop()
            if not entering:
                stop_moved[index] = len(parent_point)
                continue
            joint = joints[index]
            above = point_of_joint[joint.parent] if joint.parent >= 0 else 0
            distance = float(np.linalg.norm(joint.origin_xyz))
            first_moved[index] = len(parent_point)
            if joint.prismatic:
                reach = distance + max(abs(joint.lower), abs(joint.upper))
                point_of_joint[index] = new_point(above, reach, True)
            elif distance >= COLOCATED:
                point_of_joint[index] = new_point(above, distance, False)
                if joint.parent < 0:
                    self.root_rigid.add(point_of_joint[index])
                first_moved[index] += 1     # its rotation does not move its own origin
            else:
                point_of_joint[index] = above
            add_effectors(index, point_of_joint[index])
            stack.append((index, False))
            stack += [(child, True) for child in reversed(child_joints[index])]

        lower, upper = chain.lower.tolist(), chain.upper.tolist()
        self.lower, self.upper = lower, upper   # per independent joint
        self.joints: list[_Joint] = []
        for index, joint in enumerate(joints):
            up = canonical[joint.parent] if joint.parent >= 0 else identity
            c, m, o = coordinate[index], multiplier[index], shift[index]
            low, high = sorted((m * lower[c] + o, m * upper[c] + o)) if m else (o, o)
            rotation = up.T @ joint.origin_rotation @ canonical[index]
            self.joints.append(_Joint(
                joint.parent, point_of_joint[index], _floats(rotation),
                _floats(up.T @ joint.origin_xyz), low, high, joint.prismatic, c, m, o,
                deciding.get(c) == index))
        self.effectors: list[_Effector] = []
        for index, effector in enumerate(effectors):
            up = canonical[effector.parent] if effector.parent >= 0 else identity
            point = effector_point[index]
            movers = []
            joint = effector.parent
            while joint >= 0:
                movers.append(joint)
                joint = joints[joint].parent
            movers.reverse()
            anchor = 0
            if movers:
                anchor = point_of_joint[movers[0]]
                if joints[movers[0]].prismatic:   # its own point slides: anchor above it
                    anchor = parent_point[anchor]
            path = [point] if movers else []    # on the base link nothing moves it
            while path and parent_point[path[-1]] != anchor:
                path.append(parent_point[path[-1]])
            along = np.cumsum([length[k] for k in reversed(path)])[::-1]
            self.effectors.append(_Effector(
                effector.parent, point, _floats(up.T @ effector.offset),
                _floats(up.T @ effector.rotation), tuple(movers),
                tuple(path), tuple(along.tolist()), anchor, float(along[0]) if path else 0.0))
        self.effector_links = [(e.parent, e.point, e.offset) for e in self.effectors]
        self.marker_point_set = {e.point for e in self.effectors[self.tools:]}
        self.n_points = len(parent_point)
        # Per point its children and their distance (None: it slides, measure it).
        self.children: list[list[tuple[int, float | None]]] = [[] for _ in parent_point]
        for point in range(1, self.n_points):
            self.children[parent_point[point]].append(
                (point, None if sliding[point] else length[point]))
        # Joint points (not the root, not effectors), children before parents.
        effector_points = set(effector_point)
        self.inner_points = [k for k in range(self.n_points - 1, 0, -1)
                             if k not in effector_points]
        # Every point a revolute joint turns about turns about two or more axes (universal
        # or ball joints: a tentacle, a snake), the chain FABRIK models: see IkSolver's fit.
        axes = chain.forward(chain.neutral()).axes
        turning: dict[int, list[np.ndarray]] = {}
        for index, joint in enumerate(joints):
            if not joint.prismatic:
                turning.setdefault(point_of_joint[index], []).append(axes[index])
        self.ball_joints = bool(turning) and all(
            any(np.linalg.norm(np.cross(first, other)) > PARALLEL for other in rest)
            for first, *rest in turning.values())
        # Per joint, the downstream points its motion is fitted to (see _Fit).
        # whole_fit: the whole downstream chain, the better compromise when the FABRIK points
        # are not a pose the joints can take exactly (reachable targets).
        # next_fit: essentially the next points, the classic FABRIK forward pass; exact and
        # fast when they are (a chain of ball joints). Farther points keep a small weight to
        # decide joints whose next point lies on their axis (the fit is linear in the
        # weights, so the next points' runs add up to weight 1): the tips below, two points
        # a joint where every farther point would cost a moment sum per point (slower).
        # straight_fit: the same with every farther point breaking ties, for chains laid
        # straight toward an out-of-reach target (where tips alone ended farther from some).
        self.whole_fit: list[_Fit] = []
        self.next_fit: list[_Fit] = []
        self.straight_fit: list[_Fit] = []
        tips = sorted(set(effector_point))
        for index, joint in enumerate(self.joints):
            first, stop = first_moved[index], stop_moved[index]
            if first >= stop:
                self.whole_fit.append(())
                self.next_fit.append(())
                self.straight_fit.append(())
                continue
            self.whole_fit.append(((first, stop, 1.0),))
            next_points = tuple((k, k + 1, 1.0 - FAR_WEIGHT) for k, _ in
                                self.children[joint.point] if first <= k < stop)
            self.next_fit.append(tuple((k, k + 1, FAR_WEIGHT) for k in tips
                                       if first <= k < stop) + next_points)
            self.straight_fit.append(((first, stop, FAR_WEIGHT),) + next_points)
        # Plain FK, and per effector its Jacobian's rows and Hessian, and per tool of a tree
        # with marker points its orientation rows (see _compiled_sweep).
        self._forward, self._rows, self._hessians, self.turns = _compiled_sweep(self)
        # Per effector, its Jacobian's columns: (joint, coordinate, multiplier, prismatic).
        self.columns = [tuple((j, self.joints[j].coordinate, self.joints[j].multiplier,
                               self.joints[j].prismatic) for j in effector.joints)
                        for effector in self.effectors]
        self.tool_points = [effector.point for effector in self.effectors[:self.tools]]
        # Per effector, the joints that turn it: (joint, coordinate, multiplier); a slide
        # does not, and a mimic joint adds its column, times its multiplier, to its leader's.
        self.turning = [tuple((j, c, m) for j, c, m, prismatic in columns if not prismatic)
                        for columns in self.columns]
        # Root-to-tip passes, compiled per fit list on first use: {ids of the fits: (fits,
        # function)}; holding the fits keeps their ids unique.
        self._fittings: dict[tuple[int, ...], tuple[list[_Fit], Callable]] = {}
        # The last pass used and its fits list: the next pass with that list needs no key.
        self._fitting: tuple[list[_Fit] | None, Callable | None] = (None, None)
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
        """
        if desired is None:
            q, frames, points = self._forward(q, base)
        else:
            fitting = self._fitting
            if fitting[0] is not fits:  # else the same fits as the last pass: no key to make
                key = tuple(map(id, fits))
                if key not in self._fittings:
                    self._fittings[key] = (fits, _compiled_sweep(self, fits)[0])
                fitting = self._fitting = (fits, self._fittings[key][1])
            q, frames, points = fitting[1](q, base, old.frames, old.points, desired)
        return _State(q, base, frames, points)

    def stretched(self, targets: list[tuple[float, float, float] | None], state: _State,
                  tolerance: float) -> tuple[dict[int, tuple[float, float, float]], list[float]]:
        """
        Return where the points of out-of-reach targets go, and the summed shortfall.

        FABRIK's rule for a target beyond the reach of its effector (by more than the
        tolerance, metres): lay the path from the anchor (pinned) straight toward the
        target. Returns point -> desired position (averaged where paths share a point), and
        per effector the distance (metres) by which its target lies beyond its reach: a
        lower bound of its distance to the target (0 within reach or without a target).
        """
        sums: dict[int, tuple[float, float, float, int]] = {}
        beyond = [0.0] * len(self.effectors)
        for index, (target, effector) in enumerate(zip(targets, self.effectors)):
            if target is None or not effector.path:
                continue
            ax, ay, az = state.points[effector.anchor]
            distance = math.dist(target, (ax, ay, az))
            if distance <= effector.reach + tolerance:
                continue
            beyond[index] = distance - effector.reach
            ux, uy, uz = ((t - a) / distance for t, a in zip(target, (ax, ay, az)))
            for point, along in zip(effector.path, effector.along):
                sx, sy, sz, count = sums.get(point, (0.0, 0.0, 0.0, 0))
                sums[point] = (sx + ax + along * ux, sy + ay + along * uy,
                               sz + az + along * uz, count + 1)
        stretch = {point: (sx / count, sy / count, sz / count)
                   for point, (sx, sy, sz, count) in sums.items()}
        return stretch, beyond

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

    def reach_back(self, state: _State, goal_points: list[int],
                   goals: list[tuple[float, float, float]],
                   stretch: dict[int, tuple[float, float, float]], free_root: bool,
                   weights: list[float]) -> tuple[list[tuple[float, float, float]],
                                                  tuple[float, float, float]]:
        """
        Run FABRIK's tip-to-root pass; return the desired points and the root position.

        goal_points, goals: the effector points that have a goal and where it is, metres
        (marker points too, in orientation solves). stretch: fixed desired points for
        targets out of reach (see stretched()), and where a tool with an orientation target
        puts its joint's point. weights: per point, see subtree_weights(): a sub-base goes
        to the weighted centroid of its branches' proposals, each branch weighing what its
        effectors weigh; branches with no goal stay. A pinned root stays; a free root
        follows its children like the end of a rope.
        """
        points = state.points
        desired = list(points)
        for point, goal in zip(goal_points, goals):
            desired[point] = goal
        for point, position in stretch.items():
            desired[point] = position
        for point in self.inner_points:
            children = self.children[point]
            if point in stretch or not weights[point]:    # nothing below it: it stays
                continue
            ax, ay, az = points[point]
            sx = sy = sz = total = 0.0
            for child, length in children:
                cx, cy, cz = desired[child]
                dx, dy, dz = ax - cx, ay - cy, az - cz
                distance = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length is None:  # a prismatic joint: keep the length it has
                    length = math.dist(points[point], points[child])
                weight = weights[child]
                scale = weight * length / distance if distance > 0.0 else 0.0
                sx += weight * cx + scale * dx
                sy += weight * cy + scale * dy
                sz += weight * cz + scale * dz
                total += weight
            desired[point] = (sx / total, sy / total, sz / total)
        base = state.base
        if free_root:
            bx, by, bz = base
            sx = sy = sz = total = 0.0
            for child, length in self.children[0]:
                cx, cy, cz = desired[child]
                weight = weights[child]
                total += weight
                if child in self.root_rigid:    # hangs rigidly: the root translates with it
                    ox, oy, oz = points[child]
                    sx += weight * (bx + cx - ox)
                    sy += weight * (by + cy - oy)
                    sz += weight * (bz + cz - oz)
                    continue
                dx, dy, dz = bx - cx, by - cy, bz - cz
                distance = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length is None:
                    length = math.dist(base, points[child])
                scale = weight * length / distance if distance > 0.0 else 0.0
                sx += weight * cx + scale * dx
                sy += weight * cy + scale * dy
                sz += weight * cz + scale * dz
            base = (sx / total, sy / total, sz / total)
        return desired, base

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
