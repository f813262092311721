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
The parts a kinematic model is made of: joints, effectors, mimic couplings, poses.

Each part checks and freezes its fields on construction, so a model holds only finite,
read-only numbers, unit axes and proper rotations; check_tree checks that parts form a
tree. Conventions: SI units (metres, radians, m/s, rad/s); a joint's origin is in its
parent joint's frame. Imports numpy and the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import NamedTuple, Sequence

import numpy as np

_ORTHONORMAL_TOLERANCE = 1e-6
JOINT_KINDS = ('revolute', 'prismatic')
# Movable joints a chain holds at most: start-up grows linearly with the joints, but a
# solve's whole-chain fit grows with their square, and larger models are input mistakes.
MAX_JOINTS = 5000


class ChainError(ValueError):
    """A kinematic model, URDF or limit problem; the message names the culprit."""


def frozen_vector(value: object, what: str) -> np.ndarray:
    """Return value as a read-only finite (3,) float array, or raise ChainError."""
    array = np.array(value, dtype=float).reshape(-1)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ChainError(f'{what}: expected 3 finite numbers, got {value!r}')
    array.setflags(write=False)
    return array


def _frozen_rotation(value: object, what: str) -> np.ndarray:
    """Return value as a read-only (3, 3) proper rotation matrix, or raise ChainError."""
    array = np.array(value, dtype=float)
    if (array.shape != (3, 3) or not np.all(np.isfinite(array))
            or not np.allclose(array @ array.T, np.eye(3), atol=_ORTHONORMAL_TOLERANCE)
            or np.linalg.det(array) < 0.0):
        raise ChainError(f'{what}: expected a 3x3 rotation matrix, got {value!r}')
    array.setflags(write=False)
    return array


class Mimic(NamedTuple):
    """A URDF <mimic>: the joint's position is multiplier * (leader's position) + offset."""

    joint: str                  # the leader's name
    multiplier: float = 1.0
    offset: float = 0.0         # radians or metres, the follower's unit


@dataclass(frozen=True, eq=False)
class Joint:
    """
    One movable joint of the tree: revolute (continuous when unlimited) or prismatic.

    origin_xyz/origin_rotation: the transform from the parent joint's frame (after the
    parent's motion; the base link frame if parent == -1) to this joint's frame at q = 0,
    fixed joints folded in. A revolute joint then rotates its frame by q radians about
    `axis`, a prismatic one translates it by q metres along `axis`. Limits are in the
    joint's unit; a prismatic joint needs finite ones. mimic: the joint follows another.
    """

    name: str
    parent: int                 # index of the parent movable joint, -1 = the base link
    origin_xyz: np.ndarray      # (3,) metres
    origin_rotation: np.ndarray  # (3, 3)
    axis: np.ndarray            # (3,) unit, in this joint's frame
    lower: float = -math.inf    # radians, -inf for continuous
    upper: float = math.inf     # radians, +inf for continuous
    max_velocity: float = math.inf  # rad/s, inf if unknown
    link: str = ''              # child link name ('' = '<name>_link' when written as URDF)
    kind: str = 'revolute'      # one of JOINT_KINDS
    mimic: Mimic | None = None

    def __post_init__(self) -> None:
        """Validate and freeze the fields; normalise the axis."""
        what = f"joint '{self.name}'"
        if not self.name:
            raise ChainError('a joint has an empty name')
        object.__setattr__(self, 'origin_xyz', frozen_vector(self.origin_xyz, f'{what} origin'))
        object.__setattr__(self, 'origin_rotation',
                           _frozen_rotation(self.origin_rotation, f'{what} origin rotation'))
        axis = frozen_vector(self.axis, f'{what} axis')
        norm = float(np.linalg.norm(axis))
        if norm < 1e-9:
            raise ChainError(f'{what} has a zero axis')
        axis = axis / norm
        axis.setflags(write=False)
        object.__setattr__(self, 'axis', axis)
        lower, upper = float(self.lower), float(self.upper)
        if math.isnan(lower) or math.isnan(upper) or lower == math.inf or upper == -math.inf:
            raise ChainError(f'{what} has invalid limits [{lower}, {upper}]')
        if lower > upper:
            raise ChainError(f'{what} has lower limit {lower} > upper limit {upper}')
        if self.kind not in JOINT_KINDS:
            raise ChainError(f'{what} has kind {self.kind!r}, expected one of {JOINT_KINDS}')
        if self.kind == 'prismatic' and not (math.isfinite(lower) and math.isfinite(upper)):
            raise ChainError(f'prismatic {what} needs finite limits, got [{lower}, {upper}]')
        if self.mimic is not None:
            mimic = Mimic(str(self.mimic.joint), float(self.mimic.multiplier),
                          float(self.mimic.offset))
            if not (math.isfinite(mimic.multiplier) and math.isfinite(mimic.offset)):
                raise ChainError(f'{what} has a non-finite mimic {mimic}')
            if mimic.joint == self.name:
                raise ChainError(f'{what} mimics itself')
            object.__setattr__(self, 'mimic', mimic)
        velocity = float(self.max_velocity)
        if not velocity > 0.0:
            raise ChainError(f'{what} has max_velocity {velocity}, expected > 0 (inf allowed)')
        object.__setattr__(self, 'lower', lower)
        object.__setattr__(self, 'upper', upper)
        object.__setattr__(self, 'max_velocity', velocity)

    @property
    def continuous(self) -> bool:
        """Return True when the joint has no position limits."""
        return self.lower == -math.inf and self.upper == math.inf

    @property
    def prismatic(self) -> bool:
        """Return True when the joint translates (metres) rather than rotates."""
        return self.kind == 'prismatic'

    @property
    def link_name(self) -> str:
        """Return the child link's name: `link`, or '<name>_link' when it has none."""
        return self.link or f'{self.name}_link'


@dataclass(frozen=True, eq=False)
class Effector:
    """A tip link: a tool frame rigidly attached to a joint's frame (or to the base link)."""

    name: str
    parent: int                 # joint index it hangs from, -1 = the base link
    offset: np.ndarray          # (3,) metres, tool frame origin in the parent joint's frame
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # tool frame axes, same

    def __post_init__(self) -> None:
        """Validate and freeze the fields."""
        if not self.name:
            raise ChainError('an effector has an empty name')
        what = f"effector '{self.name}'"
        object.__setattr__(self, 'offset', frozen_vector(self.offset, f'{what} offset'))
        object.__setattr__(self, 'rotation',
                           _frozen_rotation(self.rotation, f'{what} rotation'))


class Pose(NamedTuple):
    """A rigid transform: translation (3,) metres and rotation (3, 3)."""

    xyz: np.ndarray
    rotation: np.ndarray


class Parts(NamedTuple):
    """What a Chain is built from, Chain(*parts); the Chain checks that they form a tree."""

    base_link: str
    joints: Sequence[Joint]     # parents first (joints[i].parent < i)
    effectors: Sequence[Effector]


def is_joint_link(effector: Effector, joints: Sequence[Joint]) -> bool:
    """
    Return True when the effector is its parent joint's own child link.

    URDF tips are often the child link of the last movable joint (offset zero); such an
    effector shares the link's name. Raises ChainError when an effector is named like its
    parent joint's link but offset from it.
    """
    if effector.parent < 0 or effector.name != joints[effector.parent].link_name:
        return False
    if np.any(effector.offset != 0.0) or np.any(effector.rotation != np.eye(3)):
        raise ChainError(f"effector '{effector.name}' is named like the link of joint "
                         f"'{joints[effector.parent].name}' but is offset from it")
    return True


def check_tree(parts: Parts) -> None:
    """
    Raise ChainError, naming the culprit, unless the parts form a model's tree.

    A tree has a base link; 1 to MAX_JOINTS joints, parents first; at least one effector,
    each hanging from one of the joints or the base; and unique joint and link names (an
    effector may be its parent joint's own link, see is_joint_link).
    """
    base_link, joints, effectors = parts
    if not base_link:
        raise ChainError('base_link is empty')
    if not joints:
        raise ChainError('the chain has no movable joints')
    if len(joints) > MAX_JOINTS:
        raise ChainError(f'the chain has {len(joints)} movable joints; at most '
                         f'{MAX_JOINTS} are supported')
    if not effectors:
        raise ChainError('the chain has no effectors (tip links)')
    for index, joint in enumerate(joints):
        if not -1 <= joint.parent < index:
            raise ChainError(f"joint '{joint.name}' (index {index}) has parent "
                             f'{joint.parent}; joints must be ordered parents first')
    for effector in effectors:
        if not -1 <= effector.parent < len(joints):
            raise ChainError(f"effector '{effector.name}' hangs from joint index "
                             f'{effector.parent}, which does not exist')
    check_unique([joint.name for joint in joints], 'joint')
    check_unique([base_link] + [joint.link_name for joint in joints]
                 + [e.name for e in effectors if not is_joint_link(e, joints)], 'link')


def check_unique(names: Sequence[str], kind: str) -> None:
    """Raise ChainError naming the first duplicated name."""
    seen = set()
    for name in names:
        if name in seen:
            raise ChainError(f"duplicate {kind} name '{name}'")
        seen.add(name)
