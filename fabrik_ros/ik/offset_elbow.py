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

from functools import lru_cache
import math
from typing import Iterator, NamedTuple, Sequence

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .subproblems import _cross, _dot, _TWO_PI, _wave_roots, _within
from .wrist import _CENTRE_OFF, _meeting, _PARALLEL, serial_revolute, Shoulder, spherical_shoulder

_NARROW = 1e-9          # |sin|^2 below this: two directions too near parallel to fix a frame

Vector = tuple[float, float, float]
Turned = tuple[Vector, Vector, Vector]   # a vector's parts about an axis (see _parts)


class OffsetElbow(NamedTuple):
    """
    A seven-joint arm of the Panda's kind (see the module docstring): its constants.

    S is the shoulder's point, W where the fifth and sixth axes meet, E a point on the
    elbow's axis, C one on the seventh's; axes a1 ... a7; all at q = 0, base frame.
    """

    shoulder: Shoulder      # the first four joints, tipped at W (spherical_shoulder)
    pair: tuple[float, Vector, float, float]  # a1 . a2, a1 x a2, |a1 x a2|^2, a2 . a3
    third_across: tuple[Vector, Vector]  # a3 across a2, and a2 times that
    lever: Turned           # W - E about a4
    elbow: Vector           # E - S
    fifth: Turned           # a5 about a4
    fifth_axis: Vector      # a5
    sixth: Vector           # a6
    cosine: float           # a5 . a6
    fifth_across: tuple[Vector, Vector]  # a6 across a5, and a5 times that
    sixth_across: tuple[Vector, Vector]  # a direction across a6, and a6 times that
    seventh: Vector         # a7
    turned: tuple[Vector, ...]  # W - C, a6 and the direction across a6 about a7 (see
    #                             _parts), nine vectors in the tool's frame at q = 0
    lead: Vector            # C from the tool's origin, in that frame
    wave: tuple[float, float, float]  # r, phase, c: |W - S|^2 = c + r cos(t4 - phase)
    lever_base: Vector      # E - S plus the part of W - E along a4


def offset_elbow(chain: Chain, tolerance: float) -> OffsetElbow | None:
    """
    Return the closed form's constants for an arm of the Panda's kind, None if it is not one.

    Seven revolute joints in a row, no mimic joints, one effector on the last; the first
    three axes passing within _CENTRE_OFF tolerances (metres) of one point, no two in a
    row parallel (within _PARALLEL); the fifth and sixth meeting as closely and not
    parallel; the fourth joint changing the distance between the two meeting points.
    """
    if not serial_revolute(chain, 7):
        return None
    joints = chain.joints
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
    return _constants(shoulder, [_floats(axis) for axis in axes], _floats(meet),
                      _floats(points[6]), chain.tip_pose(zero))


def _constants(shoulder: Shoulder, axes: list[Vector], meet: Vector, seventh: Vector,
               tool: np.ndarray) -> OffsetElbow:
    """Return the constants of offset_elbow's arm (see OffsetElbow)."""
    a1, a2, a3, a4, a5, a6, a7 = axes
    normal = _cross(a1, a2)
    free3 = _minus(a3, _scaled(a2, _dot(a2, a3)))
    (_, corner), point = shoulder.elbow, shoulder.point
    free = _minus(a6, _scaled(a5, _dot(a5, a6)))
    across6 = _across(a6)
    lever, elbow = _parts(a4, _minus(meet, corner)), _minus(corner, point)
    a, b, c = shoulder.sinusoid
    return OffsetElbow(
        shoulder, (_dot(a1, a2), normal, _dot(normal, normal), _dot(a2, a3)),
        (free3, _cross(a2, free3)), lever, elbow, _parts(a4, a5), a5, a6,
        _dot(a5, a6),
        (free, _cross(a5, free)), (across6, _cross(a6, across6)), a7,
        tuple(_floats(tool[:3, :3].T @ part) for v in (_minus(meet, seventh), a6, across6)
              for part in _parts(a7, v)),
        _floats(tool[:3, :3].T @ _minus(seventh, _floats(tool[:3, 3]))),
        (math.hypot(-a, -b), math.atan2(-b, -a), c),
        (elbow[0] + lever[0][0], elbow[1] + lever[0][1], elbow[2] + lever[0][2]))


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
    return _angles_at(arm, _target(arm, position, rotation), last, seed, lower, upper)


def swept_angles(arm: OffsetElbow, position: Sequence[float], rotation: Sequence[float],
                 seed: Sequence[float], lower: Sequence[float], upper: Sequence[float],
                 step: float, steps: int) -> list[float] | None:
    """
    Return the joint angles putting the tool at a pose, the seventh swept; None if none fit.

    The seventh angle at its seed first, then `steps` steps of `step` radians either way
    (nearest first), then halfway between those, then a quarter step on either side of
    the halfway points: the first at which a solution fits the limits gives the answer,
    the one nearest the seed there (see offset_elbow_angles).
    Angles at which the elbow cannot set the distance S-W within its limits are passed
    over at the cost of a sine and a cosine.
    """
    free, low, high = seed[6], lower[6], upper[6]
    target = _target(arm, position, rotation)
    (kx, ky, kz), (lx, ly, lz), (qx, qy, qz) = target[:3]
    base, along, cross = kx * kx + ky * ky + kz * kz + lx * lx + ly * ly + lz * lz, \
        2.0 * (kx * lx + ky * ly + kz * lz), -2.0 * (kx * qx + ky * qy + kz * qz)
    shortest, longest = _reach(arm.shoulder.sinusoid, lower[3], upper[3])
    for last in _sweep(free, step, steps):
        if not low <= last <= high:
            continue
        c7, s7 = math.cos(last), math.sin(last)
        if shortest <= base + along * c7 + cross * s7 <= longest:
            found = _angles_turned(arm, target, last, c7, s7, seed, lower, upper)
            if found is not None:
                return found[0]
    return None


def _sweep(free: float, step: float, steps: int) -> Iterator[float]:
    """Yield free, then free plus and minus 1 ... steps steps, then halfway, then quarters."""
    yield free
    for offset in (0.0, 0.5, 0.25, 0.75):
        for k in range(1, steps + 1):
            yield free + (k - offset) * step
            yield free - (k - offset) * step


def _target(arm: OffsetElbow, position: Sequence[float], rotation: Sequence[float]
            ) -> tuple[Vector, ...]:
    """
    Return W - S, a6 and the direction across a6 as the seventh angle t turns them.

    Each as k, l, m (nine vectors): the vector is k + cos t l - sin t m (the target times
    the tool's turn at zero undone, times the seventh's turn undone: the first six joints').
    """
    r0, r1, r2, r3, r4, r5, r6, r7, r8 = rotation
    x, y, z = arm.lead
    sx, sy, sz = arm.shoulder.point
    ox = position[0] + r0 * x + r1 * y + r2 * z - sx
    oy = position[1] + r3 * x + r4 * y + r5 * z - sy
    oz = position[2] + r6 * x + r7 * y + r8 * z - sz
    (x, y, z), (lx, ly, lz), (mx, my, mz), (ax, ay, az), (bx, by, bz), (cx, cy, cz), \
        (dx, dy, dz), (ex, ey, ez), (fx, fy, fz) = arm.turned
    return (
        (r0 * x + r1 * y + r2 * z + ox, r3 * x + r4 * y + r5 * z + oy,
         r6 * x + r7 * y + r8 * z + oz),
        (r0 * lx + r1 * ly + r2 * lz, r3 * lx + r4 * ly + r5 * lz, r6 * lx + r7 * ly + r8 * lz),
        (r0 * mx + r1 * my + r2 * mz, r3 * mx + r4 * my + r5 * mz, r6 * mx + r7 * my + r8 * mz),
        (r0 * ax + r1 * ay + r2 * az, r3 * ax + r4 * ay + r5 * az, r6 * ax + r7 * ay + r8 * az),
        (r0 * bx + r1 * by + r2 * bz, r3 * bx + r4 * by + r5 * bz, r6 * bx + r7 * by + r8 * bz),
        (r0 * cx + r1 * cy + r2 * cz, r3 * cx + r4 * cy + r5 * cz, r6 * cx + r7 * cy + r8 * cz),
        (r0 * dx + r1 * dy + r2 * dz, r3 * dx + r4 * dy + r5 * dz, r6 * dx + r7 * dy + r8 * dz),
        (r0 * ex + r1 * ey + r2 * ez, r3 * ex + r4 * ey + r5 * ez, r6 * ex + r7 * ey + r8 * ez),
        (r0 * fx + r1 * fy + r2 * fz, r3 * fx + r4 * fy + r5 * fz, r6 * fx + r7 * fy + r8 * fz))


@lru_cache(maxsize=64)
def _reach(sinusoid: tuple[float, float, float], lower: float, upper: float
           ) -> tuple[float, float]:
    """Return the least and greatest |W - S|^2 the elbow sets (kept: per arm and limits)."""
    a, b, c = sinusoid
    r, phase = math.hypot(a, b), math.atan2(b, a)   # |W - S|^2 = c - r cos(t - phase)
    if not upper - lower < _TWO_PI:
        return c - r, c + r
    ends = [c - r * math.cos(lower - phase), c - r * math.cos(upper - phase)]
    least, greatest = min(ends), max(ends)
    if math.ceil((lower - phase) / _TWO_PI) <= (upper - phase) / _TWO_PI:
        least = c - r
    if math.ceil((lower - phase - math.pi) / _TWO_PI) <= (upper - phase - math.pi) / _TWO_PI:
        greatest = c + r
    return least - 1e-12, greatest + 1e-12


def _angles_at(arm: OffsetElbow, target: tuple[Vector, ...], last: float,
               seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
               ) -> tuple[list[float], float] | None:
    """Return offset_elbow_angles's answer for the pose as _target gives it."""
    return _angles_turned(arm, target, last, math.cos(last), math.sin(last), seed, lower,
                          upper)


def _angles_turned(arm: OffsetElbow, target: tuple[Vector, ...], last: float, c7: float,
                   s7: float, seed: Sequence[float], lower: Sequence[float],
                   upper: Sequence[float]) -> tuple[list[float], float] | None:
    """
    Return _angles_at's answer, given the cosine and sine of the seventh angle as well.

    The fifth axis's directions (z . (S-W) and z . a6 fixed: none, one or two, where two
    cones meet) are worked out here, their parts that do not depend on the elbow's angle
    once; the elbow's amplitude and phase are kept in the arm's constants.
    """
    (kx, ky, kz), (lx, ly, lz), (mx, my, mz), k, l, m, kk, ll, mm = target
    dx, dy, dz = kx + c7 * lx - s7 * mx, ky + c7 * ly - s7 * my, kz + c7 * lz - s7 * mz
    wx, wy, wz = (k[0] + c7 * l[0] - s7 * m[0], k[1] + c7 * l[1] - s7 * m[1],
                  k[2] + c7 * l[2] - s7 * m[2])
    across = (kk[0] + c7 * ll[0] - s7 * mm[0], kk[1] + c7 * ll[1] - s7 * mm[1],
              kk[2] + c7 * ll[2] - s7 * mm[2])
    squared = dx * dx + dy * dy + dz * dz
    if squared < 1e-24:
        return None
    scale = 1.0 / math.sqrt(squared)
    ux, uy, uz = dx * scale, dy * scale, dz * scale
    cosine = ux * wx + uy * wy + uz * wz
    sine_squared = 1.0 - cosine * cosine
    if sine_squared < _NARROW:
        return None
    toward, sixth, cw = (ux, uy, uz), (wx, wy, wz), arm.cosine
    nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    r, phase, c = arm.wave     # the elbow's angles set |W - S|^2 (subproblem 3)
    ex, ey, ez = arm.lever_base
    _, (qx, qy, qz), (rx, ry, rz) = arm.lever
    (fx, fy, fz), (gx, gy, gz), (hx, hy, hz) = arm.fifth
    best, distance = None, math.inf
    moved7 = (last - seed[6]) ** 2
    s4_seed, low4, high4 = seed[3], lower[3], upper[3]
    for t4 in _wave_roots(r, phase, c - squared):
        f4 = _within(t4, s4_seed, low4, high4)
        if f4 is None:
            continue
        c4, s4 = math.cos(t4), math.sin(t4)
        # S-W and a5 with the shoulder at zero, and their frame.
        vx, vy, vz = ex + c4 * qx + s4 * rx, ey + c4 * qy + s4 * ry, ez + c4 * qz + s4 * rz
        scale = 1.0 / math.sqrt(vx * vx + vy * vy + vz * vz)
        vx, vy, vz = vx * scale, vy * scale, vz * scale
        fifth = (fx + c4 * gx + s4 * hx, fy + c4 * gy + s4 * hy, fz + c4 * gz + s4 * hz)
        frame = _frame((vx, vy, vz), fifth)
        if frame is None:
            continue
        moved = (f4 - s4_seed) ** 2 + moved7
        cu = vx * fifth[0] + vy * fifth[1] + vz * fifth[2]
        x = (cu - cosine * cw) / sine_squared
        y = (cw - cosine * cu) / sine_squared
        square = (1.0 - x * x - y * y - 2.0 * x * y * cosine) / sine_squared
        if square < -1e-9:
            continue
        g = math.sqrt(0.0 if 0.0 > square else square)  # max(square, 0.0), without a call
        zx, zy, zz = x * ux + y * wx, x * uy + y * wy, x * uz + y * wz
        for cone in (((zx + g * nx, zy + g * ny, zz + g * nz),
                      (zx - g * nx, zy - g * ny, zz - g * nz)) if g else ((zx, zy, zz),)):
            turn = _frame_turn(frame, toward, cone)
            if turn is None:
                continue
            found = _wrist_pair(arm, turn, c4, s4, sixth, across, seed, lower, upper)
            if found is None or moved + found[1] >= distance:
                continue
            first = _shoulder_angles(arm, turn, seed, lower, upper,
                                     distance - moved - found[1])
            if first is not None:
                best = first[0] + [f4, *found[0], last]
                distance = moved + found[1] + first[1]
    return (best, distance) if best is not None else None


def _wrist_pair(arm: OffsetElbow, turn: Sequence[float], c4: float, s4: float,
                sixth: Vector, across: Vector, seed: Sequence[float],
                lower: Sequence[float], upper: Sequence[float]
                ) -> tuple[list[float], float] | None:
    """
    Return the fifth and sixth angles within the limits and their squared move, or None.

    turn: the shoulder's; c4, s4: the cosine and sine of the elbow's angle; sixth, across:
    the target's a6 and direction across it. Both turned back by the shoulder and the
    elbow, the fifth turns a6 onto the first, then the sixth the direction across a6 onto
    the second (subproblem 1).
    """
    m0, m1, m2, m3, m4, m5, m6, m7, m8 = turn
    ax, ay, az = arm.shoulder.elbow[0]
    (e1x, e1y, e1z), (e2x, e2y, e2z) = arm.fifth_across
    (g1x, g1y, g1z), (g2x, g2y, g2z) = arm.sixth_across
    ones = 1.0 - c4
    # The turn transposed, then the elbow's turned back (Rodrigues).
    x, y, z = sixth
    x, y, z = m0 * x + m3 * y + m6 * z, m1 * x + m4 * y + m7 * z, m2 * x + m5 * y + m8 * z
    along = (ax * x + ay * y + az * z) * ones
    yx, yy, yz = (x * c4 - (ay * z - az * y) * s4 + ax * along,
                  y * c4 - (az * x - ax * z) * s4 + ay * along,
                  z * c4 - (ax * y - ay * x) * s4 + az * along)
    cosine, sine = e1x * yx + e1y * yy + e1z * yz, e2x * yx + e2y * yy + e2z * yz
    norm = math.hypot(cosine, sine)
    if norm < 1e-12:
        return None
    angle, seed5 = math.atan2(sine, cosine), seed[4]
    t5 = _within(angle, seed5, lower[4], upper[4])
    if t5 is None:
        return None
    x, y, z = across
    x, y, z = m0 * x + m3 * y + m6 * z, m1 * x + m4 * y + m7 * z, m2 * x + m5 * y + m8 * z
    along = (ax * x + ay * y + az * z) * ones
    x, y, z = (x * c4 - (ay * z - az * y) * s4 + ax * along,
               y * c4 - (az * x - ax * z) * s4 + ay * along,
               z * c4 - (ax * y - ay * x) * s4 + az * along)
    # The fifth's turn back.
    c5, s5 = cosine / norm, sine / norm
    ax, ay, az = arm.fifth_axis
    along = (ax * x + ay * y + az * z) * (1.0 - c5)
    x, y, z = (x * c5 - (ay * z - az * y) * s5 + ax * along,
               y * c5 - (az * x - ax * z) * s5 + ay * along,
               z * c5 - (ax * y - ay * x) * s5 + az * along)
    angle, seed6 = math.atan2(g2x * x + g2y * y + g2z * z, g1x * x + g1y * y + g1z * z), \
        seed[5]
    t6 = _within(angle, seed6, lower[5], upper[5])
    if t6 is None:
        return None
    return [t5, t6], (t5 - seed5) ** 2 + (t6 - seed6) ** 2


def _shoulder_angles(arm: OffsetElbow, turn: Sequence[float], seed: Sequence[float],
                     lower: Sequence[float], upper: Sequence[float], bound: float
                     ) -> tuple[list[float], float] | None:
    """
    Return the shoulder's angles making its turn, nearest the seed, and their squared move.

    exp(a1 t1) exp(a2 t2) carry a3 onto turn a3 (subproblem 2: none, one or two), then
    exp(a3 t3) turns turn^T a1 onto exp(-a2 t2) a1 (subproblem 1); each angle turned by
    whole turns where that brings it inside its limits; None if none fits the limits
    nearer the seed than bound (radians squared).
    """
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = arm.shoulder.axes
    cosine, (nx, ny, nz), normal_squared, along = arm.pair
    (e1x, e1y, e1z), (e2x, e2y, e2z) = arm.third_across
    m0, m1, m2, m3, m4, m5, m6, m7, m8 = turn
    qx, qy, qz = m0 * cx + m1 * cy + m2 * cz, m3 * cx + m4 * cy + m5 * cz, \
        m6 * cx + m7 * cy + m8 * cz
    yx, yy, yz = m0 * ax + m3 * ay + m6 * az, m1 * ax + m4 * ay + m7 * az, \
        m2 * ax + m5 * ay + m8 * az
    y_along = cx * yx + cy * yy + cz * yz
    denominator = cosine * cosine - 1.0
    aq = ax * qx + ay * qy + az * qz
    alpha, beta = (cosine * along - aq) / denominator, (cosine * aq - along) / denominator
    square = (1.0 - alpha * alpha - beta * beta - 2.0 * alpha * beta * cosine) \
        / normal_squared
    if square < -1e-9:
        return None
    gamma = math.sqrt(0.0 if 0.0 > square else square)  # max(square, 0.0), without a call
    mx, my, mz = alpha * ax + beta * bx, alpha * ay + beta * by, alpha * az + beta * bz
    s1, s2, s3 = seed[:3]
    low1, low2, high1, high2 = lower[0], lower[1], upper[0], upper[1]
    best, distance = None, bound
    for side in ((gamma, -gamma) if gamma else (gamma,)):
        zx, zy, zz = mx + side * nx, my + side * ny, mz + side * nz
        x, y = e1x * zx + e1y * zy + e1z * zz, e2x * zx + e2y * zy + e2z * zz
        angle = math.atan2(y, x)
        t2 = _within(angle, s2, low2, high2)
        if t2 is None:
            continue
        # a1's turn carries z onto q: their parts across a1.
        angle = math.atan2(ax * (zy * qz - zz * qy) + ay * (zz * qx - zx * qz)
                           + az * (zx * qy - zy * qx),
                           zx * qx + zy * qy + zz * qz - (ax * zx + ay * zy + az * zz) * aq)
        t1 = _within(angle, s1, low1, high1)
        moved = (t2 - s2) ** 2
        if t1 is None or moved + (t1 - s1) ** 2 >= distance:
            continue
        # exp(-a2 t2) a1, by Rodrigues: a2 x a1 is -n.
        norm = math.hypot(x, y)
        c2, sine2 = x / norm, y / norm
        vx, vy, vz = (ax * c2 + nx * sine2 + bx * cosine * (1.0 - c2),
                      ay * c2 + ny * sine2 + by * cosine * (1.0 - c2),
                      az * c2 + nz * sine2 + bz * cosine * (1.0 - c2))
        angle = math.atan2(
            cx * (yy * vz - yz * vy) + cy * (yz * vx - yx * vz) + cz * (yx * vy - yy * vx),
            yx * vx + yy * vy + yz * vz - y_along * (cx * vx + cy * vy + cz * vz))
        t3 = _within(angle, s3, lower[2], upper[2])
        if t3 is not None:
            moved += (t1 - s1) ** 2 + (t3 - s3) ** 2
            if moved < distance:
                best, distance = [t1, t2, t3], moved
    return (best, distance) if best is not None else None


def _frame(u: Vector, v: Vector) -> tuple[float, ...] | None:
    """
    Return the frame (u, n, u x n), n the normalised u x v, as nine floats; None if u // v.

    u: a unit direction. The first half of _frame_turn, apart since u and v are shared.
    """
    u0, u1, u2 = u
    n0, n1, n2 = u1 * v[2] - u2 * v[1], u2 * v[0] - u0 * v[2], u0 * v[1] - u1 * v[0]
    sn = n0 * n0 + n1 * n1 + n2 * n2
    if sn < _NARROW:
        return None
    sn = 1.0 / math.sqrt(sn)
    n0, n1, n2 = n0 * sn, n1 * sn, n2 * sn
    return (u0, u1, u2, n0, n1, n2,
            u1 * n2 - u2 * n1, u2 * n0 - u0 * n2, u0 * n1 - u1 * n0)


def _frame_turn(frame: Sequence[float], p: Vector, q: Vector) -> tuple[float, ...] | None:
    """
    Return the rotation turning unit u onto p and v onto q (u . v = p . q), None if p // q.

    frame: u and v's (see _frame). The sum of the outer products of the frames (u, n,
    u x n) and (p, m, p x m), m the normalised p x q.
    """
    onto = _frame(p, q)
    if onto is None:
        return None
    u0, u1, u2, n0, n1, n2, k0, k1, k2 = frame
    p0, p1, p2, m0, m1, m2, j0, j1, j2 = onto
    return (p0 * u0 + m0 * n0 + j0 * k0, p0 * u1 + m0 * n1 + j0 * k1,
            p0 * u2 + m0 * n2 + j0 * k2, p1 * u0 + m1 * n0 + j1 * k0,
            p1 * u1 + m1 * n1 + j1 * k1, p1 * u2 + m1 * n2 + j1 * k2,
            p2 * u0 + m2 * n0 + j2 * k0, p2 * u1 + m2 * n1 + j2 * k1,
            p2 * u2 + m2 * n2 + j2 * k2)


def _floats(v: np.ndarray) -> Vector:
    """Return a numpy 3-vector as a tuple of floats."""
    return float(v[0]), float(v[1]), float(v[2])


def _minus(a: Sequence[float], b: Sequence[float]) -> Vector:
    """Return a - b."""
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def _scaled(v: Sequence[float], factor: float) -> Vector:
    """Return v times a factor."""
    return v[0] * factor, v[1] * factor, v[2] * factor


def _unit(v: Sequence[float]) -> Vector:
    """Return v scaled to unit length."""
    return _scaled(v, 1.0 / math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))


def _across(v: Vector) -> Vector:
    """Return a unit direction across the unit v."""
    return _unit(_cross(v, (1.0, 0.0, 0.0) if abs(v[0]) < 0.9 else (0.0, 1.0, 0.0)))


def _parts(axis: Vector, v: Vector) -> Turned:
    """Return v's parts about a unit axis: along it, across it, and the axis times v."""
    along = _scaled(axis, _dot(axis, v))
    return along, _minus(v, along), _cross(axis, v)


def _unturned(axis: Vector, cosine: float, sine: float, v: Vector) -> Vector:
    """Return v turned back about a unit axis by the angle of cosine and sine (Rodrigues)."""
    ax, ay, az = axis
    x, y, z = v
    along = (ax * x + ay * y + az * z) * (1.0 - cosine)
    return (x * cosine - (ay * z - az * y) * sine + ax * along,
            y * cosine - (az * x - ax * z) * sine + ay * along,
            z * cosine - (ax * y - ay * x) * sine + az * along)
