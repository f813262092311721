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
Forward kinematics of a tree of joints: world frames, effector poses, position Jacobian.

Works on every joint's position (mimic followers included, see fabrik_ros.model.coupling),
radians or metres; all results are in the base link's frame, metres. Imports numpy and
the standard library only.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from fabrik_ros.model.joints import Effector, Joint
import numpy as np


class Kinematics(NamedTuple):
    """Forward kinematics of one joint vector, all in the base link frame."""

    positions: np.ndarray   # (n, 3) metres, joint origins
    axes: np.ndarray        # (n, 3) unit joint axes
    rotations: np.ndarray   # (n, 3, 3) joint frames after the joint rotation
    effectors: np.ndarray   # (m, 3) metres, effector points


class ForwardKinematics:
    """
    A tree's per-joint constants, stacked so that a sweep is a few vector ops per joint.

    Revolute joint i's local transform at angle q is [O_i Rot(a_i, q) | t_i], and by
    Rodrigues O_i Rot(a_i, q) = O_i + sin(q) O_i K_i + (1 - cos(q)) O_i K_i^2 with
    K_i = [a_i]x: its top three rows are (1, sin q, 1 - cos q) @ basis_i, one batched
    product for all joints; basis_i (3, 12) holds [O_i | t_i], [O_i K_i | 0],
    [O_i K_i^2 | 0]. A prismatic joint's is [O_i | t_i + q O_i a_i]: coefficients
    (1, q, 0) with [O_i | t_i], [0 | O_i a_i], 0. The joints are parents first.
    """

    def __init__(self, joints: Sequence[Joint], effectors: Sequence[Effector]) -> None:
        """Precompute the stacked constants of the joints and effectors."""
        n = len(joints)
        self.joint_moves = _ancestor_mask(joints, effectors)
        self.prismatic = np.array([joint.prismatic for joint in joints])
        self.any_prismatic = bool(self.prismatic.any())
        origin = np.array([joint.origin_rotation for joint in joints])
        axes = np.array([joint.axis for joint in joints])
        cross = np.zeros((n, 3, 3))
        cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -axes[:, 2], axes[:, 1], -axes[:, 0]
        cross -= cross.transpose(0, 2, 1)
        cross[self.prismatic] = 0.0
        basis = np.zeros((n, 3, 3, 4))
        basis[:, 0, :, :3] = origin
        basis[:, 0, :, 3] = [joint.origin_xyz for joint in joints]
        basis[:, 1, :, :3] = origin @ cross
        basis[:, 2, :, :3] = origin @ cross @ cross
        basis[self.prismatic, 1, :, 3] = (origin @ axes[:, :, None])[self.prismatic, :, 0]
        self._local_basis = basis.reshape(n, 3, 12)
        self._local_template = np.zeros((n, 4, 4))
        self._local_template[:, 3, 3] = 1.0
        self._coefficient_template = np.ones((n, 1, 3))
        self._world_template = np.zeros((n + 1, 4, 4))
        self._world_template[0] = np.eye(4)
        # world[k + 1] is joint k's frame, world[0] the base: parent row = parent index + 1.
        self._steps = [(joint.parent + 1, index) for index, joint in enumerate(joints)]
        self._axes_local = axes[:, :, None]
        self._effector_rows = np.array([e.parent + 1 for e in effectors], dtype=int)
        # Each effector's tool frame in its parent joint's frame: [rotation | offset].
        self._effector_frames_local = np.zeros((len(effectors), 4, 4))
        self._effector_frames_local[:, :3, :3] = [e.rotation for e in effectors]
        self._effector_frames_local[:, :3, 3] = [e.offset for e in effectors]
        self._effector_frames_local[:, 3, 3] = 1.0
        self._effector_points_local = self._effector_frames_local[:, :, 3:]

    def frames(self, q: np.ndarray) -> np.ndarray:
        """
        Return the (n + 1, 4, 4) world transforms at every joint's position q (n,).

        Row 0 is the base link, row k + 1 joint k's frame after its motion.
        """
        coefficients = self._coefficient_template.copy()
        coefficients[:, 0, 1] = np.sin(q)
        coefficients[:, 0, 2] -= np.cos(q)
        if self.any_prismatic:
            coefficients[self.prismatic, 0, 1] = q[self.prismatic]
            coefficients[self.prismatic, 0, 2] = 0.0
        local = self._local_template.copy()
        # The top 3 rows of each 4x4 are 12 contiguous numbers: write the product in place.
        n = len(q)
        np.matmul(coefficients, self._local_basis, out=local.reshape(n, 16)[:, None, :12])
        world = self._world_template.copy()
        for parent_row, index in self._steps:
            # On 4x4s the call overhead dominates, and ndarray.dot with out= has less of it.
            world[parent_row].dot(local[index], out=world[index + 1])
        return world

    def kinematics(self, world: np.ndarray) -> Kinematics:
        """Return the joint origins, axes, frames and effector points of frames()."""
        rotations = world[1:, :3, :3]
        axes = (rotations @ self._axes_local)[:, :, 0]
        return Kinematics(world[1:, :3, 3], axes, rotations, self.effector_points(world))

    def effector_points(self, world: np.ndarray) -> np.ndarray:
        """Return (m, 3) effector points from the world transforms of frames()."""
        return (world[self._effector_rows] @ self._effector_points_local)[:, :3, 0]

    def effector_frames(self, world: np.ndarray) -> np.ndarray:
        """Return (m, 4, 4) effector tool frames from the world transforms of frames()."""
        return world[self._effector_rows] @ self._effector_frames_local

    def position_jacobian(self, kinematics: Kinematics) -> np.ndarray:
        """
        Return the (m, 3, n) effector position Jacobian per joint of a kinematics() result.

        Joint j's column for effector e is cross(axes[j], effectors[e] - positions[j])
        (metres/radian) for a revolute joint, axes[j] for a prismatic one, when j moves e,
        else zero.
        """
        axis_x, axis_y, axis_z = kinematics.axes.T
        lever = kinematics.effectors[:, :, None] - kinematics.positions.T[None]  # (m, 3, n)
        jacobian = np.empty_like(lever)
        jacobian[:, 0] = axis_y * lever[:, 2] - axis_z * lever[:, 1]
        jacobian[:, 1] = axis_z * lever[:, 0] - axis_x * lever[:, 2]
        jacobian[:, 2] = axis_x * lever[:, 1] - axis_y * lever[:, 0]
        if self.any_prismatic:
            jacobian[:, :, self.prismatic] = kinematics.axes[self.prismatic].T
        jacobian *= self.joint_moves[:, None, :]
        return jacobian


def _ancestor_mask(joints: Sequence[Joint], effectors: Sequence[Effector]) -> np.ndarray:
    """Return (m, n) bool: True where joint j lies on the path from the base to effector e."""
    mask = np.zeros((len(effectors), len(joints)), dtype=bool)
    for row, effector in enumerate(effectors):
        index = effector.parent
        while index >= 0:
            mask[row, index] = True
            index = joints[index].parent
    mask.setflags(write=False)
    return mask
