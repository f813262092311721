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
Mimic joints resolved: the independent joint vector q and how every joint follows it.

A mimic joint (URDF <mimic>) sits at multiplier * leader + offset. The joint vector holds
the independent joints only; a leader's limits are narrowed so that every follower stays
within its own position and velocity limits. Imports numpy and the standard library only.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from fabrik_ros.model.joints import ChainError, Joint
import numpy as np


class Coupling(NamedTuple):
    """The independent coordinates of a model's joints (all arrays read-only)."""

    leaders: list[int]              # joint index of each independent coordinate
    joint_names: list[str]          # per coordinate
    lower: np.ndarray               # (dof,) radians or metres, narrowed for followers
    upper: np.ndarray               # (dof,)
    max_velocity: np.ndarray        # (dof,) rad/s or m/s, narrowed for followers
    coordinate_of_joint: np.ndarray  # (n,) int, the coordinate each joint follows
    multipliers: np.ndarray         # (n,) 1 for independent joints
    offsets: np.ndarray             # (n,) 0 for independent joints

    @property
    def coupled(self) -> bool:
        """Return True when some joint follows another (the model has mimic joints)."""
        return len(self.leaders) < len(self.coordinate_of_joint)


def couple(joints: Sequence[Joint]) -> Coupling:
    """
    Return the coupling of the joints; raise ChainError naming a mimic joint that cannot be.

    A mimic joint must follow a movable joint of the model that is not a mimic itself
    (URDF mimics a leader directly), and its limits must leave the leader a position.
    """
    index_of = {joint.name: index for index, joint in enumerate(joints)}
    leaders = [index for index, joint in enumerate(joints) if joint.mimic is None]
    coordinate_of_leader = {joint: k for k, joint in enumerate(leaders)}
    lower = [joints[i].lower for i in leaders]
    upper = [joints[i].upper for i in leaders]
    velocity = [joints[i].max_velocity for i in leaders]
    coordinate, multiplier, offset = [], [], []
    for joint in joints:
        if joint.mimic is None:
            coordinate.append(coordinate_of_leader[index_of[joint.name]])
            multiplier.append(1.0)
            offset.append(0.0)
            continue
        what = f"mimic joint '{joint.name}'"
        leader = index_of.get(joint.mimic.joint)
        if leader is None:
            raise ChainError(f"{what} follows '{joint.mimic.joint}', which is not a "
                             'movable joint of the chain')
        if joints[leader].mimic is not None:
            raise ChainError(f"{what} follows '{joint.mimic.joint}', itself a mimic "
                             'joint (URDF mimics a leader directly)')
        k = coordinate_of_leader[leader]
        m, o = joint.mimic.multiplier, joint.mimic.offset
        coordinate.append(k)
        multiplier.append(m)
        offset.append(o)
        if m == 0.0:
            if not joint.lower <= o <= joint.upper:
                raise ChainError(f'{what} is held at {o} by multiplier 0, outside its '
                                 f'limits [{joint.lower}, {joint.upper}]')
            continue
        bounds = sorted(((joint.lower - o) / m, (joint.upper - o) / m))
        lower[k], upper[k] = max(lower[k], bounds[0]), min(upper[k], bounds[1])
        if lower[k] > upper[k]:
            raise ChainError(f"{what}'s limits [{joint.lower}, {joint.upper}] leave its "
                             f"leader '{joint.mimic.joint}' no position")
        velocity[k] = min(velocity[k], joint.max_velocity / abs(m))
    coordinate_of_joint = np.array(coordinate, dtype=int)
    coordinate_of_joint.setflags(write=False)
    return Coupling(leaders, [joints[i].name for i in leaders], _frozen_array(lower),
                    _frozen_array(upper), _frozen_array(velocity), coordinate_of_joint,
                    _frozen_array(multiplier), _frozen_array(offset))


def _frozen_array(values: Iterable[float]) -> np.ndarray:
    """Return a read-only float array."""
    array = np.array(list(values), dtype=float)
    array.setflags(write=False)
    return array
