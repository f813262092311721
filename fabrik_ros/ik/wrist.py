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
Wrists that give an arm's full poses a closed form, or part of one.

Spherical wrists (most industrial six-joint arms): the last three joint axes meet in one
point, the wrist centre. A full pose splits in two (Pieper 1968): the tool's target pose
puts the centre at one point, which the joints above the wrist must reach (a position
target for the arm without its wrist), and the wrist's three angles then turn the tool onto
the target orientation in closed form (Paden-Kahan subproblems 2 and 1), or point its axis
where the roll is free. (Offset wrists of the UR family: fabrik_ros.ik.offset_wrist.)
Units: metres, radians; rotations are row-major 9-tuples.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from fabrik_ros.chain import Chain, Effector
import numpy as np

from .subproblems import (_across, _apply, _carry, _carry_across, _cross, _nearer,
                          _sinusoid_roots, _turned, _within, axis_pair,
                          AxisPair, Spin, spin)

_PARALLEL = 1e-9        # |cos| within this of 1: two axes are parallel (no wrist)
_CENTRE_OFF = 1e-3      # of the tolerance: axes passing this close to one point meet there
ON_AXIS_SQUARED = 1e-24  # a unit direction this little across an axis (squared) lies on it


class WristSplit(NamedTuple):
    """How a spherical-wrist arm's full pose splits (see module docstring)."""

    arm: Chain                      # the joints above the wrist, tipped at the wrist centre
    centre: tuple[float, float, float]  # metres, the wrist centre in the tool frame


def split_at_wrist(chain: Chain, tolerance: float,
                   tool_axis: Sequence[float] | None = None) -> WristSplit | None:
    """
    Return how a serial chain splits at a spherical wrist, or None if it has none.

    A spherical wrist: the last three joints revolute, no two consecutive axes parallel,
    all three passing within _CENTRE_OFF tolerances (metres) of one point, at least one
    joint above them, no mimic joints, one effector on the last joint. The axes of two
    joints in a row keep their relative place whatever the angles, so meeting at q = 0
    they meet everywhere. tool_axis (unit, tool frame): for a tool pointed along a target
    axis with its roll free, which fixes the centre only where it lies on that axis (within
    the same distance); None when it does not.
    """
    joints, n = chain.joints, len(chain.joints)
    if len(chain.effectors) != 1 or chain.effectors[0].parent != n - 1 or n < 4 \
            or chain.dof != n or any(joint.parent != index - 1
                                     for index, joint in enumerate(joints)) \
            or any(joint.prismatic for joint in joints[-3:]):
        return None
    zero = np.zeros(n)
    kinematics = chain.forward(zero)
    points, axes = kinematics.positions[-3:], kinematics.axes[-3:]
    if max(abs(float(a @ b)) for a, b in zip(axes, axes[1:])) > 1.0 - _PARALLEL:
        return None
    # The point nearest the three axis lines (least squares), and its distance to each.
    normals = [np.eye(3) - np.outer(axis, axis) for axis in axes]
    centre = np.linalg.solve(sum(normals), sum(m @ p for m, p in zip(normals, points)))
    if max(np.linalg.norm(m @ (centre - p)) for m, p in zip(normals, points)) \
            > _CENTRE_OFF * tolerance:
        return None
    k = n - 3
    rotation, origin = kinematics.rotations[k - 1], kinematics.positions[k - 1]
    effector = chain.effectors[0]
    arm = Chain(chain.base_link, joints[:k],
                [Effector(f'{effector.name}_wrist_centre', k - 1, rotation.T @ (centre - origin))])
    tool = chain.tip_pose(zero)
    local = tool[:3, :3].T @ (centre - tool[:3, 3])
    if tool_axis is not None and np.linalg.norm(np.cross(local, tool_axis)) \
            > _CENTRE_OFF * tolerance:
        return None
    return WristSplit(arm, tuple(local.tolist()))


class SphericalWrist(NamedTuple):
    """A spherical wrist's three unit axes in one frame, with its closed form's constants."""

    pair: AxisPair                      # the first two axes (not parallel)
    third: tuple[float, float, float]   # the third axis
    across: tuple[float, float, float]  # a direction across the third axis
    third_split: tuple[float, tuple[float, float, float]]  # a3 along and across a2 (_across)
    across_third: tuple[float, float, float]  # across's part across a3


def spherical_wrist(axes: Sequence[Sequence[float]]) -> SphericalWrist:
    """Return the wrist of three unit axes a1, a2, a3 through one point, a1 and a2 not parallel."""
    a1, a2, a3 = (tuple(float(x) for x in axis) for axis in axes)
    across = _cross(a3, (1.0, 0.0, 0.0) if abs(a3[0]) < 0.9 else (0.0, 1.0, 0.0))
    return SphericalWrist(axis_pair(a1, a2), a3, across, _across(a2, a3), _across(a3, across)[1])


def _wrist_pairs(wrist: SphericalWrist, turn: Sequence[float]
                 ) -> tuple[list[tuple[float, float]], Spin]:
    """
    Return the first two angles of the wrist's solutions for a turn, and their third's spin.

    a1's and a2's turns carry a3 onto turn @ a3 (subproblem 2), then a3's turns turn @ across,
    turned back about a1 and a2, the rest of the way (subproblem 1; _wrist_third).
    """
    pair = wrist.pair
    return (_carry_across(pair, wrist.third_split, _across(pair.first, _apply(turn, wrist.third))),
            spin(pair.first, _apply(turn, wrist.across)))


def _wrist_third(wrist: SphericalWrist, carried: Spin, t1: float, t2: float) -> float:
    """
    Return the third angle of the wrist's solution whose first two are t1, t2 (see above).

    The angle turning across_third toward _turned(a2, -t2, _spun(carried, -t1)) about a3
    (subproblem 1, as _turn_angle of a start across the axis), written out: a cold pose's
    closed form finds the third angle of most of its branches.
    """
    (ax, ay, az), (x, y, z), along, (cx, cy, cz) = carried
    c, s = math.cos(-t1), math.sin(-t1)
    along *= 1.0 - c
    x, y, z = x * c + cx * s + ax * along, y * c + cy * s + ay * along, z * c + cz * s + az * along
    ax, ay, az = wrist.pair.second
    c, s = math.cos(-t2), math.sin(-t2)
    along = (ax * x + ay * y + az * z) * (1.0 - c)
    x, y, z = (x * c + (ay * z - az * y) * s + ax * along,
               y * c + (az * x - ax * z) * s + ay * along,
               z * c + (ax * y - ay * x) * s + az * along)
    (ax, ay, az), (ux, uy, uz) = wrist.third, wrist.across_third
    along = ax * x + ay * y + az * z
    x, y, z = x - along * ax, y - along * ay, z - along * az
    return math.atan2(ax * (uy * z - uz * y) + ay * (uz * x - ux * z) + az * (ux * y - uy * x),
                      ux * x + uy * y + uz * z)


def wrist_angles(wrist: SphericalWrist, turn: Sequence[float], seed: Sequence[float],
                 lower: Sequence[float], upper: Sequence[float]) -> list[float] | None:
    """
    Return the angles t with exp(a1 t1) exp(a2 t2) exp(a3 t3) = turn, within the limits.

    turn: the rotation the wrist's axes must make, in their frame. Of the two solutions
    (the middle joint bent either way) within the limits, each angle turned by whole turns
    where that brings it inside them, the one nearest the seed; None if neither fits (or
    the turn is beyond the wrist: axes not at right angles).
    """
    found = nearest_wrist_angles(wrist, turn, seed, lower, upper, math.inf)
    return found[0] if found is not None else None


def nearest_wrist_angles(wrist: SphericalWrist, turn: Sequence[float], seed: Sequence[float],
                         lower: Sequence[float], upper: Sequence[float], bound: float
                         ) -> tuple[list[float], float] | None:
    """
    Return wrist_angles' answer and its squared distance from the seed, if below bound.

    None where no solution fits the limits nearer than bound (radians squared): a branch
    whose first two angles are already that far from the seed skips its third.
    """
    return turned_back_wrist_angles(wrist, (), (), _apply(turn, wrist.third),
                                    _apply(turn, wrist.across), seed, lower, upper, bound)


def turned_back_wrist_angles(wrist: SphericalWrist, axes: Sequence[tuple[float, float, float]],
                             angles: Sequence[float], third: Sequence[float],
                             across: Sequence[float], seed: Sequence[float],
                             lower: Sequence[float], upper: Sequence[float], bound: float
                             ) -> tuple[list[float], float] | None:
    """
    Return nearest_wrist_angles' answer for the turn (R(a1, t1) ... R(ak, tk))^T T.

    The turn given by what T makes of the wrist's third axis and of its direction across
    it (`third`, `across`), each turned back by the joints as turned_back_vector turns it
    (the direction across is used only where a branch's first two angles fit nearer than
    bound).
    """
    best, distance = None, bound
    (s1, s2, s3), (l1, l2, l3), (u1, u2, u3) = seed, lower, upper
    pair, carried = wrist.pair, None
    # Both directions in one pass: nearly every call's branches need the one across too.
    (x, y, z), turned_across = _both_turned_back(axes, angles, third, across)
    ax, ay, az = pair.first
    along = ax * x + ay * y + az * z    # (_across(a1, the third axis turned back), inline)
    for t1, t2 in _carry_across(pair, wrist.third_split,
                                (along, (x - along * ax, y - along * ay, z - along * az))):
        f1 = _within(t1, s1, l1, u1)
        f2 = _within(t2, s2, l2, u2)
        if f1 is None or f2 is None:
            continue
        moved = (f1 - s1) ** 2 + (f2 - s2) ** 2
        if moved >= distance:
            continue
        if carried is None:
            carried = spin(pair.first, turned_across)
        t3 = _wrist_third(wrist, carried, t1, t2)
        f3 = _within(t3, s3, l3, u3)
        if f3 is not None:
            moved += (f3 - s3) ** 2
            if moved < distance:
                best, distance = [f1, f2, f3], moved
    return (best, distance) if best is not None else None


def turned_wrist(wrist: SphericalWrist, frame: Sequence[float]) -> SphericalWrist:
    """Return the wrist in another frame: its axes and its direction across a3 turned by it."""
    pair = wrist.pair
    a1, a2, a3, across = (_apply(frame, v)
                          for v in (pair.first, pair.second, wrist.third, wrist.across))
    return SphericalWrist(axis_pair(a1, a2), a3, across, _across(a2, a3), _across(a3, across)[1])


def wrist_pointing(wrist: SphericalWrist, along: Sequence[float], toward: Sequence[float],
                   seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
                   ) -> list[float] | None:
    """
    Return wrist angles that turn the direction `along` onto `toward`, the last at its seed.

    A tool axis pointed with its roll free: the third joint keeps its seed angle (its turn
    is the roll when `along` lies on a3), the first two carry the direction there
    (subproblem 2), the solution nearest the seed within the limits; None if neither fits.
    seed, limits: as wrist_angles; along, toward: unit directions in the axes' frame.
    """
    t3 = seed[2]
    best, distance = None, math.inf
    for t1, t2 in _carry(wrist.pair, _turned(wrist.third, t3, along), toward):
        best, distance = _nearer((t1, t2, t3), seed, lower, upper, best, distance)
    return best


class Shoulder(NamedTuple):
    """
    An arm above a wrist whose joints but the last turn about axes through one point.

    The shoulder: two or three joints whose axes meet in one point S, then an elbow joint;
    the tip (the wrist centre) keeps a distance from S that the elbow's angle alone sets
    (subproblem 3), and the shoulder turns it onto the target's direction (subproblem 2).
    With three shoulder joints the middle-but-last one (the arm's third) is redundant: it
    is given. All at q = 0, base frame (metres).
    """

    axes: tuple[tuple[float, float, float], ...]  # the shoulder's axes
    arm: tuple[tuple[float, float, float], ...]  # all the arm's axes
    point: tuple[float, float, float]   # S, where they meet
    elbow: tuple[tuple[float, float, float], tuple[float, float, float]]  # axis, a point
    lever: tuple[float, float, float]   # the tip from the elbow's point
    sinusoid: tuple[float, float, float]  # |tip - S|^2 = c - a cos t - b sin t: (a, b, c)
    pair: AxisPair                      # the first two axes
    lever_spin: Spin                    # the lever about the elbow's axis


def spherical_shoulder(arm: Chain, tolerance: float) -> Shoulder | None:
    """
    Return the shoulder's constants of an arm above a wrist, None if it has no such shoulder.

    Three or four revolute joints in a row, one effector on the last; all but the last
    axis passing within _CENTRE_OFF tolerances (metres) of one point, the first two not
    parallel, and the last joint changing the tip's distance from that point.
    """
    joints, k = arm.joints, len(arm.joints)
    if k not in (3, 4) or arm.dof != k or len(arm.effectors) != 1 \
            or arm.effectors[0].parent != k - 1 or any(joint.prismatic for joint in joints) \
            or any(joint.parent != index - 1 for index, joint in enumerate(joints)):
        return None
    zero = np.zeros(k)
    kinematics = arm.forward(zero)
    points, axes = kinematics.positions, kinematics.axes
    if abs(float(axes[0] @ axes[1])) > 1.0 - _PARALLEL:
        return None
    normals = [np.eye(3) - np.outer(axis, axis) for axis in axes[:-1]]
    point = np.linalg.solve(sum(normals), sum(m @ p for m, p in zip(normals, points)))
    if max(np.linalg.norm(m @ (point - p)) for m, p in zip(normals, points)) \
            > _CENTRE_OFF * tolerance:
        return None
    elbow, at = axes[-1], points[-1]
    lever = arm.tip_position(zero) - at
    along = float(lever @ elbow) * elbow
    v, across = at - point, lever - along
    a, b = -2.0 * float(v @ across), -2.0 * float(v @ np.cross(elbow, across))
    if math.hypot(a, b) < _CENTRE_OFF * tolerance * tolerance:
        return None
    arm_axes = tuple(tuple(float(x) for x in axis) for axis in axes)
    return Shoulder(arm_axes[:-1], arm_axes, tuple(float(x) for x in point),
                    (tuple(float(x) for x in elbow), tuple(float(x) for x in at)),
                    tuple(float(x) for x in lever),
                    (a, b, float(v @ v + lever @ lever + 2.0 * v @ along)),
                    axis_pair(*arm_axes[:2]), spin(arm_axes[-1], tuple(float(x) for x in lever)))


def shoulder_angles(shoulder: Shoulder, tip: Sequence[float], free: float | None,
                    seed: Sequence[float], lower: Sequence[float], upper: Sequence[float]
                    ) -> list[tuple[float, list[float]]]:
    """
    Return the arm's joint angles that put its tip at a point: up to four, within the limits.

    free: the redundant joint's angle (a three-joint shoulder), None for two. Each angle
    is turned by whole turns where that brings it inside the limits, nearest the seed;
    solutions that no turn fits are left out. Each comes with its squared distance from
    the seed (radians squared; summed joint by joint in order, as sum() would). A tip on
    the first axis keeps the seed's first angle (any puts it there); a tip on the shoulder's
    centre gets none (every shoulder angle does: the general solve takes it).
    """
    sx, sy, sz = shoulder.point
    dx, dy, dz = tip[0] - sx, tip[1] - sy, tip[2] - sz
    squared = dx * dx + dy * dy + dz * dz
    if squared < 1e-24:
        return []
    scale = 1.0 / math.sqrt(squared)
    a, b, c = shoulder.sinusoid
    (ex, ey, ez), pair = shoulder.elbow[1], shoulder.pair
    cx, cy, cz = pair.second
    (lax, lay, laz), (lx, ly, lz), lever_along, (lcx, lcy, lcz) = shoulder.lever_spin
    # What every solution shares, once: the free angle fitted (and its turn), each elbow's.
    fitted = held = None
    if free is not None:
        fitted = _within(free, seed[2], lower[2], upper[2])
        if fitted is None:
            return []
        held = (fitted - seed[2]) ** 2
        (fx, fy, fz), free_cos, free_sin = shoulder.axes[2], math.cos(free), math.sin(free)
    k = len(seed) - 1
    s1, s2, sk, l1, l2, lk, u1, u2, uk = (seed[0], seed[1], seed[k], lower[0], lower[1],
                                          lower[k], upper[0], upper[1], upper[k])
    toward = _across(pair.first, (dx * scale, dy * scale, dz * scale))  # (for both roots)
    # A tip on the first axis leaves the first angle free (every one puts the tip there):
    # it keeps the seed's, where the direction across the axis would be rounding noise.
    tx, ty, tz = toward[1]
    on_axis = tx * tx + ty * ty + tz * tz < ON_AXIS_SQUARED
    found = []
    for te in _sinusoid_roots(-a, -b, c - squared):
        elbow = _within(te, sk, lk, uk)
        if elbow is None:
            continue
        bent = (elbow - sk) ** 2
        # _spun(lever_spin, te), then _turned(a3, free, p), written out (free's turn made once).
        cosine, sine = math.cos(te), math.sin(te)
        along = lever_along * (1.0 - cosine)
        x = ex + (lx * cosine + lcx * sine + lax * along) - sx
        y = ey + (ly * cosine + lcy * sine + lay * along) - sy
        z = ez + (lz * cosine + lcz * sine + laz * along) - sz
        if free is not None:
            along = (fx * x + fy * y + fz * z) * (1.0 - free_cos)
            x, y, z = (x * free_cos + (fy * z - fz * y) * free_sin + fx * along,
                       y * free_cos + (fz * x - fx * z) * free_sin + fy * along,
                       z * free_cos + (fx * y - fy * x) * free_sin + fz * along)
        norm = math.sqrt(x * x + y * y + z * z)
        x, y, z = x / norm, y / norm, z / norm
        along = cx * x + cy * y + cz * z    # (_across(a2, p), inline)
        for t1, t2 in _carry_across(pair, (along, (x - along * cx, y - along * cy,
                                                   z - along * cz)), toward):
            t1 = s1 if on_axis else t1
            f1 = _within(t1, s1, l1, u1)
            f2 = _within(t2, s2, l2, u2)
            if f1 is None or f2 is None:
                continue
            moved = (f1 - s1) ** 2 + (f2 - s2) ** 2
            if fitted is None:
                found.append((moved + bent, [f1, f2, elbow]))
            else:
                moved += held
                found.append((moved + bent, [f1, f2, fitted, elbow]))
    return found


def turned_back_vector(axes: Sequence[tuple[float, float, float]], angles: Sequence[float],
                       v: Sequence[float]) -> tuple[float, float, float]:
    """
    Return (R(a1, t1) ... R(ak, tk))^T v: v turned by -t1, then -t2 ...

    axes: unit axes at q = 0, base frame (a product of exponentials: the turns of joints in
    a row compose in this order whatever the joints' offsets).
    """
    return _both_turned_back(axes, angles, v, v)[0]


def _both_turned_back(axes: Sequence[tuple[float, float, float]], angles: Sequence[float],
                      u: Sequence[float], v: Sequence[float]
                      ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Return turned_back_vector of u and of v, both turned in one loop over the joints."""
    x, y, z = u
    vx, vy, vz = v
    for (ax, ay, az), angle in zip(axes, angles):
        c, s = math.cos(angle), -math.sin(angle)    # (of -angle: cosine even, sine odd)
        along = (ax * x + ay * y + az * z) * (1.0 - c)     # (Rodrigues, as _turned)
        x, y, z = (x * c + (ay * z - az * y) * s + ax * along,
                   y * c + (az * x - ax * z) * s + ay * along,
                   z * c + (ax * y - ay * x) * s + az * along)
        along = (ax * vx + ay * vy + az * vz) * (1.0 - c)
        vx, vy, vz = (vx * c + (ay * vz - az * vy) * s + ax * along,
                      vy * c + (az * vx - ax * vz) * s + ay * along,
                      vz * c + (ax * vy - ay * vx) * s + az * along)
    return (x, y, z), (vx, vy, vz)


def serial_revolute(chain: Chain, count: int) -> bool:
    """Return whether chain is `count` independent revolute joints in a row to one tool."""
    joints = chain.joints
    return (len(joints) == count and chain.dof == count and len(chain.effectors) == 1
            and chain.effectors[0].parent == count - 1
            and all(joint.parent == index - 1 for index, joint in enumerate(joints))
            and not any(joint.prismatic for joint in joints))


def _meeting(p1: np.ndarray, a1: np.ndarray, p2: np.ndarray, a2: np.ndarray
             ) -> tuple[np.ndarray, float]:
    """Return the point of the first line nearest the second, and their distance (metres)."""
    w = p1 - p2
    cosine, d, e = float(a1 @ a2), float(a1 @ w), float(a2 @ w)
    denominator = 1.0 - cosine * cosine
    if denominator < _PARALLEL:
        return p1, math.inf
    s, t = (cosine * e - d) / denominator, (e - cosine * d) / denominator
    near = p1 + s * a1
    return near, float(np.linalg.norm(near - (p2 + t * a2)))
