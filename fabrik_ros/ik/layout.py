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
Building the point model from a Chain: points, joint and effector records, fit lists.

Point 0 is the base origin; points are numbered depth-first, parents first. Co-located
joint origins share a point; a prismatic joint's origin is a point of its own, whose
distance to its parent point slides. Time and memory are linear in the number of joints.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .points import _Effector, _Fit, _Joint
from .rotations import _axis_frame
from .tuning import COLOCATED, FAR_WEIGHT, PARALLEL
from .writer import _floats


class _Layout(NamedTuple):
    """Where the chain's joints and effectors sit in the point tree."""

    canonical: list[np.ndarray]     # per joint, C_j: its canonical frame's rotation
    point_of_joint: list[int]
    effector_point: list[int]
    parent_point: list[int]         # per point (-1 for the base)
    length: list[float]             # metres to the parent point (a bound if sliding)
    sliding: list[bool]
    first_moved: list[int]          # per joint, the run of points it moves
    stop_moved: list[int]
    root_rigid: set[int]            # points fixed to the base link (no joint between)


def _with_markers(chain: Chain, markers: Sequence[Sequence[np.ndarray]]
                  ) -> tuple[list[Effector], list[list[int]], list[int]]:
    """
    Return the chain's effectors with the marker points appended as effectors.

    Also per effector its markers' effector indices, and per marker the effector it
    belongs to.
    """
    owned: list[list[int]] = [[] for _ in chain.effectors]  # effector indices
    owners: list[int] = []
    effectors = list(chain.effectors)
    for owner, points in enumerate(markers):
        tool = chain.effectors[owner]
        for point in points:
            owned[owner].append(len(effectors))
            owners.append(owner)
            effectors.append(Effector(f'{tool.name}:marker', tool.parent,
                                      tool.offset + tool.rotation @ point, tool.rotation))
    return effectors, owned, owners


def _lay_out_points(chain: Chain, effectors: list[Effector]) -> _Layout:
    """Return the point tree of the chain's joints and the effectors."""
    joints = chain.joints
    canonical = [_axis_frame(joint.axis) for joint in joints]
    child_joints: list[list[int]] = [[] for _ in range(len(joints) + 1)]  # -1 last
    for index, joint in enumerate(joints):
        child_joints[joint.parent].append(index)
    child_effectors: list[list[int]] = [[] for _ in range(len(joints) + 1)]
    for index, effector in enumerate(effectors):
        child_effectors[effector.parent].append(index)
    layout = _Layout(canonical, [0] * len(joints), [0] * len(effectors), [-1], [0.0], [False],
                     [0] * len(joints), [0] * len(joints), set())
    point_of_joint, effector_point, parent_point = (layout.point_of_joint,
                                                    layout.effector_point, layout.parent_point)

    def new_point(parent: int, distance: float, slides: bool) -> int:
        parent_point.append(parent)
        layout.length.append(distance)
        layout.sliding.append(slides)
        return len(parent_point) - 1

    def add_effectors(joint: int, point: int) -> None:
        for index in child_effectors[joint]:
            offset = effectors[index].offset
            effector_point[index] = new_point(point, float(np.linalg.norm(offset)), False)
            if joint < 0:
                layout.root_rigid.add(effector_point[index])

    # Depth-first without recursion: (joint, entering) pairs; leaving closes its run.
    add_effectors(-1, 0)
    stack = [(index, True) for index in reversed(child_joints[-1])]
    while stack:
        index, entering = stack.pop()
        if not entering:
            layout.stop_moved[index] = len(parent_point)
            continue
        joint = joints[index]
        above = point_of_joint[joint.parent] if joint.parent >= 0 else 0
        distance = float(np.linalg.norm(joint.origin_xyz))
        layout.first_moved[index] = len(parent_point)
        if joint.prismatic:
            reach = distance + max(abs(joint.lower), abs(joint.upper))
            point_of_joint[index] = new_point(above, reach, True)
        elif distance >= COLOCATED:
            point_of_joint[index] = new_point(above, distance, False)
            if joint.parent < 0:
                layout.root_rigid.add(point_of_joint[index])
            layout.first_moved[index] += 1     # its rotation does not move its own origin
        else:
            point_of_joint[index] = above
        add_effectors(index, point_of_joint[index])
        stack.append((index, False))
        stack += [(child, True) for child in reversed(child_joints[index])]
    return layout


def _joint_records(chain: Chain, layout: _Layout) -> list[_Joint]:
    """Return the joints in their canonical frames, with their coupled limits."""
    joints, canonical = chain.joints, layout.canonical
    identity = np.eye(3)
    coordinate = chain.coordinate_of_joint.tolist()
    multiplier = chain.multipliers.tolist()
    shift = chain.offsets.tolist()
    deciding: dict[int, int] = {}   # coordinate -> the first joint that moves with it
    for index, (c, m) in enumerate(zip(coordinate, multiplier)):
        if m != 0.0:
            deciding.setdefault(c, index)
    lower, upper = chain.lower.tolist(), chain.upper.tolist()
    records = []
    for index, joint in enumerate(joints):
        up = canonical[joint.parent] if joint.parent >= 0 else identity
        c, m, o = coordinate[index], multiplier[index], shift[index]
        low, high = sorted((m * lower[c] + o, m * upper[c] + o)) if m else (o, o)
        rotation = up.T @ joint.origin_rotation @ canonical[index]
        records.append(_Joint(
            joint.parent, layout.point_of_joint[index], _floats(rotation),
            _floats(up.T @ joint.origin_xyz), low, high, joint.prismatic, c, m, o,
            deciding.get(c) == index))
    return records


def _effector_records(chain: Chain, effectors: list[Effector], layout: _Layout
                      ) -> list[_Effector]:
    """Return the effectors with the joints that move them and their paths to the anchor."""
    joints, canonical = chain.joints, layout.canonical
    point_of_joint, parent_point = layout.point_of_joint, layout.parent_point
    identity = np.eye(3)
    records = []
    for index, effector in enumerate(effectors):
        up = canonical[effector.parent] if effector.parent >= 0 else identity
        point = layout.effector_point[index]
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
        along = np.cumsum([layout.length[k] for k in reversed(path)])[::-1]
        records.append(_Effector(
            effector.parent, point, _floats(up.T @ effector.offset),
            _floats(up.T @ effector.rotation), tuple(movers),
            tuple(path), tuple(along.tolist()), anchor, float(along[0]) if path else 0.0))
    return records


def _ball_joints(chain: Chain, point_of_joint: list[int]) -> bool:
    """
    Tell whether every point a revolute joint turns about turns about two or more axes.

    Universal or ball joints (a tentacle, a snake): the chain FABRIK models, see IkSolver's
    fit.
    """
    axes = chain.forward(chain.neutral()).axes
    turning: dict[int, list[np.ndarray]] = {}
    for index, joint in enumerate(chain.joints):
        if not joint.prismatic:
            turning.setdefault(point_of_joint[index], []).append(axes[index])
    return bool(turning) and all(
        any(np.linalg.norm(np.cross(first, other)) > PARALLEL for other in rest)
        for first, *rest in turning.values())


def _fit_lists(joints: list[_Joint], children: list[list[tuple[int, float | None]]],
               layout: _Layout) -> tuple[list[_Fit], list[_Fit], list[_Fit]]:
    """
    Return per joint the downstream points its motion is fitted to (see _Fit), three ways.

    whole_fit: the whole downstream chain, the better compromise when the FABRIK points
    are not a pose the joints can take exactly (reachable targets).
    next_fit: essentially the next points, the classic FABRIK forward pass; exact and
    fast when they are (a chain of ball joints). Farther points keep a small weight to
    decide joints whose next point lies on their axis (the fit is linear in the
    weights, so the next points' runs add up to weight 1): the tips below, two points
    a joint where every farther point would cost a moment sum per point (slower).
    straight_fit: the same with every farther point breaking ties, for chains laid
    straight toward an out-of-reach target (where tips alone ended farther from some).
    """
    whole_fit: list[_Fit] = []
    next_fit: list[_Fit] = []
    straight_fit: list[_Fit] = []
    tips = sorted(set(layout.effector_point))
    for index, joint in enumerate(joints):
        first, stop = layout.first_moved[index], layout.stop_moved[index]
        if first >= stop:
            whole_fit.append(())
            next_fit.append(())
            straight_fit.append(())
            continue
        whole_fit.append(((first, stop, 1.0),))
        next_points = tuple((k, k + 1, 1.0 - FAR_WEIGHT) for k, _ in
                            children[joint.point] if first <= k < stop)
        next_fit.append(tuple((k, k + 1, FAR_WEIGHT) for k in tips
                              if first <= k < stop) + next_points)
        straight_fit.append(((first, stop, FAR_WEIGHT),) + next_points)
    return whole_fit, next_fit, straight_fit
