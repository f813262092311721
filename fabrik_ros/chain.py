"""
Kinematic model of revolute-joint chains and trees, with fast forward kinematics.

A robot is a tree of revolute joints, URDF style: each joint has a fixed origin transform
from its parent joint's frame, a unit axis, and position/velocity limits. Fixed joints are
folded into the next origin or into an effector offset. Effectors are points (tip links)
rigidly attached to a joint's frame. A serial chain is the one-effector case.

Conventions: SI units (metres, radians, rad/s); all world quantities are in the base link's
frame; rotations from roll/pitch/yaw follow URDF, R = Rz(yaw) @ Ry(pitch) @ Rx(roll).
The module imports numpy and the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Iterable, Iterator, NamedTuple, Sequence
import xml.etree.ElementTree as ElementTree

import numpy as np

_ORTHONORMAL_TOLERANCE = 1e-6
_AXIS_LETTERS = {'x': (1.0, 0.0, 0.0), 'y': (0.0, 1.0, 0.0), 'z': (0.0, 0.0, 1.0)}
_AXIS_WORDS = {'x': 'roll', 'y': 'pitch', 'z': 'yaw'}
_JOINT_TYPE_AXES = {'hinge': ('z', 'y'), 'two_axis': ('zy',)}


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


def rotation_about_axis(axis: Sequence[float], angle: float) -> np.ndarray:
    """Return the (3, 3) rotation by angle (radians) about a unit axis (Rodrigues)."""
    k = _cross_matrix(np.asarray(axis, dtype=float))
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _cross_matrix(v: np.ndarray) -> np.ndarray:
    """Return the (3, 3) matrix K with K @ w == cross(v, w)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _frozen_vector(value: object, what: str) -> np.ndarray:
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


@dataclass(frozen=True, eq=False)
class Joint:
    """
    One revolute joint of the tree.

    origin_xyz/origin_rotation: the transform from the parent joint's frame (after the
    parent's rotation; the base link frame if parent == -1) to this joint's frame at q = 0,
    fixed joints folded in. The joint then rotates its frame by q about `axis`.
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

    def __post_init__(self) -> None:
        """Validate and freeze the fields; normalise the axis."""
        what = f"joint '{self.name}'"
        if not self.name:
            raise ChainError('a joint has an empty name')
        object.__setattr__(self, 'origin_xyz', _frozen_vector(self.origin_xyz, f'{what} origin'))
        object.__setattr__(self, 'origin_rotation',
                           _frozen_rotation(self.origin_rotation, f'{what} origin rotation'))
        axis = _frozen_vector(self.axis, f'{what} axis')
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


@dataclass(frozen=True, eq=False)
class Effector:
    """A tip link: a point rigidly attached to a joint's frame (or to the base link)."""

    name: str
    parent: int                 # joint index it hangs from, -1 = the base link
    offset: np.ndarray          # (3,) metres, in the parent joint's frame
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # tip frame orientation

    def __post_init__(self) -> None:
        """Validate and freeze the fields."""
        if not self.name:
            raise ChainError('an effector has an empty name')
        what = f"effector '{self.name}'"
        object.__setattr__(self, 'offset', _frozen_vector(self.offset, f'{what} offset'))
        object.__setattr__(self, 'rotation',
                           _frozen_rotation(self.rotation, f'{what} rotation'))


class Kinematics(NamedTuple):
    """Forward kinematics of one joint vector, all in the base link frame."""

    positions: np.ndarray   # (n, 3) metres, joint origins
    axes: np.ndarray        # (n, 3) unit joint axes
    rotations: np.ndarray   # (n, 3, 3) joint frames after the joint rotation
    effectors: np.ndarray   # (m, 3) metres, effector points


class Chain:
    """
    A tree of revolute joints with point effectors; a serial chain has one effector.

    Joints are in topological order (joints[i].parent < i), depth-first from the base, so a
    serial chain lists its joints base to tip. Instances are immutable.
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
        self.joint_names = [joint.name for joint in self.joints]
        self.effector_names = [effector.name for effector in self.effectors]
        self.link_names = [joint.link or f'{joint.name}_link' for joint in self.joints]
        _check_unique(self.joint_names, 'joint')
        _check_unique([base_link] + self.link_names
                      + [e.name for e in self.effectors if not self._is_joint_link(e)], 'link')

        self.lower = _frozen_array([joint.lower for joint in self.joints])
        self.upper = _frozen_array([joint.upper for joint in self.joints])
        self.max_velocity = _frozen_array([joint.max_velocity for joint in self.joints])
        self.parents = np.array([joint.parent for joint in self.joints], dtype=int)
        self.parents.setflags(write=False)
        self.moves_effector = self._ancestor_mask()
        self._precompute()

    @classmethod
    def from_urdf(cls, urdf_xml: str, base_link: str, tip_link: str | Sequence[str]) -> Chain:
        """
        Build the chain (one tip link) or tree (several) between base_link and the tips.

        Only the joints on the paths from base_link to the tips are kept; joints shared by
        several paths appear once. Joints are ordered depth-first from the base, branches in
        the order of the tips, effectors in the order of the tips. Fixed joints are folded
        into the next origin or the effector offset; revolute and continuous joints move;
        any other joint type on a path raises ChainError.
        """
        tips = [tip_link] if isinstance(tip_link, str) else list(tip_link)
        if not tips:
            raise ChainError('no tip link given')
        _check_unique(tips, 'tip link')
        robot = _UrdfRobot(urdf_xml)
        for link in [base_link] + tips:
            robot.check_link(link)
        paths = [robot.path(base_link, tip) for tip in tips]
        children: dict[str, list[_UrdfJoint]] = {}
        for path in paths:
            for urdf_joint in path:
                siblings = children.setdefault(urdf_joint.parent, [])
                if urdf_joint not in siblings:
                    siblings.append(urdf_joint)
        joints: list[Joint] = []
        effector_by_tip: dict[str, Effector] = {}

        def visit(link: str, parent: int, pose: _Pose) -> None:
            if link in tips:
                effector_by_tip[link] = Effector(link, parent, pose.xyz, pose.rotation)
            for urdf_joint in children.get(link, ()):
                origin = _Pose(pose.xyz + pose.rotation @ urdf_joint.origin.xyz,
                               pose.rotation @ urdf_joint.origin.rotation)
                if urdf_joint.kind == 'fixed':
                    visit(urdf_joint.child, parent, origin)
                    continue
                joints.append(urdf_joint.to_joint(parent, origin))
                visit(urdf_joint.child, len(joints) - 1, _Pose(np.zeros(3), np.eye(3)))

        visit(base_link, -1, _Pose(np.zeros(3), np.eye(3)))
        return cls(base_link, joints, [effector_by_tip[tip] for tip in tips])

    @classmethod
    def from_parameters(cls, segments: int, segment_length: float | Sequence[float], *,
                        joint_type: str = 'hinge',
                        segment_axes: Sequence[str] | None = None,
                        joint_limit: float | Sequence[float] = math.pi / 2,
                        max_velocity: float = 2.0,
                        base_link: str = 'base_link',
                        tip_link: str | Sequence[str] = 'tip',
                        legs: int = 0,
                        body_radius: float = 0.0,
                        mount_xyz: Sequence[float] = (0.0, 0.0, 0.0),
                        mount_rpy: Sequence[float] = (0.0, 0.0, 0.0)) -> Chain:
        """
        Build a serial chain (legs=0) or a legged tree from plain parameters.

        A limb is `segments` links along the local +x axis, `segment_length` metres each (or
        one length per segment). Each segment starts with its joint(s), given per segment by
        `segment_axes` as axis letters in the segment frame, cycled if shorter: 'z' a yaw
        hinge, 'y' a pitch hinge, 'zy' a yaw then a pitch at one point (two-axis). Shorthands:
        joint_type 'hinge' = ('z', 'y') (alternating yaw/pitch hinges, so the limb reaches
        3D), 'two_axis' = ('zy',). Joints are named seg<i>_yaw / seg<i>_pitch / seg<i>_roll
        (i from 1), the limb's tip link is `tip_link`.

        joint_limit: symmetric limit in radians (inf = continuous), one for all joints or one
        per joint of a limb. max_velocity: rad/s for every joint.

        The limb is mounted at mount_xyz (metres) / mount_rpy (radians) in the base link
        frame (e.g. mount_rpy (0, -pi/2, 0) points it up). With legs=N >= 1, N copies are
        spaced evenly around the base z axis: leg k (from 1) is mounted at
        Rz(2 pi (k-1) / N) applied to (body_radius, 0, 0) + mount_xyz with rotation
        Rz(2 pi (k-1) / N) @ R(mount_rpy), i.e. pointing radially outward at zero. Its joints
        are prefixed leg<k>_; its tip is leg<k>_<tip_link>, or tip_link[k-1] if a sequence of
        N names is given.
        """
        if isinstance(segments, bool) or not isinstance(segments, (int, np.integer)) \
                or segments < 1:
            raise ChainError(f'segments must be a positive integer, got {segments!r}')
        lengths = _per_item(segment_length, segments, 'segment_length')
        if not all(math.isfinite(v) and v > 0.0 for v in lengths):
            raise ChainError(f'segment lengths must be positive metres, got {lengths}')
        if segment_axes is None:
            if joint_type not in _JOINT_TYPE_AXES:
                raise ChainError(f'unknown joint_type {joint_type!r}, expected one of '
                                 f'{sorted(_JOINT_TYPE_AXES)}')
            segment_axes = _JOINT_TYPE_AXES[joint_type]
        if isinstance(segment_axes, str) or not segment_axes or any(
                not letters or set(letters) - set(_AXIS_LETTERS) for letters in segment_axes):
            raise ChainError(f'segment_axes must be a list of axis letter strings such as '
                             f"['z', 'y'] or ['zy'], got {segment_axes!r}")
        axes = [segment_axes[i % len(segment_axes)] for i in range(segments)]
        limits = _per_item(joint_limit, sum(len(a) for a in axes), 'joint_limit')
        if not all(v >= 0.0 for v in limits):
            raise ChainError(f'joint_limit must be >= 0 radians (symmetric), got {limits}')
        if isinstance(legs, bool) or not isinstance(legs, (int, np.integer)) or legs < 0:
            raise ChainError(f'legs must be an integer >= 0, got {legs!r}')
        if not (math.isfinite(body_radius) and body_radius >= 0.0):
            raise ChainError(f'body_radius must be >= 0 metres, got {body_radius!r}')
        mount = _Pose(_frozen_vector(mount_xyz, 'mount_xyz'), rotation_from_rpy(
            _frozen_vector(mount_rpy, 'mount_rpy')))
        limb = _Limb(lengths, axes, limits, float(max_velocity))
        joints: list[Joint] = []
        effectors: list[Effector] = []
        if legs == 0:
            tips = [tip_link] if isinstance(tip_link, str) else list(tip_link)
            if len(tips) != 1:
                raise ChainError(f'a serial chain has one tip link, got {tips}')
            effectors.append(limb.build(joints, '', mount, tips[0]))
            return cls(base_link, joints, effectors)
        if isinstance(tip_link, str):
            tips = [f'leg{k}_{tip_link}' for k in range(1, legs + 1)]
        else:
            tips = list(tip_link)
            if len(tips) != legs:
                raise ChainError(f'{legs} legs need {legs} tip links, got {tips}')
        for k, tip in enumerate(tips):
            turn = rotation_about_axis(_AXIS_LETTERS['z'], 2.0 * math.pi * k / legs)
            leg_mount = _Pose(turn @ (np.array([body_radius, 0.0, 0.0]) + mount.xyz),
                              turn @ mount.rotation)
            effectors.append(limb.build(joints, f'leg{k + 1}_', leg_mount, tip))
        return cls(base_link, joints, effectors)

    def _is_joint_link(self, effector: Effector) -> bool:
        """
        Return True when the effector is its parent joint's own child link.

        URDF tips are often the child link of the last movable joint (offset zero); such an
        effector shares the link's name. Any other name clash is an error.
        """
        if effector.parent < 0 or effector.name != self.link_names[effector.parent]:
            return False
        if np.any(effector.offset != 0.0) or np.any(effector.rotation != np.eye(3)):
            raise ChainError(f"effector '{effector.name}' is named like the link of joint "
                             f"'{self.joint_names[effector.parent]}' but is offset from it")
        return True

    def __repr__(self) -> str:
        """Return a short summary: base, joint count, effectors."""
        return (f'Chain(base_link={self.base_link!r}, joints={len(self.joints)}, '
                f'effectors={self.effector_names!r})')

    @property
    def dof(self) -> int:
        """Return the number of movable joints n."""
        return len(self.joints)

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

    def _precompute(self) -> None:
        """
        Stack per-joint constants so forward() is a few vector ops plus one product per joint.

        Joint i's local transform at angle q is [O_i Rot(a_i, q) | t_i], and by Rodrigues
        O_i Rot(a_i, q) = O_i + sin(q) O_i K_i + (1 - cos(q)) O_i K_i^2 with K_i = [a_i]x.
        So its top three rows are (1, sin q, 1 - cos q) @ basis_i, one batched product for
        all joints; basis_i (3, 12) holds [O_i | t_i], [O_i K_i | 0], [O_i K_i^2 | 0].
        """
        n = len(self.joints)
        origin = np.array([joint.origin_rotation for joint in self.joints])
        cross = np.array([_cross_matrix(joint.axis) for joint in self.joints])
        basis = np.zeros((n, 3, 3, 4))
        basis[:, 0, :, :3] = origin
        basis[:, 0, :, 3] = [joint.origin_xyz for joint in self.joints]
        basis[:, 1, :, :3] = origin @ cross
        basis[:, 2, :, :3] = origin @ cross @ cross
        self._local_basis = basis.reshape(n, 3, 12)
        self._local_template = np.zeros((n, 4, 4))
        self._local_template[:, 3, 3] = 1.0
        self._coefficient_template = np.ones((n, 1, 3))
        self._world_template = np.zeros((n + 1, 4, 4))
        self._world_template[0] = np.eye(4)
        # world[k + 1] is joint k's frame, world[0] the base: parent row = parent index + 1.
        self._steps = [(joint.parent + 1, index) for index, joint in enumerate(self.joints)]
        self._axes_local = np.array([joint.axis for joint in self.joints])[:, :, None]
        self._effector_rows = np.array([e.parent + 1 for e in self.effectors], dtype=int)
        self._effector_points_local = np.ones((len(self.effectors), 4, 1))
        self._effector_points_local[:, :3, 0] = [e.offset for e in self.effectors]

    # ---------------------------------------------------------------- forward kinematics

    def _joint_vector(self, q: object) -> np.ndarray:
        """Return q as a float (n,) array, or raise ValueError on a wrong length."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joints),):
            raise ValueError(f'joint vector has shape {q.shape}, expected ({len(self.joints)},)'
                             f' for joints {self.joint_names}')
        return q

    def _frames(self, q: object) -> np.ndarray:
        """Return (n + 1, 4, 4) world transforms: the base, then each joint after rotation."""
        q = self._joint_vector(q)
        coefficients = self._coefficient_template.copy()
        coefficients[:, 0, 1] = np.sin(q)
        coefficients[:, 0, 2] -= np.cos(q)
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
        Return the forward kinematics of joint angles q (n,) radians, in the base frame.

        Every call returns new arrays (safe to keep, and to call from several threads).
        The position Jacobian of effector e follows directly:
        J[:, j] = cross(axes[j], effectors[e] - positions[j]) where moves_effector[e, j].
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

    def joint_positions(self, q: object) -> np.ndarray:
        """Return the (n, 3) joint origins (metres, base frame) at joint angles q."""
        return self._frames(q)[1:, :3, 3]

    def position_jacobian(self, kinematics: Kinematics) -> np.ndarray:
        """
        Return the (m, 3, n) effector position Jacobian (metres/radian) of a forward() result.

        Column j of effector e is cross(axes[j], effectors[e] - positions[j]) when joint j
        moves effector e (moves_effector[e, j]), else zero.
        """
        axis_x, axis_y, axis_z = kinematics.axes.T
        lever = kinematics.effectors[:, :, None] - kinematics.positions.T[None]  # (m, 3, n)
        jacobian = np.empty_like(lever)
        jacobian[:, 0] = axis_y * lever[:, 2] - axis_z * lever[:, 1]
        jacobian[:, 1] = axis_z * lever[:, 0] - axis_x * lever[:, 2]
        jacobian[:, 2] = axis_x * lever[:, 1] - axis_y * lever[:, 0]
        jacobian *= self.moves_effector[:, None, :]
        return jacobian

    # ---------------------------------------------------------------- URDF output

    def to_urdf(self, robot_name: str) -> str:
        """
        Return a URDF document of the model for robot_state_publisher and RViz.

        Each joint's child link is named as in link_names; effectors become links on fixed
        joints named <effector>_fixed. Links show a cylinder per outgoing link segment and a
        short cylinder along the joint axis. Joint effort is not modelled and written as 0.
        Chain.from_urdf(to_urdf(...), base_link, effector_names) reproduces the model.
        """
        radius = self._visual_radius()
        robot = ElementTree.Element('robot', name=robot_name)
        for name, rgba in _URDF_MATERIALS.items():
            ElementTree.SubElement(ElementTree.SubElement(robot, 'material', name=name),
                                   'color', rgba=rgba)
        # Offsets of what hangs from each frame: row 0 the base, row i + 1 joint i.
        outgoing: list[list[np.ndarray]] = [[] for _ in range(len(self.joints) + 1)]
        for joint in self.joints:
            outgoing[joint.parent + 1].append(joint.origin_xyz)
        for effector in self.effectors:
            outgoing[effector.parent + 1].append(effector.offset)
        frame_links = [self.base_link] + self.link_names

        base = ElementTree.SubElement(robot, 'link', name=self.base_link)
        # A disc under the base: a plate for a chain, the body of a legged tree.
        body_radius = max([radius * 2.0] + [float(np.hypot(*v[:2])) for v in outgoing[0]])
        _add_visual(base, _cylinder(body_radius, radius), _Pose(np.zeros(3), np.eye(3)),
                    'fabrik_joint')
        _add_link_cylinders(base, outgoing[0], radius)
        for index, joint in enumerate(self.joints):
            element = ElementTree.SubElement(robot, 'joint', name=joint.name,
                                             type='continuous' if joint.continuous
                                             else 'revolute')
            ElementTree.SubElement(element, 'parent', link=frame_links[joint.parent + 1])
            ElementTree.SubElement(element, 'child', link=self.link_names[index])
            _add_origin(element, _Pose(joint.origin_xyz, joint.origin_rotation))
            ElementTree.SubElement(element, 'axis', xyz=_format(joint.axis))
            limit = _urdf_limit(joint)
            if limit:
                ElementTree.SubElement(element, 'limit', limit)
            link = ElementTree.SubElement(robot, 'link', name=self.link_names[index])
            _add_visual(link, _cylinder(radius * 1.3, radius * 3.0),
                        _Pose(np.zeros(3), _rotation_from_z(joint.axis)), 'fabrik_joint')
            _add_link_cylinders(link, outgoing[index + 1], radius)
        for effector in self.effectors:
            if self._is_joint_link(effector):
                tip = robot.find(f"link[@name='{effector.name}']")
            else:
                element = ElementTree.SubElement(robot, 'joint', type='fixed',
                                                 name=f'{effector.name}_fixed')
                ElementTree.SubElement(element, 'parent',
                                       link=frame_links[effector.parent + 1])
                ElementTree.SubElement(element, 'child', link=effector.name)
                _add_origin(element, _Pose(effector.offset, effector.rotation))
                tip = ElementTree.SubElement(robot, 'link', name=effector.name)
            sphere = ElementTree.Element('sphere', radius=_format([radius * 1.2]))
            _add_visual(tip, sphere, _Pose(np.zeros(3), np.eye(3)), 'fabrik_tip')
        ElementTree.indent(robot)
        return '<?xml version="1.0"?>\n' + ElementTree.tostring(robot, encoding='unicode') + '\n'

    def _visual_radius(self) -> float:
        """Return a link cylinder radius (metres) in proportion to the typical link length."""
        lengths = [float(np.linalg.norm(v)) for v in
                   [j.origin_xyz for j in self.joints] + [e.offset for e in self.effectors]]
        lengths = [v for v in lengths if v > 1e-9] or [0.1]
        return float(np.clip(0.08 * np.median(lengths), 0.004, 0.04))

    # ---------------------------------------------------------------- limits

    def clip(self, q: object) -> np.ndarray:
        """Return q (n,) clipped into the joint limits; ValueError if not finite."""
        q = self._joint_vector(q)
        if not np.all(np.isfinite(q)):
            raise ValueError(f'joint vector is not finite: {q.tolist()}')
        return np.clip(q, self.lower, self.upper)

    def neutral(self) -> np.ndarray:
        """Return a sensible in-limit seed: all zeros, clipped into the limits."""
        return np.clip(np.zeros(len(self.joints)), self.lower, self.upper)

    def with_limits(self, lower: object, upper: object,
                    max_velocity: object | None = None) -> Chain:
        """
        Return a copy with per-joint limits replaced.

        lower/upper: (n,) radians (+-inf for unlimited); max_velocity: optional (n,) rad/s.
        Raises ChainError on a wrong length, NaN, or lower > upper (naming the joint).
        """
        lower = _limit_vector(lower, len(self.joints), 'lower')
        upper = _limit_vector(upper, len(self.joints), 'upper')
        velocity = (self.max_velocity if max_velocity is None
                    else _limit_vector(max_velocity, len(self.joints), 'max_velocity'))
        joints = [Joint(j.name, j.parent, j.origin_xyz, j.origin_rotation, j.axis,
                        lo, hi, vel, j.link)
                  for j, lo, hi, vel in zip(self.joints, lower, upper, velocity)]
        return Chain(self.base_link, joints, self.effectors)


class _Pose(NamedTuple):
    """A rigid transform: translation (3,) metres and rotation (3, 3)."""

    xyz: np.ndarray
    rotation: np.ndarray


@dataclass(frozen=True)
class _Limb:
    """A serial limb of plain parameters, see Chain.from_parameters."""

    lengths: list[float]        # metres per segment
    axes: list[str]             # axis letters per segment
    limits: list[float]         # symmetric radians per joint
    max_velocity: float         # rad/s

    def build(self, joints: list[Joint], prefix: str, mount: _Pose, tip: str) -> Effector:
        """Append the limb's joints (mounted at `mount` on the base) and return its tip."""
        parent, xyz, rotation = -1, mount.xyz, mount.rotation
        limits = iter(self.limits)
        for number, (length, letters) in enumerate(zip(self.lengths, self.axes), start=1):
            for letter in letters:
                limit = next(limits)
                joints.append(Joint(f'{prefix}seg{number}_{_AXIS_WORDS[letter]}', parent, xyz,
                                    rotation, _AXIS_LETTERS[letter], -limit, limit,
                                    self.max_velocity))
                parent, xyz, rotation = len(joints) - 1, np.zeros(3), np.eye(3)
            xyz = np.array([length, 0.0, 0.0])
        return Effector(tip, parent, xyz)


@dataclass(frozen=True, eq=False)
class _UrdfJoint:
    """The fields of one URDF <joint> element that the model uses."""

    name: str
    kind: str                   # URDF joint type
    parent: str
    child: str
    origin: _Pose
    axis: np.ndarray
    lower: float
    upper: float
    max_velocity: float

    def to_joint(self, parent: int, origin: _Pose) -> Joint:
        """Return the model joint, with `origin` (fixed joints folded in) as its origin."""
        if self.kind not in ('revolute', 'continuous'):
            raise ChainError(f"joint '{self.name}' has type '{self.kind}'; only revolute, "
                             'continuous and fixed joints are supported')
        return Joint(self.name, parent, origin.xyz, origin.rotation, self.axis,
                     self.lower, self.upper, self.max_velocity, self.child)


class _UrdfRobot:
    """The link tree of a URDF document."""

    def __init__(self, urdf_xml: str) -> None:
        """Parse the XML; raise ChainError on malformed XML or an inconsistent tree."""
        try:
            root = ElementTree.fromstring(urdf_xml)
        except ElementTree.ParseError as error:
            raise ChainError(f'malformed URDF XML: {error}') from None
        if root.tag != 'robot':
            raise ChainError(f'URDF root element is <{root.tag}>, expected <robot>')
        self.links = [_required(element, 'name', 'link') for element in root.iter('link')]
        _check_unique(self.links, 'link')
        self.joint_to_child: dict[str, _UrdfJoint] = {}
        names = []
        for element in root.findall('joint'):
            joint = _parse_urdf_joint(element)
            names.append(joint.name)
            for link in (joint.parent, joint.child):
                if link not in self.links:
                    raise ChainError(f"joint '{joint.name}' refers to unknown link '{link}'")
            if joint.child in self.joint_to_child:
                raise ChainError(f"link '{joint.child}' is the child of two joints: "
                                 f"'{self.joint_to_child[joint.child].name}' and "
                                 f"'{joint.name}'")
            self.joint_to_child[joint.child] = joint
        _check_unique(names, 'joint')

    def check_link(self, link: str) -> None:
        """Raise ChainError naming an unknown link and a few known ones."""
        if link not in self.links:
            known = ', '.join(self.links[:8]) + (', ...' if len(self.links) > 8 else '')
            raise ChainError(f"unknown link '{link}' (the URDF has links: {known})")

    def path(self, base_link: str, tip_link: str) -> list[_UrdfJoint]:
        """Return the URDF joints from base_link down to tip_link."""
        if tip_link == base_link:
            raise ChainError(f"tip link '{tip_link}' is the base link")
        path = []
        for joint in self._joints_above(tip_link):
            path.append(joint)
            if joint.parent == base_link:
                return path[::-1]
        raise ChainError(f"no path from base link '{base_link}' down to tip link "
                         f"'{tip_link}' (is the tip above the base or on another branch?)")

    def _joints_above(self, link: str) -> Iterator[_UrdfJoint]:
        """Yield the joints from link up to the root of the tree, nearest first."""
        seen = set()
        while link in self.joint_to_child and link not in seen:
            seen.add(link)
            joint = self.joint_to_child[link]
            yield joint
            link = joint.parent


def _parse_urdf_joint(element: ElementTree.Element) -> _UrdfJoint:
    """Return the model-relevant fields of a URDF <joint> element."""
    name = _required(element, 'name', 'joint')
    what = f"joint '{name}'"
    joint_type = _required(element, 'type', what)
    if element.find('mimic') is not None:
        raise ChainError(f'{what} is a mimic joint, which is not supported')
    parent, child = (_required(_child(element, tag, what), 'link', f'{what} <{tag}>')
                     for tag in ('parent', 'child'))
    origin = element.find('origin')
    xyz = _urdf_vector(origin, 'xyz', '0 0 0', f'{what} origin')
    rpy = _urdf_vector(origin, 'rpy', '0 0 0', f'{what} origin')
    axis = _urdf_vector(element.find('axis'), 'xyz', '1 0 0', f'{what} axis')
    limit = element.find('limit')
    lower, upper = -math.inf, math.inf
    if joint_type == 'revolute':
        if limit is None:
            raise ChainError(f'revolute {what} has no <limit>')
        lower = _urdf_float(limit, 'lower', '0', what)
        upper = _urdf_float(limit, 'upper', '0', what)
    velocity = math.inf if limit is None else _urdf_float(limit, 'velocity', 'inf', what)
    return _UrdfJoint(name, joint_type, parent, child, _Pose(xyz, rotation_from_rpy(rpy)),
                      axis, lower, upper, velocity)


def _required(element: ElementTree.Element, attribute: str, what: str) -> str:
    """Return a non-empty attribute or raise ChainError naming the element."""
    value = element.get(attribute, '')
    if not value:
        raise ChainError(f"{what} has no '{attribute}' attribute")
    return value


def _child(element: ElementTree.Element, tag: str, what: str) -> ElementTree.Element:
    """Return the child element or raise ChainError naming the missing tag."""
    found = element.find(tag)
    if found is None:
        raise ChainError(f'{what} has no <{tag}>')
    return found


def _urdf_vector(element: ElementTree.Element | None, attribute: str, default: str,
                 what: str) -> np.ndarray:
    """Return a 3-number attribute of an optional element (default when absent)."""
    text = default if element is None else element.get(attribute, default)
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        values = []
    if len(values) != 3:
        raise ChainError(f'{what} {attribute}: expected 3 finite numbers, got {text!r}')
    return _frozen_vector(values, f'{what} {attribute}')


def _urdf_float(element: ElementTree.Element, attribute: str, default: str, what: str) -> float:
    """Return a number attribute (default when absent) or raise ChainError."""
    text = element.get(attribute, default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise ChainError(f'{what} <limit {attribute}="{text}"> is not a number')
    return value


_URDF_MATERIALS = {
    'fabrik_link': '0.85 0.55 0.15 1',
    'fabrik_joint': '0.25 0.25 0.3 1',
    'fabrik_tip': '0.15 0.55 0.9 1',
}


def _format(values: Iterable[float]) -> str:
    """Return numbers as a URDF attribute with full precision ('0.1 0.0 -0.25')."""
    return ' '.join(repr(float(v) + 0.0) for v in values)  # + 0.0 turns -0.0 into 0.0


def _urdf_limit(joint: Joint) -> dict[str, str]:
    """Return the <limit> attributes of a joint ({} for an unbounded continuous joint)."""
    limit = {}
    if not joint.continuous:
        if not (math.isfinite(joint.lower) and math.isfinite(joint.upper)):
            raise ChainError(f"joint '{joint.name}' has a one-sided limit "
                             f'[{joint.lower}, {joint.upper}], which URDF cannot express')
        limit = {'lower': _format([joint.lower]), 'upper': _format([joint.upper])}
    if math.isfinite(joint.max_velocity):
        limit.update(effort='0', velocity=_format([joint.max_velocity]))
    elif not joint.continuous:
        raise ChainError(f"revolute joint '{joint.name}' needs a finite max_velocity for URDF")
    return limit


def _add_origin(element: ElementTree.Element, pose: _Pose) -> None:
    """Append an <origin xyz rpy> of pose to element."""
    ElementTree.SubElement(element, 'origin', xyz=_format(pose.xyz),
                           rpy=_format(rpy_from_rotation(pose.rotation)))


def _cylinder(radius: float, length: float) -> ElementTree.Element:
    """Return a URDF <cylinder> (along its local z) element."""
    return ElementTree.Element('cylinder', radius=_format([radius]), length=_format([length]))


def _add_visual(link: ElementTree.Element, geometry: ElementTree.Element, pose: _Pose,
                material: str) -> None:
    """Append a <visual> with one geometry at pose to a link element."""
    visual = ElementTree.SubElement(link, 'visual')
    _add_origin(visual, pose)
    ElementTree.SubElement(visual, 'geometry').append(geometry)
    ElementTree.SubElement(visual, 'material', name=material)


def _add_link_cylinders(link: ElementTree.Element, offsets: list[np.ndarray],
                        radius: float) -> None:
    """Append a cylinder from the link origin to each non-zero offset (metres)."""
    for offset in offsets:
        length = float(np.linalg.norm(offset))
        if length > 1e-9:
            _add_visual(link, _cylinder(radius, length),
                        _Pose(offset / 2.0, _rotation_from_z(offset)), 'fabrik_link')


def _rotation_from_z(direction: np.ndarray) -> np.ndarray:
    """Return a (3, 3) rotation turning +z onto a non-zero direction."""
    unit = direction / np.linalg.norm(direction)
    turn = np.cross([0.0, 0.0, 1.0], unit)
    sine = float(np.linalg.norm(turn))
    if sine < 1e-12:
        return np.eye(3) if unit[2] > 0.0 else rotation_about_axis([1.0, 0.0, 0.0], math.pi)
    return rotation_about_axis(turn / sine, math.atan2(sine, float(unit[2])))


def _per_item(value: float | Sequence[float], count: int, what: str) -> list[float]:
    """Return count floats: a scalar or a 1-item sequence repeated, or count items as given."""
    values = [float(v) for v in np.reshape(value, -1)]
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise ChainError(f'{what} has {len(values)} values, expected 1 or {count}')
    return values


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


def _check_unique(names: Sequence[str], kind: str) -> None:
    """Raise ChainError naming the first duplicated name."""
    seen = set()
    for name in names:
        if name in seen:
            raise ChainError(f"duplicate {kind} name '{name}'")
        seen.add(name)
