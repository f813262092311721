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
Chain: the kinematic model of a jointed chain or tree, with fast forward kinematics.

A robot is a tree of revolute and prismatic joints, URDF style (fabrik_ros.model.joints):
each joint has a fixed origin transform from its parent joint's frame, a unit axis, and
position/velocity limits. Fixed joints are folded into the next origin or into an
effector's tool frame. Effectors are tip links: a frame rigidly attached to a joint's
frame. A serial chain is the one-effector case. A mimic joint follows another; the joint
vector q holds the independent joints only (chain.joint_names), and chain.expand(q) gives
every joint's position (chain.all_joint_names).

Conventions: SI units (metres for prismatic joints, radians for revolute ones, m/s and
rad/s); all world quantities are in the base link's frame. This module sits above the
model's other layers and is imported by none of them; it imports numpy and the standard
library only.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from fabrik_ros.collision import (Clearance, collision_model, CollisionModel, CollisionSource,
                                  Obstacle, Scene)
from fabrik_ros.model.builders import parts_from_parameters
from fabrik_ros.model.coupling import couple
from fabrik_ros.model.joints import ChainError, check_tree, Effector, Joint, Parts
from fabrik_ros.model.kinematics import ForwardKinematics, Kinematics
from fabrik_ros.model.urdf_reader import parts_from_urdf
from fabrik_ros.model.urdf_writer import urdf_from_parts
import numpy as np


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
        self.base_link = base_link
        self.joints: tuple[Joint, ...] = tuple(joints)
        self.effectors: tuple[Effector, ...] = tuple(effectors)
        check_tree(Parts(base_link, self.joints, self.effectors))
        self.all_joint_names = [joint.name for joint in self.joints]
        self.effector_names = [effector.name for effector in self.effectors]
        self.link_names = [joint.link_name for joint in self.joints]
        coupling = couple(self.joints)
        self._leaders = coupling.leaders
        self.joint_names = coupling.joint_names
        self.lower, self.upper = coupling.lower, coupling.upper
        self.max_velocity = coupling.max_velocity
        self.coordinate_of_joint = coupling.coordinate_of_joint
        self.multipliers, self.offsets = coupling.multipliers, coupling.offsets
        self.coupled = coupling.coupled
        self.parents = np.array([joint.parent for joint in self.joints], dtype=int)
        self.parents.setflags(write=False)
        self._kinematics = ForwardKinematics(self.joints, self.effectors)
        moves = np.zeros((self.dof, len(self.effectors)), dtype=bool)
        np.logical_or.at(moves, self.coordinate_of_joint, self._kinematics.joint_moves.T)
        self.moves_effector = moves.T.copy()
        self.moves_effector.setflags(write=False)
        self.collision_source = CollisionSource()
        # built on first use (or the reason it cannot be), shared by copies
        self._collision: list[CollisionModel | ChainError] = []

    @classmethod
    def from_urdf(cls, urdf_xml: str, base_link: str, tip_link: str | Sequence[str], *,
                  urdf_dir: str | Path | None = None,
                  package_dirs: Mapping[str, str | Path] | None = None,
                  srdf_xml: str | None = None) -> Chain:
        """
        Build the chain (one tip link) or tree (several): see urdf_reader.parts_from_urdf.

        urdf_dir, package_dirs and srdf_xml only serve the collision model (`collision`),
        read on first use: where relative and package:// mesh names resolve, and the pairs
        an SRDF disables.
        """
        chain = cls(*parts_from_urdf(urdf_xml, base_link, tip_link))
        chain.collision_source = CollisionSource(urdf_xml, urdf_dir, dict(package_dirs or {}),
                                                 srdf_xml)
        return chain

    @classmethod
    def from_parameters(cls, segments: int, segment_length: float | Sequence[float],
                        **options: Any) -> Chain:
        """Build a serial chain or a legged tree: see builders.parts_from_parameters."""
        return cls(*parts_from_parameters(segments, segment_length, **options))

    def to_urdf(self, robot_name: str) -> str:
        """Return a URDF document of the model: see urdf_writer.urdf_from_parts."""
        return urdf_from_parts(Parts(self.base_link, self.joints, self.effectors), robot_name)

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

    # ---------------------------------------------------------------- forward kinematics

    def _joint_vector(self, q: object) -> np.ndarray:
        """Return q as a float (n,) array, or raise ValueError on a wrong length."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.dof,):
            raise ValueError(f'joint vector has shape {q.shape}, expected ({self.dof},)'
                             f' for joints {self.joint_names}')
        return q

    def world_frames(self, q: object) -> np.ndarray:
        """Return (n + 1, 4, 4) world transforms: the base, then each joint after its motion."""
        return self._kinematics.frames(self.expand(q))

    def forward(self, q: object) -> Kinematics:
        """
        Return the forward kinematics of joint positions q (dof,), in the base frame.

        The arrays are per movable joint (all_joint_names order). Every call returns new
        arrays (safe to keep, and to call from several threads).
        """
        return self._kinematics.kinematics(self.world_frames(q))

    def effector_positions(self, q: object) -> np.ndarray:
        """Return the (m, 3) effector points (metres, base frame) at joint angles q."""
        return self._kinematics.effector_points(self.world_frames(q))

    def tip_position(self, q: object, effector: int = 0) -> np.ndarray:
        """Return effector `effector`'s (3,) point (metres, base frame) at joint angles q."""
        return self.effector_positions(q)[effector]

    def effector_poses(self, q: object) -> np.ndarray:
        """
        Return the (m, 4, 4) tool frames of the effectors at joint angles q, base frame.

        An effector's tool frame is its tip link's frame as the URDF defines it (fixed joints
        folded in): translation in metres, rotation columns the tool's x, y, z axes.
        """
        return self._kinematics.effector_frames(self.world_frames(q))

    def tip_pose(self, q: object, effector: int = 0) -> np.ndarray:
        """Return effector `effector`'s (4, 4) tool frame (base frame) at joint angles q."""
        return self.effector_poses(q)[effector]

    def joint_positions(self, q: object) -> np.ndarray:
        """Return the (n, 3) joint origins (metres, base frame) at joint angles q."""
        return self.world_frames(q)[1:, :3, 3]

    def position_jacobian(self, kinematics: Kinematics) -> np.ndarray:
        """
        Return the (m, 3, dof) effector position Jacobian of a forward() result.

        Joint j's column for effector e is cross(axes[j], effectors[e] - positions[j])
        (metres/radian) for a revolute joint, axes[j] for a prismatic one, when j moves e,
        else zero; an independent joint's column sums its followers' times their multipliers.
        """
        jacobian = self._kinematics.position_jacobian(kinematics)
        if not self.coupled:
            return jacobian
        per_coordinate = np.zeros((self.dof,) + jacobian.shape[:2])
        np.add.at(per_coordinate, self.coordinate_of_joint,
                  (jacobian * self.multipliers).transpose(2, 0, 1))
        return per_coordinate.transpose(1, 2, 0)

    # ---------------------------------------------------------------- collision

    @property
    def collision(self) -> CollisionModel:
        """
        Return the collision model (link capsules and checked pairs), built on first use.

        From the URDF's <collision> elements for a chain read from one, else capsules along
        the links (fabrik_ros.collision.build). Raises ChainError naming a link whose
        geometry cannot be read (tried once, the same error on every use). Copies with
        narrower limits (with_limits) share it: its pairs, sorted over the wider limits, are
        a superset of the needed ones.
        """
        if not self._collision:
            try:
                self._collision.append(collision_model(self, self.collision_source))
            except ChainError as error:     # the description does not change: nor will this
                self._collision.append(error)
        model = self._collision[0]
        if isinstance(model, ChainError):
            raise ChainError(str(model))
        return model

    def closest_pair(self, q: object, obstacles: Scene | Sequence[Obstacle] = ()
                     ) -> Clearance:
        """Return the clearance at q with the closest pair's names and points (base frame)."""
        return self.collision.clearance(self.world_frames(q), obstacles)

    def clearance(self, q: object, obstacles: Scene | Sequence[Obstacle] = ()) -> float:
        """
        Return the smallest distance (metres) over the checked pairs at q; < 0 penetration.

        Self pairs and link-obstacle pairs; never above the true distance between the real
        geometries (links are capsules that contain theirs). inf with nothing to check.
        """
        return self.collision.min_distance(self.world_frames(q), obstacles)

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
        chain = Chain(self.base_link, joints, self.effectors)
        chain.collision_source = self.collision_source
        if np.all(chain.lower >= self.lower) and np.all(chain.upper <= self.upper):
            chain._collision = self._collision      # narrower: the same model (collision)
        return chain


def _limit_vector(values: object, n: int, what: str) -> np.ndarray:
    """Return values as a float (n,) array without NaN, or raise ChainError."""
    array = np.asarray(values, dtype=float)
    if array.shape != (n,):
        raise ChainError(f'{what} limits have shape {array.shape}, expected ({n},)')
    if np.any(np.isnan(array)):
        raise ChainError(f'{what} limits contain NaN: {array.tolist()}')
    return array
