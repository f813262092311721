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
Kinematic model of jointed chains and trees, with fast forward kinematics.

A robot is a tree of revolute and prismatic joints, URDF style: each joint has a fixed
origin transform from its parent joint's frame, a unit axis, and position/velocity limits.
Fixed joints are folded into the next origin or into an effector's tool frame. Effectors
are tip links: a frame (point and orientation) rigidly attached to a joint's frame. A
serial chain is the one-effector case. A mimic joint (URDF <mimic>) follows another:
position = multiplier * leader + offset; the joint vector q holds the independent joints
only (chain.joint_names), and chain.expand(q) gives every joint's position
(chain.all_joint_names).

Conventions: SI units (metres for prismatic joints, radians for revolute ones, m/s and
rad/s); all world quantities are in the base link's frame; rotations from roll/pitch/yaw
follow URDF, R = Rz(yaw) @ Ry(pitch) @ Rx(roll). The module imports numpy and the standard
library only. URDF in and out: fabrik_ros.urdf; chains from plain parameters:
fabrik_ros.builders (Chain.from_urdf, to_urdf and from_parameters call them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import math
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

_ORTHONORMAL_TOLERANCE = 1e-6
JOINT_KINDS = ('revolute', 'prismatic')
# Movable joints a chain holds at most: start-up grows linearly with the joints, but a
# solve's whole-chain fit grows with their square, and larger models are input mistakes.
MAX_JOINTS = 5000


class ChainError(ValueError):
    """A kinematic model, URDF or limit problem; the message names the culprit."""


def rotation_from_rpy(rpy: Sequence[float]) -> np.ndarray:
    """Return the (3, 3) rotation of URDF roll/pitch/yaw (radians): Rz(y) @ Ry(p) @ Rx(r)."""
    roll, pitch, yaw = (float(v) for v in rpy)
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def rpy_from_rotation(rotation: np.ndarray) -> np.ndarray:
    """
    Return URDF roll/pitch/yaw (3,) radians of a (3, 3) rotation.

    Yaw comes first; pitch and roll are then read from Rz(yaw)^T R = Ry(pitch) Rx(roll), so
    the angles reproduce the rotation to rounding even at and near gimbal lock (pitch
    +-pi/2, where yaw and roll are not unique).
    """
    r = np.asarray(rotation, dtype=float)
    yaw = math.atan2(r[1, 0], r[0, 0])
    cy, sy = math.cos(yaw), math.sin(yaw)
    pitch = math.atan2(-r[2, 0], cy * r[0, 0] + sy * r[1, 0])
    roll = math.atan2(sy * r[0, 2] - cy * r[1, 2], cy * r[1, 1] - sy * r[0, 1])
    return np.array([roll, pitch, yaw])


def rotation_from_quaternion(xyzw: Sequence[float]) -> np.ndarray:
    """Return the (3, 3) rotation of a unit quaternion (x, y, z, w), ROS order."""
    return np.array(rotation_tuple(xyzw)).reshape(3, 3)


def rotation_tuple(xyzw: Sequence[float]) -> tuple[float, ...]:
    """Return the rotation of a unit quaternion (x, y, z, w) as a row-major 9-tuple of floats."""
    x, y, z, w = map(float, xyzw)
    return (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
            2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
            2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))


def quaternion_from_rotation(rotation: np.ndarray) -> np.ndarray:
    """Return the unit quaternion (4,) x, y, z, w (ROS order, w >= 0) of a (3, 3) rotation."""
    r = np.asarray(rotation, dtype=float)
    # From the largest of w, x, y, z (Shepperd's method): no division by a small number.
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    candidates = [trace, r[0, 0], r[1, 1], r[2, 2]]
    largest = int(np.argmax(candidates))
    if largest == 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4]
    else:
        i = largest - 1
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = [0.0] * 4
        q[i] = s / 4
        q[j] = (r[j, i] + r[i, j]) / s
        q[k] = (r[k, i] + r[i, k]) / s
        q[3] = (r[k, j] - r[j, k]) / s
    q = np.array(q)
    return (q if q[3] >= 0.0 else -q) / np.linalg.norm(q)


def rotation_about_axis(axis: Sequence[float], angle: float) -> np.ndarray:
    """Return the (3, 3) rotation by angle (radians) about a unit axis (Rodrigues)."""
    k = _cross_matrix(np.asarray(axis, dtype=float))
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _cross_matrix(v: np.ndarray) -> np.ndarray:
    """Return the (3, 3) matrix K with K @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


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


class Kinematics(NamedTuple):
    """Forward kinematics of one joint vector, all in the base link frame."""

    positions: np.ndarray   # (n, 3) metres, joint origins
    axes: np.ndarray        # (n, 3) unit joint axes
    rotations: np.ndarray   # (n, 3, 3) joint frames after the joint rotation
    effectors: np.ndarray   # (m, 3) metres, effector points


class Pose(NamedTuple):
    """A rigid transform: translation (3,) metres and rotation (3, 3)."""

    xyz: np.ndarray
    rotation: np.ndarray


class Chain:
    """
    A tree of movable joints with point effectors; a serial chain has one effector.

    Joints are in topological order (joints[i].parent < i), depth-first from the base, so a
    serial chain lists its joints base to tip. `joints` are every movable joint of the
    model; the joint vector q (and joint_names, lower, upper, max_velocity, dof) covers the
    independent ones: a mimic joint moves with its leader, whose limits are narrowed so that
    every follower stays within its own. Instances are immutable.
    """

    def __init__(self, base_link: str, joints: Sequence[Joint],
                 effectors: Sequence[Effector]) -> None:
        """Validate the tree and precompute the arrays forward kinematics needs."""
        if not base_link:
            raise ChainError('base_link is empty')
        self.base_link = base_link
        self.joints: tuple[Joint, ...] = tuple(joints)
        self.effectors: tuple[Effector, ...] = tuple(effectors)
        if not self.joints:
            raise ChainError('the chain has no movable joints')
        if len(self.joints) > MAX_JOINTS:
            raise ChainError(f'the chain has {len(self.joints)} movable joints; at most '
                             f'{MAX_JOINTS} are supported')
        if not self.effectors:
            raise ChainError('the chain has no effectors (tip links)')
        for index, joint in enumerate(self.joints):
            if not -1 <= joint.parent < index:
                raise ChainError(f"joint '{joint.name}' (index {index}) has parent "
                                 f'{joint.parent}; joints must be ordered parents first')
        for effector in self.effectors:
            if not -1 <= effector.parent < len(self.joints):
                raise ChainError(f"effector '{effector.name}' hangs from joint index "
                                 f'{effector.parent}, which does not exist')
        self.all_joint_names = [joint.name for joint in self.joints]
        self.effector_names = [effector.name for effector in self.effectors]
        self.link_names = [joint.link or f'{joint.name}_link' for joint in self.joints]
        check_unique(self.all_joint_names, 'joint')
        check_unique([base_link] + self.link_names
                     + [e.name for e in self.effectors if not self.is_joint_link(e)], 'link')
        self._couple()
        self.parents = np.array([joint.parent for joint in self.joints], dtype=int)
        self.parents.setflags(write=False)
        joint_moves = self._ancestor_mask()
        moves = np.zeros((self.dof, len(self.effectors)), dtype=bool)
        np.logical_or.at(moves, self.coordinate_of_joint, joint_moves.T)
        self.moves_effector = moves.T.copy()
        self.moves_effector.setflags(write=False)
        self._precompute(joint_moves)

    def _couple(self) -> None:
        """
        Resolve mimic joints: the independent joints, their limits, and the coupling.

        Sets joint_names, lower, upper, max_velocity (per independent joint; a leader's
        range is narrowed to keep its followers within theirs, its velocity limit to keep
        them within their velocity limits) and, per joint, the index of its independent
        joint, multiplier and offset.
        """
        index_of = {name: index for index, name in enumerate(self.all_joint_names)}
        leaders = [index for index, joint in enumerate(self.joints) if joint.mimic is None]
        coordinate_of_leader = {joint: k for k, joint in enumerate(leaders)}
        lower = [self.joints[i].lower for i in leaders]
        upper = [self.joints[i].upper for i in leaders]
        velocity = [self.joints[i].max_velocity for i in leaders]
        coordinate, multiplier, offset = [], [], []
        for joint in self.joints:
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
            if self.joints[leader].mimic is not None:
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
        self._leaders = leaders
        self.joint_names = [self.all_joint_names[i] for i in leaders]
        self.lower = _frozen_array(lower)
        self.upper = _frozen_array(upper)
        self.max_velocity = _frozen_array(velocity)
        self.coordinate_of_joint = np.array(coordinate, dtype=int)
        self.coordinate_of_joint.setflags(write=False)
        self.multipliers = _frozen_array(multiplier)
        self.offsets = _frozen_array(offset)
        self.coupled = len(leaders) < len(self.joints)

    @classmethod
    def from_urdf(cls, urdf_xml: str, base_link: str, tip_link: str | Sequence[str]) -> Chain:
        """Build the chain (one tip link) or tree (several): fabrik_ros.urdf.chain_from_urdf."""
        from fabrik_ros.urdf import chain_from_urdf
        return chain_from_urdf(urdf_xml, base_link, tip_link)

    @classmethod
    def from_parameters(cls, segments: int, segment_length: float | Sequence[float],
                        **options: Any) -> Chain:
        """Build a serial chain or a legged tree: fabrik_ros.builders.build_chain."""
        from fabrik_ros.builders import build_chain
        return build_chain(segments, segment_length, **options)

    def is_joint_link(self, effector: Effector) -> bool:
        """
        Return True when the effector is its parent joint's own child link.

        URDF tips are often the child link of the last movable joint (offset zero); such an
        effector shares the link's name. Any other name clash is an error.
        """
        if effector.parent < 0 or effector.name != self.link_names[effector.parent]:
            return False
        if np.any(effector.offset != 0.0) or np.any(effector.rotation != np.eye(3)):
            raise ChainError(f"effector '{effector.name}' is named like the link of joint "
                             f"'{self.all_joint_names[effector.parent]}' but is offset from it")
        return True

    def __repr__(self) -> str:
        """Return a short summary: base, joint count, effectors."""
        return (f'Chain(base_link={self.base_link!r}, joints={len(self.joints)}, '
                f'effectors={self.effector_names!r})')

    @property
    def dof(self) -> int:
        """Return the number of independent joints n (the length of q)."""
        return len(self.joint_names)

    def expand(self, q: object) -> np.ndarray:
        """
        Return every joint's position (radians or metres, order all_joint_names) at q.

        Followers are at multiplier * leader + offset; this is what a JointState for
        robot_state_publisher holds. Raises ValueError on a wrong length.
        """
        q = self._joint_vector(q)
        if not self.coupled:
            return q.copy()
        return self.multipliers * q[self.coordinate_of_joint] + self.offsets

    def expand_velocity(self, velocity: object) -> np.ndarray:
        """Return every joint's velocity (order all_joint_names) from the independent ones."""
        velocity = self._joint_vector(velocity)
        if not self.coupled:
            return velocity.copy()
        return self.multipliers * velocity[self.coordinate_of_joint]

    def _ancestor_mask(self) -> np.ndarray:
        """Return (m, n) bool: True where joint j lies on the path from the base to effector e."""
        mask = np.zeros((len(self.effectors), len(self.joints)), dtype=bool)
        for row, effector in enumerate(self.effectors):
            index = effector.parent
            while index >= 0:
                mask[row, index] = True
                index = self.joints[index].parent
        mask.setflags(write=False)
        return mask

    def _precompute(self, joint_moves: np.ndarray) -> None:
        """
        Stack per-joint constants so forward() is a few vector ops plus one product per joint.

        Revolute joint i's local transform at angle q is [O_i Rot(a_i, q) | t_i], and by
        Rodrigues O_i Rot(a_i, q) = O_i + sin(q) O_i K_i + (1 - cos(q)) O_i K_i^2 with
        K_i = [a_i]x: its top three rows are (1, sin q, 1 - cos q) @ basis_i, one batched
        product for all joints; basis_i (3, 12) holds [O_i | t_i], [O_i K_i | 0],
        [O_i K_i^2 | 0]. A prismatic joint's is [O_i | t_i + q O_i a_i]: coefficients
        (1, q, 0) with [O_i | t_i], [0 | O_i a_i], 0.
        """
        n = len(self.joints)
        self._joint_moves = joint_moves
        self._prismatic = np.array([joint.prismatic for joint in self.joints])
        self._any_prismatic = bool(self._prismatic.any())
        origin = np.array([joint.origin_rotation for joint in self.joints])
        axes = np.array([joint.axis for joint in self.joints])
        cross = np.zeros((n, 3, 3))
        cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -axes[:, 2], axes[:, 1], -axes[:, 0]
        cross -= cross.transpose(0, 2, 1)
        cross[self._prismatic] = 0.0
        basis = np.zeros((n, 3, 3, 4))
        basis[:, 0, :, :3] = origin
        basis[:, 0, :, 3] = [joint.origin_xyz for joint in self.joints]
        basis[:, 1, :, :3] = origin @ cross
        basis[:, 2, :, :3] = origin @ cross @ cross
        basis[self._prismatic, 1, :, 3] = (origin @ axes[:, :, None])[self._prismatic, :, 0]
        self._local_basis = basis.reshape(n, 3, 12)
        self._local_template = np.zeros((n, 4, 4))
        self._local_template[:, 3, 3] = 1.0
        self._coefficient_template = np.ones((n, 1, 3))
        self._world_template = np.zeros((n + 1, 4, 4))
        self._world_template[0] = np.eye(4)
        # world[k + 1] is joint k's frame, world[0] the base: parent row = parent index + 1.
        self._steps = [(joint.parent + 1, index) for index, joint in enumerate(self.joints)]
        self._axes_local = axes[:, :, None]
        self._effector_rows = np.array([e.parent + 1 for e in self.effectors], dtype=int)
        # Each effector's tool frame in its parent joint's frame: [rotation | offset].
        self._effector_frames_local = np.zeros((len(self.effectors), 4, 4))
        self._effector_frames_local[:, :3, :3] = [e.rotation for e in self.effectors]
        self._effector_frames_local[:, :3, 3] = [e.offset for e in self.effectors]
        self._effector_frames_local[:, 3, 3] = 1.0
        self._effector_points_local = self._effector_frames_local[:, :, 3:]

    # ---------------------------------------------------------------- forward kinematics

    def _joint_vector(self, q: object) -> np.ndarray:
        """Return q as a float (n,) array, or raise ValueError on a wrong length."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.dof,):
            raise ValueError(f'joint vector has shape {q.shape}, expected ({self.dof},)'
                             f' for joints {self.joint_names}')
        return q

    def _frames(self, q: object) -> np.ndarray:
        """Return (n + 1, 4, 4) world transforms: the base, then each joint after its motion."""
        q = self.expand(q)
        coefficients = self._coefficient_template.copy()
        coefficients[:, 0, 1] = np.sin(q)
        coefficients[:, 0, 2] -= np.cos(q)
        if self._any_prismatic:
            coefficients[self._prismatic, 0, 1] = q[self._prismatic]
            coefficients[self._prismatic, 0, 2] = 0.0
        local = self._local_template.copy()
        # The top 3 rows of each 4x4 are 12 contiguous numbers: write the product in place.
        n = len(q)
        np.matmul(coefficients, self._local_basis, out=local.reshape(n, 16)[:, None, :12])
        world = self._world_template.copy()
        for parent_row, index in self._steps:
            # ndarray.dot with out= has a third of np.matmul's call overhead on 4x4s.
            world[parent_row].dot(local[index], out=world[index + 1])
        return world

    def forward(self, q: object) -> Kinematics:
        """
        Return the forward kinematics of joint positions q (dof,), in the base frame.

        The arrays are per movable joint (all_joint_names order). Every call returns new
        arrays (safe to keep, and to call from several threads).
        """
        world = self._frames(q)
        rotations = world[1:, :3, :3]
        axes = (rotations @ self._axes_local)[:, :, 0]
        return Kinematics(world[1:, :3, 3], axes, rotations, self._effector_points(world))

    def _effector_points(self, world: np.ndarray) -> np.ndarray:
        """Return (m, 3) effector points from the world transforms of _frames()."""
        return (world[self._effector_rows] @ self._effector_points_local)[:, :3, 0]

    def effector_positions(self, q: object) -> np.ndarray:
        """Return the (m, 3) effector points (metres, base frame) at joint angles q."""
        return self._effector_points(self._frames(q))

    def tip_position(self, q: object, effector: int = 0) -> np.ndarray:
        """Return effector `effector`'s (3,) point (metres, base frame) at joint angles q."""
        return self.effector_positions(q)[effector]

    def effector_poses(self, q: object) -> np.ndarray:
        """
        Return the (m, 4, 4) tool frames of the effectors at joint angles q, base frame.

        An effector's tool frame is its tip link's frame as the URDF defines it (fixed joints
        folded in): translation in metres, rotation columns the tool's x, y, z axes.
        """
        return self._frames(q)[self._effector_rows] @ self._effector_frames_local

    def tip_pose(self, q: object, effector: int = 0) -> np.ndarray:
        """Return effector `effector`'s (4, 4) tool frame (base frame) at joint angles q."""
        return self.effector_poses(q)[effector]

    def joint_positions(self, q: object) -> np.ndarray:
        """Return the (n, 3) joint origins (metres, base frame) at joint angles q."""
        return self._frames(q)[1:, :3, 3]

    def position_jacobian(self, kinematics: Kinematics) -> np.ndarray:
        """
        Return the (m, 3, dof) effector position Jacobian of a forward() result.

        Joint j's column for effector e is cross(axes[j], effectors[e] - positions[j])
        (metres/radian) for a revolute joint, axes[j] for a prismatic one, when j moves e,
        else zero; an independent joint's column sums its followers' times their multipliers.
        """
        axis_x, axis_y, axis_z = kinematics.axes.T
        lever = kinematics.effectors[:, :, None] - kinematics.positions.T[None]  # (m, 3, n)
        jacobian = np.empty_like(lever)
        jacobian[:, 0] = axis_y * lever[:, 2] - axis_z * lever[:, 1]
        jacobian[:, 1] = axis_z * lever[:, 0] - axis_x * lever[:, 2]
        jacobian[:, 2] = axis_x * lever[:, 1] - axis_y * lever[:, 0]
        if self._any_prismatic:
            jacobian[:, :, self._prismatic] = kinematics.axes[self._prismatic].T
        jacobian *= self._joint_moves[:, None, :]
        if not self.coupled:
            return jacobian
        per_coordinate = np.zeros((self.dof,) + jacobian.shape[:2])
        np.add.at(per_coordinate, self.coordinate_of_joint,
                  (jacobian * self.multipliers).transpose(2, 0, 1))
        return per_coordinate.transpose(1, 2, 0)

    # ---------------------------------------------------------------- URDF output

    def to_urdf(self, robot_name: str) -> str:
        """Return a URDF document of the model: fabrik_ros.urdf.chain_to_urdf."""
        from fabrik_ros.urdf import chain_to_urdf
        return chain_to_urdf(self, robot_name)

    # ---------------------------------------------------------------- limits

    def clip(self, q: object) -> np.ndarray:
        """Return q (n,) clipped into the joint limits; ValueError if not finite."""
        q = self._joint_vector(q)
        if not np.all(np.isfinite(q)):
            raise ValueError(f'joint vector is not finite: {q.tolist()}')
        return np.clip(q, self.lower, self.upper)

    def neutral(self) -> np.ndarray:
        """Return a sensible in-limit seed: all zeros, clipped into the limits."""
        return np.clip(np.zeros(self.dof), self.lower, self.upper)

    def with_limits(self, lower: object, upper: object,
                    max_velocity: object | None = None) -> Chain:
        """
        Return a copy with per-joint limits replaced.

        lower/upper: (dof,) radians or metres (+-inf for unlimited); max_velocity: optional
        (dof,) rad/s or m/s; per independent joint (mimic joints keep their own limits, and
        keep narrowing their leader's). Raises ChainError on a wrong length, NaN, or
        lower > upper (naming the joint).
        """
        lower = _limit_vector(lower, self.dof, 'lower')
        upper = _limit_vector(upper, self.dof, 'upper')
        velocity = (self.max_velocity if max_velocity is None
                    else _limit_vector(max_velocity, self.dof, 'max_velocity'))
        joints = list(self.joints)
        for index, lo, hi, vel in zip(self._leaders, lower, upper, velocity):
            joints[index] = replace(joints[index], lower=lo, upper=hi, max_velocity=vel)
        return Chain(self.base_link, joints, self.effectors)


def _frozen_array(values: Iterable[float]) -> np.ndarray:
    """Return a read-only float array."""
    array = np.array(list(values), dtype=float)
    array.setflags(write=False)
    return array


def _limit_vector(values: object, n: int, what: str) -> np.ndarray:
    """Return values as a float (n,) array without NaN, or raise ChainError."""
    array = np.asarray(values, dtype=float)
    if array.shape != (n,):
        raise ChainError(f'{what} limits have shape {array.shape}, expected ({n},)')
    if np.any(np.isnan(array)):
        raise ChainError(f'{what} limits contain NaN: {array.tolist()}')
    return array


def check_unique(names: Sequence[str], kind: str) -> None:
    """Raise ChainError naming the first duplicated name."""
    seen = set()
    for name in names:
        if name in seen:
            raise ChainError(f"duplicate {kind} name '{name}'")
        seen.add(name)
