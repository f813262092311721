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
Arms of the UR family: three parallel joints, then an offset wrist, full poses in closed form.

The wrist's axes meet in pairs but not in one point. The target pose fixes where the last
two axes meet, which puts the first joint's angle in closed form, the rest of the
orientation is a three-axis wrist's (the parallel joints' sum, fabrik_ros.ik.wrist), and the
parallel joints' own angles a planar two-link problem: all eight solutions in closed form (as
Hawkins 2013 derives them from the UR's parameters). Units: metres, radians; rotations are
row-major 9-tuples.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from fabrik_ros.chain import Chain
import numpy as np

from .rotations import _product, _turn
from .subproblems import _cross, _dot, _sinusoid_roots, _spun, _within, Spin, spin
from .wrist import (_CENTRE_OFF, _meeting, _PARALLEL, _wrist_pairs, _wrist_third,
                    serial_revolute, spherical_wrist, SphericalWrist)

# offset_wrist_branches' last pose: [(arm, position, rotation, branches)], [None] at first.
_LAST_POSE: list[tuple | None] = [None]


class OffsetWrist(NamedTuple):
    """
    An arm of the UR family, whose full poses have a closed form (Hawkins 2013).

    A first joint, three parallel joints (shoulder, elbow, first wrist joint), a fifth axis
    across the fourth and meeting it, a sixth meeting the fifth: the wrist's axes are
    offset, not spherical, but the target pose fixes where the last two meet, and the
    parallel joints move in planes across their axis. All at q = 0, base frame (metres);
    the last fields are constants of the solve worked out once (see offset_wrist_angles).
    """

    first: tuple[tuple[float, float, float], tuple[float, float, float]]  # axis, a point
    parallel: tuple[float, float, float]    # the parallel axes' direction (the second's)
    signs: tuple[float, float]          # the third and fourth axes along it (+1 or -1)
    second: tuple[float, float, float]  # a point on the second axis
    third: tuple[tuple[float, float, float], tuple[float, float, float]]  # axis, a point
    meet: tuple[float, float, float]    # where the fourth axis meets the fifth
    reach: float                        # from there along the fifth axis to the sixth
    centre: tuple[float, float, float]  # where the fifth axis meets the sixth, tool frame
    zero: tuple[float, ...]             # the tool's rotation
    plane: tuple[float, float]          # the first axis along n; the first's point from
    #                                     the meeting point, along n
    shift: tuple[float, float, float]   # the first axis's point from the second's
    lever: tuple[float, float, float]   # the meeting point from the third axis, across n
    offset: tuple[float, float, float]  # the third axis from the second, across n
    planar: tuple[float, float, float]  # offset . lever, offset . (a3 x lever), and
    #                                     |offset|^2 + |lever|^2 (see _planar_pair)
    wrist: SphericalWrist               # the parallel axes' direction, the fifth, the sixth
    fifth: Spin                         # the fifth axis about the parallel ones
    lever_spin: Spin                    # lever about the third axis


def offset_wrist(chain: Chain, tolerance: float) -> OffsetWrist | None:
    """
    Return the closed form's constants for an arm of the UR family, or None if it is not one.

    Six revolute joints in a row, no mimic joints, one effector on the last; the second,
    third and fourth axes parallel (within _PARALLEL), the first not; the fifth axis at
    right angles to the fourth and meeting it, the sixth meeting the fifth and not parallel
    to it (within _CENTRE_OFF tolerances, metres).
    """
    if not serial_revolute(chain, 6):
        return None
    zero = np.zeros(6)
    kinematics = chain.forward(zero)
    points, axes = kinematics.positions, kinematics.axes
    parallel = axes[1]
    if min(abs(float(parallel @ axes[i])) for i in (2, 3)) < 1.0 - _PARALLEL \
            or abs(float(parallel @ axes[0])) > 1.0 - _PARALLEL \
            or abs(float(parallel @ axes[4])) > _PARALLEL \
            or abs(float(axes[4] @ axes[5])) > 1.0 - _PARALLEL:
        return None
    meet, gap = _meeting(points[3], axes[3], points[4], axes[4])
    centre, other_gap = _meeting(points[4], axes[4], points[5], axes[5])
    if max(gap, other_gap) > _CENTRE_OFF * tolerance:
        return None
    tool = chain.tip_pose(zero)

    def floats(v: np.ndarray) -> tuple[float, float, float]:
        return tuple(float(x) for x in v)

    def across_n(v: np.ndarray) -> tuple[float, float, float]:
        return floats(v - float(v @ parallel) * parallel)

    lever, offset = across_n(meet - points[2]), across_n(points[2] - points[1])
    return OffsetWrist(
        (floats(axes[0]), floats(points[0])), floats(parallel),
        (float(np.sign(parallel @ axes[2])), float(np.sign(parallel @ axes[3]))),
        floats(points[1]), (floats(axes[2]), floats(points[2])), floats(meet),
        float((centre - meet) @ axes[4]),
        floats(tool[:3, :3].T @ (centre - tool[:3, 3])), tuple(tool[:3, :3].ravel().tolist()),
        (float(axes[0] @ parallel), float((points[0] - meet) @ parallel)),
        floats(points[0] - points[1]), lever, offset,
        (_dot(offset, lever), _dot(offset, _cross(floats(axes[2]), lever)),
         _dot(offset, offset) + _dot(lever, lever)),
        spherical_wrist((parallel, axes[4], axes[5])), spin(floats(parallel), floats(axes[4])),
        spin(floats(axes[2]), lever))


def offset_wrist_branches(arm: OffsetWrist, position: Sequence[float],
                          rotation: Sequence[float]) -> tuple[tuple, ...]:
    """
    Return the wrist's branches of a tool pose, each (t1, t234, t5, t6, shoulder's goal).

    position and rotation as offset_wrist_angles takes them; up to four branches (the
    first joint and the wrist either way), the goal of the shoulder and elbow for each (see
    _offset_branches), before any limit. The last pose's are kept (_LAST_POSE): the
    collision search lists every solution of the pose the solve's closed form just answered.
    """
    position, rotation = tuple(position), tuple(rotation)   # (no copy of tuples)
    last = _LAST_POSE[0]    # one read: threads sharing it at worst recompute
    if last is not None and last[0] is arm and last[1] == position and last[2] == rotation:
        return last[3]
    branches = _branches(arm, position, rotation)
    _LAST_POSE[0] = (arm, position, rotation, branches)
    return branches


def _branches(arm: OffsetWrist, position: tuple[float, ...], rotation: tuple[float, ...]
              ) -> tuple[tuple, ...]:
    """Return offset_wrist_branches' branches, computed."""
    (ax, ay, az), (ox, oy, oz) = arm.first
    nx, ny, nz = arm.parallel
    # Where the last two axes meet: fixed by the target. Turned back about the first axis,
    # it lies in the plane the parallel joints keep their points in (the fifth axis is
    # across them): a cos t1 + b sin t1 + c = 0.
    cx, cy, cz = arm.centre
    r = rotation
    wx = position[0] + r[0] * cx + r[1] * cy + r[2] * cz - ox
    wy = position[1] + r[3] * cx + r[4] * cy + r[5] * cz - oy
    wz = position[2] + r[6] * cx + r[7] * cy + r[8] * cz - oz
    first_along, plane = arm.plane
    along = (ax * wx + ay * wy + az * wz) * first_along
    a = wx * nx + wy * ny + wz * nz - along
    b = -((ay * wz - az * wy) * nx + (az * wx - ax * wz) * ny + (ax * wy - ay * wx) * nz)
    # The rest of the orientation: the parallel joints' sum, the fifth, the sixth (a wrist).
    relative = _turn(r, arm.zero)
    branches: list[tuple[float, ...]] = []
    for t1 in _sinusoid_roots(a, b, along + plane):
        _offset_branches(arm, t1, (wx, wy, wz), relative, branches)
    return tuple(branches)


def offset_wrist_angles(arm: OffsetWrist, position: Sequence[float], rotation: Sequence[float],
                        seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
                        ) -> list[float] | None:
    """
    Return the joint angles (radians) that put the tool at a pose, nearest the seed.

    position: metres, rotation: row-major 9-tuple, the tool's target in the base frame. Of
    the up to eight solutions (shoulder, wrist and elbow either way) within the limits, each
    angle turned by whole turns where that brings it inside them, the one nearest the seed;
    None if none (out of reach, or at a singularity: the sixth axis along the parallel ones).
    """
    branches = offset_wrist_branches(arm, position, rotation)
    # The wrist's branches nearest the seed first (their first, fifth and sixth angles):
    # the shoulder's and elbow's part of the distance only adds to theirs.
    s1, s5, s6 = seed[0], seed[4], seed[5]
    nearest = []
    first = f1 = None     # the branches come in pairs of one t1: it is fitted once a pair
    for t1, t234, t5, t6, goal in branches:
        if t1 is not first:
            first, f1 = t1, _within(t1, s1, lower[0], upper[0])
        f5, f6 = _within(t5, s5, lower[4], upper[4]), _within(t6, s6, lower[5], upper[5])
        if f1 is not None and f5 is not None and f6 is not None:
            nearest.append(((f1 - s1) ** 2 + (f5 - s5) ** 2 + (f6 - s6) ** 2, f1, t234, f5, f6,
                            goal))
    nearest.sort()
    best, distance = None, math.inf
    middle = seed[1:4], lower[1:4], upper[1:4]
    for moved, t1, t234, t5, t6, goal in nearest:
        if moved >= distance:
            break
        fitted = _planar_nearest(arm, goal, t234, middle, distance - moved)
        if fitted is not None:
            best, distance = [t1, *fitted[0], t5, t6], moved + fitted[1]
    return best


def _offset_branches(arm: OffsetWrist, t1: float, w: Sequence[float],
                     relative: Sequence[float], branches: list[tuple]) -> None:
    """
    Append the wrist's branches with the first joint at t1 (up to two): t1, t234, t5, t6.

    And the goal of the shoulder and elbow (see _planar_pair). w: the corner (where the
    last two axes meet) from the first axis's point; relative: the target rotation times
    the tool's at zero, transposed.
    """
    (ax, ay, az), _ = arm.first
    c, s = math.cos(t1), math.sin(t1)
    v = 1.0 - c
    # R(a1, -t1), the first joint's turn undone: Rodrigues, row-major.
    back = (c + ax * ax * v, ay * ax * v + az * s, az * ax * v - ay * s,
            ax * ay * v - az * s, c + ay * ay * v, az * ay * v + ax * s,
            ax * az * v + ay * s, ay * az * v - ax * s, c + az * az * v)
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = back
    # The corner turned back about the first axis, from the second axis's point.
    wx, wy, wz = w
    sx, sy, sz = arm.shift
    gx = b0 * wx + b1 * wy + b2 * wz + sx
    gy = b3 * wx + b4 * wy + b5 * wz + sy
    gz = b6 * wx + b7 * wy + b8 * wz + sz
    reach, wrist = arm.reach, arm.wrist
    pairs, carried = _wrist_pairs(wrist, _product(back, relative))
    for t234, t5 in pairs:
        # The fourth axis meets the fifth where the fifth, turned, leads back from the
        # corner; the shoulder and elbow bring it there (see _planar_pair).
        fx, fy, fz = _spun(arm.fifth, t234)
        branches.append((t1, t234, t5, _wrist_third(wrist, carried, t234, t5),
                         (gx - reach * fx, gy - reach * fy, gz - reach * fz)))


def _planar_pair(arm: OffsetWrist, goal: Sequence[float]) -> list[tuple[float, float]]:
    """
    Return the (t2, t3) that bring the fourth axis's meeting point to `goal` across n.

    goal: from the second axis (its part along n is dropped). The third joint's turn
    sets the point's distance from the second axis (subproblem 3), the second's its
    direction (subproblem 1).
    """
    roots, across = _planar_roots(arm, goal)
    return [(_planar_second(arm, t3, across), t3) for t3 in roots]


def _planar_nearest(arm: OffsetWrist, goal: Sequence[float], t234: float,
                    middle: tuple[Sequence[float], Sequence[float], Sequence[float]],
                    bound: float) -> tuple[list[float], float] | None:
    """
    Return _planar_pair's (t2, t3, t4) for goal and t234 nearest the seed, and its distance.

    Within the limits (_within), nearer than bound (radians squared), else None. middle: the
    seed's and limits' second to fourth angles. A third as far as bound skips its second.
    """
    (s2, s3, s4), (l2, l3, l4), (u2, u3, u4) = middle
    k3, k4 = arm.signs
    roots, across = _planar_roots(arm, goal)
    best, distance = None, bound
    for t3 in roots:
        f3 = _within(t3, s3, l3, u3)
        if f3 is None or (f3 - s3) * (f3 - s3) >= distance:
            continue
        t2 = _planar_second(arm, t3, across)
        f2 = _within(t2, s2, l2, u2)
        if f2 is None:
            continue
        moved = (f2 - s2) * (f2 - s2)
        if moved >= distance:
            continue
        moved += (f3 - s3) * (f3 - s3)
        f4 = _within(k4 * (t234 - t2 - k3 * t3), s4, l4, u4)
        if moved >= distance or f4 is None:
            continue
        moved += (f4 - s4) * (f4 - s4)
        if moved < distance:
            best, distance = [f2, f3, f4], moved
    return (best, distance) if best is not None else None


def _planar_roots(arm: OffsetWrist, goal: Sequence[float]
                  ) -> tuple[list[float], tuple[float, float, float]]:
    """Return _planar_pair's third angles, and goal's part across n for their seconds."""
    (nx, ny, nz), (gx, gy, gz) = arm.parallel, goal
    along = gx * nx + gy * ny + gz * nz
    gx, gy, gz = gx - along * nx, gy - along * ny, gz - along * nz
    a, b, lengths = arm.planar
    c = (gx * gx + gy * gy + gz * gz - lengths) / 2.0
    along = nx * gx + ny * gy + nz * gz
    return _sinusoid_roots(a, b, -c), (gx - along * nx, gy - along * ny, gz - along * nz)


def _planar_second(arm: OffsetWrist, t3: float, across: tuple[float, float, float]) -> float:
    """Return _planar_pair's second angle for its third, t3 (across: from _planar_roots)."""
    (px, py, pz), (nx, ny, nz), (vx, vy, vz) = arm.offset, arm.parallel, across
    rx, ry, rz = _spun(arm.lever_spin, t3)
    rx, ry, rz = px + rx, py + ry, pz + rz
    along = nx * rx + ny * ry + nz * rz
    ux, uy, uz = rx - along * nx, ry - along * ny, rz - along * nz
    return math.atan2(nx * (uy * vz - uz * vy) + ny * (uz * vx - ux * vz)
                      + nz * (ux * vy - uy * vx), ux * vx + uy * vy + uz * vz)
