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
Chains and legged trees from plain parameters: segment count, lengths, joint axes, limits.

A tentacle, an arm or a spider without writing URDF (config chain.segments, chain.legs):
the parts a Chain is built from, like those read from a URDF. Imports numpy and the
standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Sequence

from fabrik_ros.model.joints import (ChainError, Effector, frozen_vector, Joint, MAX_JOINTS,
                                     Parts, Pose)
from fabrik_ros.model.rotations import rotation_about_axis, rotation_from_rpy
import numpy as np

_AXIS_LETTERS = {'x': (1.0, 0.0, 0.0), 'y': (0.0, 1.0, 0.0), 'z': (0.0, 0.0, 1.0)}
_AXIS_WORDS = {'x': 'roll', 'y': 'pitch', 'z': 'yaw'}
_JOINT_TYPE_AXES = {'hinge': ('z', 'y'), 'two_axis': ('zy',)}


def parts_from_parameters(segments: int, segment_length: float | Sequence[float], *,
                          joint_type: str = 'hinge',
                          segment_axes: Sequence[str] | None = None,
                          joint_limit: float | Sequence[float] = math.pi / 2,
                          max_velocity: float = 2.0,
                          base_link: str = 'base_link',
                          tip_link: str | Sequence[str] = 'tip',
                          legs: int = 0,
                          body_radius: float = 0.0,
                          mount_xyz: Sequence[float] = (0.0, 0.0, 0.0),
                          mount_rpy: Sequence[float] = (0.0, 0.0, 0.0)) -> Parts:
    """
    Return the parts of a serial chain (legs=0) or a legged tree from plain parameters.

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
    segment_axes = _segment_axes(joint_type, segment_axes)
    if isinstance(legs, bool) or not isinstance(legs, (int, np.integer)) or legs < 0:
        raise ChainError(f'legs must be an integer >= 0, got {legs!r}')
    per_segment = sum(map(len, segment_axes)) / len(segment_axes)
    if segments * per_segment * max(legs, 1) > MAX_JOINTS:
        raise ChainError(f'{segments} segments (x {max(legs, 1)} legs) make more than '
                         f'{MAX_JOINTS} joints, the most a chain may have')
    axes = [segment_axes[i % len(segment_axes)] for i in range(segments)]
    limits = _per_item(joint_limit, sum(len(a) for a in axes), 'joint_limit')
    if not all(v >= 0.0 for v in limits):
        raise ChainError(f'joint_limit must be >= 0 radians (symmetric), got {limits}')
    if not (math.isfinite(body_radius) and body_radius >= 0.0):
        raise ChainError(f'body_radius must be >= 0 metres, got {body_radius!r}')
    mount = Pose(frozen_vector(mount_xyz, 'mount_xyz'), rotation_from_rpy(
        frozen_vector(mount_rpy, 'mount_rpy')))
    limb = _Limb(lengths, axes, limits, float(max_velocity))
    tips = _tip_names(tip_link, legs)
    joints: list[Joint] = []
    effectors: list[Effector] = []
    if legs == 0:
        effectors.append(limb.build(joints, '', mount, tips[0]))
        return Parts(base_link, joints, effectors)
    for k, tip in enumerate(tips):
        turn = rotation_about_axis(_AXIS_LETTERS['z'], 2.0 * math.pi * k / legs)
        leg_mount = Pose(turn @ (np.array([body_radius, 0.0, 0.0]) + mount.xyz),
                         turn @ mount.rotation)
        effectors.append(limb.build(joints, f'leg{k + 1}_', leg_mount, tip))
    return Parts(base_link, joints, effectors)


def _segment_axes(joint_type: str, segment_axes: Sequence[str] | None) -> Sequence[str]:
    """Return the axis letters per segment: given, or joint_type's; ChainError if neither."""
    if segment_axes is None:
        if joint_type not in _JOINT_TYPE_AXES:
            raise ChainError(f'unknown joint_type {joint_type!r}, expected one of '
                             f'{sorted(_JOINT_TYPE_AXES)}')
        segment_axes = _JOINT_TYPE_AXES[joint_type]
    if isinstance(segment_axes, str) or not segment_axes or any(
            not letters or set(letters) - set(_AXIS_LETTERS) for letters in segment_axes):
        raise ChainError(f'segment_axes must be a list of axis letter strings such as '
                         f"['z', 'y'] or ['zy'], got {segment_axes!r}")
    return segment_axes


def _tip_names(tip_link: str | Sequence[str], legs: int) -> list[str]:
    """Return the tip link of each limb: one for a serial chain, one per leg of a tree."""
    if legs == 0:
        tips = [tip_link] if isinstance(tip_link, str) else list(tip_link)
        if len(tips) != 1:
            raise ChainError(f'a serial chain has one tip link, got {tips}')
        return tips
    if isinstance(tip_link, str):
        return [f'leg{k}_{tip_link}' for k in range(1, legs + 1)]
    tips = list(tip_link)
    if len(tips) != legs:
        raise ChainError(f'{legs} legs need {legs} tip links, got {tips}')
    return tips


@dataclass(frozen=True)
class _Limb:
    """A serial limb of plain parameters, see parts_from_parameters."""

    lengths: list[float]        # metres per segment
    axes: list[str]             # axis letters per segment
    limits: list[float]         # symmetric radians per joint
    max_velocity: float         # rad/s

    def build(self, joints: list[Joint], prefix: str, mount: Pose, tip: str) -> Effector:
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


def _per_item(value: float | Sequence[float], count: int, what: str) -> list[float]:
    """Return count floats: a scalar or a 1-item sequence repeated, or count items as given."""
    values = [float(v) for v in np.reshape(value, -1)]
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise ChainError(f'{what} has {len(values)} values, expected 1 or {count}')
    return values
