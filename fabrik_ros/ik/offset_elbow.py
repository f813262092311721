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
Seven-joint arms of the Franka Panda's kind: full poses in closed form, the last joint given.

A spherical shoulder (the first three axes meet in one point S), an elbow joint, a fifth and
a sixth axis that meet in one point W, and a seventh joint anywhere (the Panda's is offset
from the sixth, and its elbow from the shoulder's and the forearm's lines). With the seventh
angle given (the redundancy parameter) the target pose fixes the frame the seventh joint
turns in, hence W and the sixth axis. The elbow's angle alone sets |W - S| (subproblem 3);
the fifth axis keeps fixed angles with the line S-W and with the sixth axis, which leaves it
two directions (two cones meeting); the line S-W and the fifth axis then fix the shoulder's
whole turn, whose three angles come as a spherical wrist's do; the fifth and sixth angles
turn the rest (subproblem 1). Up to eight solutions for one seventh angle (as He and Liu
2021 find them for the Panda), all exact. Units: metres, radians; rotations are row-major
9-tuples, axes and points at q = 0 in the base frame (a product of exponentials).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .rotations import _apply, _product, _transposed
from .wrist import (_CENTRE_OFF, _cross, _dot, _meeting, _PARALLEL, _sinusoid_roots,
                    _turn_angle, _turned, _within, Shoulder, spherical_shoulder,
                    wrist_angles)

_NARROW = 1e-9          # |sin| below this: two directions too near parallel to fix a frame


class OffsetElbow(NamedTuple):
    """A seven-joint arm of the Panda's kind (see the module docstring): its constants."""

    shoulder: Shoulder                  # the first four joints, tipped at W
    fifth: tuple[float, float, float]   # the fifth axis
    sixth: tuple[float, float, float]   # the sixth axis
    seventh: tuple[float, float, float]  # the seventh axis
    cosine: float                       # fifth . sixth
    centre: tuple[float, float, float]  # W from a point on the seventh axis
    lead: tuple[float, float, float]    # that point from the tool's origin
    zero: tuple[float, ...]             # the tool's rotation
    across: tuple[float, float, float]  # a direction across the sixth axis


def offset_elbow(chain: Chain, tolerance: float) -> OffsetElbow | None:
    """
    Return the closed form's constants for an arm of the Panda's kind, None if it is not one.

    Seven revolute joints in a row, no mimic joints, one effector on the last; the first
    three axes passing within _CENTRE_OFF tolerances (metres) of one point, no two in a
    row parallel (within _PARALLEL); the fifth and sixth meeting as closely and not
    parallel; the fourth joint changing the distance between the two meeting points.
    """
    joints = chain.joints
    if len(joints) != 7 or len(chain.effectors) != 1 or chain.effectors[0].parent != 6 \
            or chain.dof != 7 or any(joint.parent != index - 1
                                     for index, joint in enumerate(joints)) \
            or any(joint.prismatic for joint in joints):
        return None
    zero = np.zeros(7)
    kinematics = chain.forward(zero)
    points, axes = kinematics.positions, kinematics.axes
    if abs(float(axes[1] @ axes[2])) > 1.0 - _PARALLEL \
            or abs(float(axes[4] @ axes[5])) > 1.0 - _PARALLEL:
        return None
    meet, gap = _meeting(points[4], axes[4], points[5], axes[5])
    if gap > _CENTRE_OFF * tolerance:
        return None
    rotation, origin = kinematics.rotations[3], kinematics.positions[3]
    upper_arm = Chain(chain.base_link, joints[:4],
                      [Effector('meeting_point', 3, rotation.T @ (meet - origin))])
    shoulder = spherical_shoulder(upper_arm, tolerance)
    if shoulder is None:
        return None

    def floats(v: np.ndarray) -> tuple[float, float, float]:
        return tuple(float(x) for x in v)

    tool = chain.tip_pose(zero)
    fifth, sixth = floats(axes[4]), floats(axes[5])
    return OffsetElbow(
        shoulder, fifth, sixth, floats(axes[6]), _dot(fifth, sixth),
        floats(meet - points[6]), floats(points[6] - tool[:3, 3]),
        tuple(tool[:3, :3].ravel().tolist()),
        _unit(_cross(sixth, (1.0, 0.0, 0.0) if abs(sixth[0]) < 0.9 else (0.0, 1.0, 0.0))))


def offset_elbow_angles(arm: OffsetElbow, position: Sequence[float],
                        rotation: Sequence[float], last: float, seed: Sequence[float],
                        lower: Sequence[float], upper: Sequence[float]
                        ) -> tuple[list[float], float] | None:
    """
    Return the joint angles putting the tool at a pose, the seventh at `last`, and their move.

    position: metres, rotation: row-major 9-tuple, the tool's target in the base frame;
    last: the seventh angle (within its limits). Of the up to eight solutions within the
    limits, each angle turned by whole turns where that brings it inside them, the one
    nearest the seed, with its squared distance from the seed (radians squared); None if
    none (out of reach, or at a singularity: the sixth axis along the line S-W).
    """
    # The target times the tool's turn at zero undone, times the seventh's turn undone:
    # the turn of the first six joints (their product of exponentials).
    m = _turn(rotation, arm.zero)
    undone = [_turned(arm.seventh, -last, v) for v in (arm.centre, arm.sixth, arm.across)]
    centre, sixth, across = (_apply(m, v) for v in undone)
    lx, ly, lz = _apply(m, arm.lead)
    shoulder = arm.shoulder
    sx, sy, sz = shoulder.point
    dx = position[0] + centre[0] + lx - sx
    dy = position[1] + centre[1] + ly - sy
    dz = position[2] + centre[2] + lz - sz
    squared = dx * dx + dy * dy + dz * dz
    if squared < 1e-24:
        return None
    scale = 1.0 / math.sqrt(squared)
    toward = (dx * scale, dy * scale, dz * scale)
    a, b, c = shoulder.sinusoid
    (elbow, (ex, ey, ez)), lever = shoulder.elbow, shoulder.lever
    best, distance = None, math.inf
    s4, s5, s6, s7 = seed[3:]
    for t4 in _sinusoid_roots(-a, -b, c - squared):
        f4 = _within(t4, seed[3], lower[3], upper[3])
        if f4 is None:
            continue
        lx, ly, lz = _turned(elbow, t4, lever)
        at_zero = _unit((ex + lx - sx, ey + ly - sy, ez + lz - sz))  # S-W, shoulder at 0
        fifth = _turned(elbow, t4, arm.fifth)
        for turned_fifth in _cones(toward, _dot(at_zero, fifth), sixth, arm.cosine):
            turn = _frame_turn(at_zero, fifth, toward, turned_fifth)
            if turn is None:
                continue
            back = _transposed(turn)
            t5 = _turn_angle(arm.fifth, arm.sixth, _turned(elbow, -t4, _apply(back, sixth)))
            f5 = _within(t5, s5, lower[4], upper[4])
            if f5 is None:
                continue
            t6 = _turn_angle(arm.sixth, arm.across, _turned(arm.fifth, -t5, _turned(
                elbow, -t4, _apply(back, across))))
            f6 = _within(t6, s6, lower[5], upper[5])
            if f6 is None:
                continue
            moved = (f4 - s4) ** 2 + (f5 - s5) ** 2 + (f6 - s6) ** 2 + (last - s7) ** 2
            if moved >= distance:
                continue
            first = wrist_angles(shoulder.axes, turn, seed[:3], lower[:3], upper[:3])
            if first is None:
                continue
            moved += sum((t - s) ** 2 for t, s in zip(first, seed))
            if moved < distance:
                best, distance = first + [f4, f5, f6, last], moved
    return (best, distance) if best is not None else None


def swept_angles(arm: OffsetElbow, position: Sequence[float], rotation: Sequence[float],
                 seed: Sequence[float], lower: Sequence[float], upper: Sequence[float],
                 step: float, steps: int) -> list[float] | None:
    """
    Return the joint angles putting the tool at a pose, the seventh swept; None if none fit.

    The seventh angle at its seed first, then `steps` steps of `step` radians either way
    (nearest first), then halfway between those: the first at which a solution fits the
    limits gives the answer, the one nearest the seed there (see offset_elbow_angles).
    """
    free, low, high = seed[6], lower[6], upper[6]
    nearest = [free] + [free + sign * k * step for k in range(1, steps + 1)
                        for sign in (1.0, -1.0)]
    halfway = [free + sign * (k - 0.5) * step for k in range(1, steps + 1)
               for sign in (1.0, -1.0)]
    for last in nearest + halfway:
        if low <= last <= high:
            found = offset_elbow_angles(arm, position, rotation, last, seed, lower, upper)
            if found is not None:
                return found[0]
    return None


def _turn(target: Sequence[float], reached: Sequence[float]) -> tuple[float, ...]:
    """Return target @ reached^T (row-major 9-tuples)."""
    return _product(target, _transposed(reached))


def _unit(v: Sequence[float]) -> tuple[float, float, float]:
    """Return v scaled to unit length."""
    scale = 1.0 / math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return v[0] * scale, v[1] * scale, v[2] * scale


def _cones(u: Sequence[float], cu: float, w: Sequence[float], cw: float
           ) -> list[tuple[float, float, float]]:
    """
    Return the unit directions z with z . u = cu and z . w = cw: none, one or two.

    u, w: unit directions, not parallel (none where they are within _NARROW of it).
    """
    cosine = _dot(u, w)
    normal = _cross(u, w)
    sine_squared = 1.0 - cosine * cosine
    if sine_squared < _NARROW:
        return []
    x = (cu - cosine * cw) / sine_squared
    y = (cw - cosine * cu) / sine_squared
    square = (1.0 - x * x - y * y - 2.0 * x * y * cosine) / sine_squared
    if square < -1e-9:
        return []
    g = math.sqrt(max(square, 0.0))
    middle = (x * u[0] + y * w[0], x * u[1] + y * w[1], x * u[2] + y * w[2])
    return [(middle[0] + side * normal[0], middle[1] + side * normal[1],
             middle[2] + side * normal[2]) for side in ((g, -g) if g else (g,))]


def _frame_turn(u: Sequence[float], v: Sequence[float], p: Sequence[float],
                q: Sequence[float]) -> tuple[float, ...] | None:
    """
    Return the rotation turning unit u onto p and v onto q (u . v = p . q), None if u // v.

    The frames (u, n, u x n) and (p, m, p x m), n and m the normalised u x v and p x q.
    """
    n, m = _cross(u, v), _cross(p, q)
    if _dot(n, n) < _NARROW or _dot(m, m) < _NARROW:
        return None
    n, m = _unit(n), _unit(m)
    k, j = _cross(u, n), _cross(p, m)
    return tuple(p[r] * u[s] + m[r] * n[s] + j[r] * k[s] for r in range(3) for s in range(3))
