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
FABRIK's tip-to-root pass on the point model, and its rule for targets out of reach.

The root-to-tip pass is the tree's fitting sweep (model, sweep): it turns the desired
points this pass returns into joint values within the limits.
"""

from __future__ import annotations

import math

from .model import _Tree
from .points import _Fit, _State


def stretched(tree: _Tree, targets: list[tuple[float, float, float] | None], state: _State,
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
    beyond = [0.0] * len(tree.effectors)
    for index, (target, effector) in enumerate(zip(targets, tree.effectors)):
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


def reach_back(tree: _Tree, state: _State, goal_points: list[int],
               goals: list[tuple[float, float, float]],
               stretch: dict[int, tuple[float, float, float]], free_root: bool,
               weights: list[float]) -> tuple[list[tuple[float, float, float]],
                                              tuple[float, float, float]]:
    """
    Run FABRIK's tip-to-root pass; return the desired points and the root position.

    goal_points, goals: the effector points that have a goal and where it is, metres
    (marker points too, in orientation solves). stretch: fixed desired points for
    targets out of reach (see stretched()), and where a tool with an orientation target
    puts its joint's point. weights: per point, see _Tree.subtree_weights: a sub-base goes
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
    if tree.chain_links is not None and not stretch and weights[0] == 1.0:
        _chain_back(tree.chain_links, points, desired)
    else:
        _weighted_back(tree, points, desired, stretch, weights)
    base = state.base
    if free_root:
        bx, by, bz = base
        sx = sy = sz = total = 0.0
        for child, length in tree.children[0]:
            cx, cy, cz = desired[child]
            weight = weights[child]
            total += weight
            if child in tree.root_rigid:    # hangs rigidly: the root translates with it
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


def _stretched_fits(tree: _Tree, fits: list[_Fit], stretch: dict[int, tuple[float, float, float]],
                    whole_position: bool) -> tuple[list[_Fit], list[_Fit]]:
    """
    Return the fits of a pass out of reach, for its first attempt and for its retries.

    Joints that move only stretched points (and their markers) lay straight. But a chain
    fitted whole keeps its fit for a position target (whole_position: one effector, fit
    'chain', no orientation): the straight line is no pose a chain with offsets can
    take, and fitted point by point to it an elbow can fold onto its stop, a saddle only
    the nudged retry leaves. Its retries lay it straight: the other way in where the first
    attempt stopped. (Trees and full poses keep the line: fitted whole, a held tool drifts
    more.)
    """
    markers = tree.marker_point_set
    straight = [straight_fit if all(point in stretch or point in markers
                                    for point in tree.fit_points(whole_fit)) else fit
                for fit, whole_fit, straight_fit in zip(fits, tree.whole_fit,
                                                        tree.straight_fit)]
    if whole_position:
        return fits, straight
    return straight, straight


def _chain_back(links: tuple[int, list[tuple[int, float]]],
                points: list[tuple[float, float, float]],
                desired: list[tuple[float, float, float]]) -> None:
    """
    Set the desired points of a chain to one effector of weight 1 (_Tree.chain_links).

    _weighted_back's arithmetic for one child of weight 1 a point, its floats to the bit
    (1.0 * x and x / 1.0 are x; 0.0 + x as its sums start at 0.0); each point's proposal
    is the next one's child's.
    """
    tip, chain = links
    cx, cy, cz = desired[tip]
    for point, length in chain:
        ax, ay, az = points[point]
        dx, dy, dz = ax - cx, ay - cy, az - cz
        distance = math.sqrt(dx * dx + dy * dy + dz * dz)
        scale = length / distance if distance > 0.0 else 0.0
        cx, cy, cz = desired[point] = (0.0 + (cx + scale * dx), 0.0 + (cy + scale * dy),
                                       0.0 + (cz + scale * dz))


def _weighted_back(tree: _Tree, points: list[tuple[float, float, float]],
                   desired: list[tuple[float, float, float]],
                   stretch: dict[int, tuple[float, float, float]], weights: list[float]) -> None:
    """Set the desired inner points, children first, each its branches' weighted centroid."""
    for point in tree.inner_points:
        children = tree.children[point]
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
