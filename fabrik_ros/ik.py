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
FABRIK inverse kinematics on chains and trees of revolute, prismatic and mimic joints.

Targets are positions or full poses (orientation per effector: full, a free roll about a
tool axis, or none); the answer's joint values are exact (FK-consistent) and within limits.

The solver sees the model as points, FABRIK style: the base, the distinct joint origins
(co-located joints such as a spherical wrist form one multi-axis point) and the effectors.
One FABRIK iteration is

1. a tip-to-root pass: every effector point goes to its goal (its target, or where it is if
   it has none: it holds its pose) and each point is pulled back onto its child at the fixed
   link length; a point with several children (a sub-base) goes to the centroid of their
   proposals (Aristidou & Lasenby 2011, multi-end-effector scheme);
2. a root-to-tip pass that is a forward-kinematics sweep: at each joint the angle about its
   axis is chosen in closed form to rotate the downstream points (at their current angles)
   as close as possible to the points of pass 1 (least squares), then clamped to the
   limits. Angles and positions stay consistent with forward kinematics by construction,
   so offsets off the link line are handled exactly and limits are never violated.

FABRIK does the large moves; once it is within a closing radius of the target (or stops
gaining fast), damped least-squares steps on the true kinematics (the sweep yields each
joint's axis and origin, hence the position Jacobian) close the rest quadratically. Those
steps keep redundant joints off their limits (weighted least norm, and a null-space push
back toward mid-range), so warm-started tracking stays on the seed's branch; a solve that
stalls well short of a possibly reachable target restarts from other seeds. Every accepted
step lowers the error, and the best pose is kept. Targets out of reach lay the chain
straight toward them (FABRIK's rule), then end as close as the joints allow.

Hot paths are written on plain floats: for 3-vectors and 3x3 frames this is several times
faster in CPython than numpy calls. Frames are row-major 9-tuples in a canonical form whose
local z axis is the joint axis, so a joint rotation is a 2D rotation of two columns. The
sweep is compiled per chain to straight-line code with its constants folded.
The module imports numpy and the standard library only. Units: metres, radians.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import functools
from itertools import compress
import math
from operator import add, and_, le, mul, not_, sub
import time
from typing import NamedTuple, Sequence

from fabrik_ros.chain import Chain, Effector, rotation_tuple
from fabrik_ros.wrist import (offset_wrist, offset_wrist_angles, OffsetWrist,
                              split_at_wrist, wrist_angles, wrist_pointing)
import numpy as np

ROOT_MODES = ('pinned', 'free')
FIT_MODES = ('auto', 'chain', 'next')
ORIENTATION_MODES = ('full', 'axis', 'position')
MAX_COORDINATE_M = 1e6  # metres: a target farther out is an input error (it would overflow)

_TWO_PI = 2.0 * math.pi
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
_ORIGIN = (0.0, 0.0, 0.0)
_FAR_WEIGHT = 1e-3      # fit 'next': weight of points beyond the next (they break ties)
_COLOCATED = 1e-9       # metres: joint origins closer than this form one point
_PARALLEL = 0.1         # sine of the angle below which two axes at a point count as one
_SNAP = 1e-15           # a compiled constant this close to 0 or +-1 is taken as that value
_ON_AXIS = 1e-12        # m^2: a weaker fit means the points lie on the axis; keep the angle
# Levenberg-Marquardt damping of the closing step, as a multiple of the squared error: large
# far from the target (short, safe steps), vanishing near it (Newton's quadratic finish).
_DAMPING_START = 0.1
_DAMPING_MIN = 1e-3
_STRETCH_DAMPING_DROP = 0.5  # out of reach, per Gauss-Newton step taken (see _Solve.attempt)
_DAMPING_MAX = 1e8      # beyond this no step lowers the error: the closing step has stalled
_DAMPING_FLOOR = 1e-12  # m^2: keeps J J^T + damping I invertible in floating point
_COMPILED_PRODUCTS = 600  # damped solves whose Gram matrix takes at most this many products
#                          run as straight-line code (beyond, numpy is faster)
# Damping of the Newton step (_Solve._newton_step), as a multiple of its Hessian's largest
# diagonal entry: it starts light (the polish starts near a minimum) and may vanish.
_NEWTON_DAMPING_START = 1e-3
_NEWTON_DAMPING_MIN = 1e-9
# Newton's steps apply to an effector moved by at most this many joints: its system costs
# their square (the Hessian) and cube (its factorisation); longer paths keep Gauss-Newton.
_NEWTON_JOINTS = 200
_COMPILED_PAIRS = 600   # ... its Hessian is straight-line code up to this many pairs of joints
# A Newton step whose model gains less than this fraction of the objective has converged:
# below it lie rounding errors (and trying ever larger dampings would find no gain).
_NEWTON_STALL = 1e-12
# m^2: orientation solves damp at least this much. Near a wrist singularity (two roll axes
# in line) the orientation rows lose rank and an undamped step swings the wrist by radians
# for a millimetre; this keeps a tracking step within about |residual| / (2 sqrt(floor)).
_POSE_DAMPING_FLOOR = 2.5e-5
# A closing step gaining less than _STALL tolerances plus _STALL_RELATIVE of the error has
# stalled: 1 um at the default tolerance, 10 um more per metre an unreachable target is away.
_STALL = 1e-2
_STALL_RELATIVE = 1e-5
# While exploring seeds, a closing step gaining less than this fraction of the excess has
# stalled too: past it the error creeps down linearly (a target behind a limit, not a
# reachable one, where the steps converge quadratically). Only the best pose is then
# polished to the strict stall above, once.
_EXPLORE_STALL = 1e-2
_CONFIRM_STALL = 0.1    # ... and this fraction once a restart is back at the best residual
_LIMIT_MARGIN = 0.3     # radians (metres for a slide): closer to a limit, a joint's closing
#                         steps are scaled down
_LIMIT_MARGIN_SHARE = 0.15  # ... or this share of its range where that is less (a narrow
#                             joint keeps most of its range free)
_LIMIT_WEIGHT_MIN = 0.05  # ... but never below this, so it can still reach the limit
#                           (at the limit, drawn past it: 0, see IkSolver._limit_steering)
_LIMIT_PUSH = 0.2       # a solve's first closing step undoes this much of a joint's intrusion
#                         into that margin, in the null space of the targets (no error)
# An orientation solve of reachable targets whose closing step removes less than this share
# of the remaining error, farther than restart_error from the target, has stalled in a local
# minimum (the wrong wrist or elbow branch, a joint limit): a restart is cheaper than
# creeping on.
_POSE_STALL = 0.1
_CREEP = 0.1            # out of reach, a step gaining less than this fraction of the excess
#                         creeps (see _Solve.attempt)
_CONVEX_SHIFT = 1e-9    # of the Hessian's largest diagonal entry: a curvature below minus
#                         this is negative (a saddle, see _Solve._basin_step)
_SADDLE_EXCESS = 0.5    # of the reach: out of reach, an attempt this far above its floor may
#                         sit on a saddle (pointing away) and converges strictly, nudge next
_NUDGE = 0.1            # radians: how far a retry out of reach turns each joint
_STOP_RETRIES = 2       # out of reach, retries from random seeds while a root stays at a stop
_RESTART_SEED = 20111   # fixed, so solves are reproducible
_RESTART_ERROR = 10.0   # tolerances: default restart_error ...
_RESTART_ERROR_REACH = 1e-3  # ... but at most this fraction of the reach (small robots)
_AGREE = 1e-3           # of the reach (at least one tolerance): restarts ending this close
#                         to the best error found the same residual; closer by more is progress
_UNREACHABLE_AFTER = 2  # default unreachable_after: restarts confirming the best residual
_FARTHEST_SAMPLES = 200  # random poses besides the restart seeds; the farthest of them ...
_FARTHEST_STARTS = 12   # ... this many, are pushed out (see IkSolver._farthest) ...
_FARTHEST_STEPS = 100   # ... by at most this many Newton steps each
_MAP_SAMPLES = 1024     # random poses whose effector points map the workspace (_mapped_seed)
_BEYOND_SHELL = 0.01    # of the reach: a target farther out than the farthest the effector
#                         gets counts as outside the workspace (see IkSolver._beyond_workspace)
_WRIST_RESTARTS = 2     # restarts of the wrist centre's solve before the whole arm's
_WRIST_BRANCHES = 2     # ... and solves from other seeds where the wrist's limits rule out
#                         the arm's branch
_KEPT_WEIGHTS = 16      # sets of subtree weights a tree keeps (one per targeted subset)
_KEPT_LAYOUTS = 64      # pass layouts kept (one per set of groups a pass solves)
HELD_WEIGHT = 1e4       # default weight of an effector without a target: it holds


@dataclass
class IkResult:
    """
    Outcome of one solve.

    q: (n,) radians, always within the joint limits. effector_positions: (m, 3) metres in
    the base frame, FK(q) (with base_position added for a free root). errors: (m,) metres
    from each effector to its target, NaN where it had none; error: their maximum.
    history: the weighted error sqrt(sum w_i d_i^2) over effectors with a target or a held
    pose (d_i metres, w_i their weights, see IkSolver) of the best pose so far after the
    seed and after each iteration, so it never grows; trace: the matching joint vectors
    when solve(..., trace=True), else None. timed_out: the time budget ended the solve
    (the answer is the best pose found until then). Orientation errors count in the
    history as orientation_scale metres per radian (weight 1). A full pose split at a
    spherical wrist (see IkSolver) logs its seed and its answer only.
    orientation_errors: (m,) radians per effector with an orientation target: the angle
    between the target frame and the reached tool frame ('full' and 'position' modes), or
    between the target's and the tool's axes ('axis'); NaN where it had none;
    orientation_error: their maximum (NaN for a position-only solve); the reached tool
    frames are chain.effector_poses(q). reached: every error within its tolerance (the
    orientation errors of effectors in 'position' mode are reported, not required).
    """

    q: np.ndarray
    error: float
    errors: np.ndarray
    iterations: int
    reached: bool
    base_position: np.ndarray
    effector_positions: np.ndarray
    fabrik_iterations: int = 0      # accepted FABRIK iterations, all attempts
    closing_steps: int = 0          # accepted damped least-squares steps, all attempts
    restarts: int = 0               # attempts from other seeds after a stall
    initial_error: float = 0.0      # metres, at the seed (max over targets)
    fabrik_error: float = 0.0       # metres, after the first attempt's FABRIK stage
    history: list[float] = field(default_factory=list)
    trace: list[np.ndarray] | None = None
    timed_out: bool = False
    orientation_error: float = math.nan
    orientation_errors: np.ndarray = field(default_factory=lambda: np.empty(0))


class _State(NamedTuple):
    """A pose and its forward kinematics, on plain floats."""

    q: list[float]                  # radians
    base: tuple[float, float, float]  # metres, the root point
    frames: list[tuple[float, ...]]   # per joint (and the base last): canonical rotation
    #                                   (9, row-major), origin (3)
    points: list[tuple[float, float, float]]  # per point: position, metres


class _Joint(NamedTuple):
    """A joint compiled for the sweep."""

    parent: int                 # parent joint index, -1 = base
    point: int                  # index of the point at this joint's origin
    rotation: tuple[float, ...]  # (9,) canonical parent frame -> canonical frame at q = 0
    offset: tuple[float, float, float]  # origin in the canonical parent frame
    lower: float                # the joint's range (radians or metres) as its coupling allows
    upper: float
    prismatic: bool             # slides along its axis (metres) instead of turning
    coordinate: int             # index in q of the independent joint that drives it
    multiplier: float           # position = multiplier * q[coordinate] + offset (mimic)
    shift: float
    decides: bool               # the sweep fits q[coordinate] at this joint (the first
    #                             of its coupled joints), the others follow


class _Effector(NamedTuple):
    """An effector (or a marker point of its tool) compiled for the sweep and the passes."""

    parent: int
    point: int
    offset: tuple[float, float, float]  # in the canonical parent frame
    tool: tuple[float, ...]     # (9,) rotation: canonical parent frame -> tool frame
    joints: tuple[int, ...]     # joints that move it, root first
    path: tuple[int, ...]       # points from the effector up to its anchor, anchor excluded
    along: tuple[float, ...]    # metres, each path point's distance from the anchor, unbent
    anchor: int                 # the point that stays put when the root is pinned
    reach: float                # metres, path length from the anchor: farther is unreachable


# A fit: per joint, the points its motion is fitted to, as (first, stop, weight) runs of
# point indices (points are numbered depth-first, so a joint's downstream points are one run).
_Fit = tuple[tuple[int, int, float], ...]


def _axis_frame(axis: np.ndarray) -> np.ndarray:
    """Return a rotation (3, 3) whose third column is the unit axis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def _floats(array: np.ndarray) -> tuple[float, ...]:
    """
    Return a numpy array's entries, row-major, as a tuple of floats.

    Entries within _SNAP of 0 or +-1 become exactly that (rotations by multiples of 90
    degrees leave cos(pi/2) = 6e-17 behind): the compiled sweep then drops or simplifies
    their terms.
    """
    values = []
    for value in np.ravel(array).tolist():
        exact = float(round(value))
        values.append(exact if abs(exact) <= 1.0 and abs(value - exact) < _SNAP else value)
    return tuple(values)


class _Tree:
    """
    The chain compiled for the solver: canonical frames and the point tree.

    Canonical frame of joint j: its URDF frame (after its motion) times C_j, where C_j's z
    column is the joint axis; a rotation by q is then Rz(q), a translation q along z.
    neutral: the state of the chain's neutral pose.
    Point 0 is the base origin; points are numbered depth-first, parents first. A prismatic
    joint's origin is a point of its own, whose distance to its parent point slides.
    Building it takes time and memory linear in the number of joints.

    markers: per effector, points fixed in its tool frame (metres) that become effectors of
    their own, after the chain's: the multi-point end effector of orientation solves, whose
    points the passes fit like any other. `tools` counts the chain's own effectors.
    """

    def __init__(self, chain: Chain, markers: Sequence[Sequence[np.ndarray]] = ()) -> None:
        joints = chain.joints
        self.tools = len(chain.effectors)
        self.markers: list[list[int]] = [[] for _ in chain.effectors]  # effector indices
        self.marker_points = [[tuple(map(float, point)) for point in points]
                              for points in markers]    # metres, tool frame
        self.marker_owners: list[int] = []  # per marker effector, the effector it belongs to
        effectors = list(chain.effectors)
        for owner, points in enumerate(markers):
            tool = chain.effectors[owner]
            for point in points:
                self.markers[owner].append(len(effectors))
                self.marker_owners.append(owner)
                effectors.append(Effector(f'{tool.name}:marker', tool.parent,
                                          tool.offset + tool.rotation @ point, tool.rotation))
        canonical = [_axis_frame(joint.axis) for joint in joints]
        identity = np.eye(3)
        child_joints: list[list[int]] = [[] for _ in range(len(joints) + 1)]  # -1 last
        for index, joint in enumerate(joints):
            child_joints[joint.parent].append(index)
        child_effectors: list[list[int]] = [[] for _ in range(len(joints) + 1)]
        for index, effector in enumerate(effectors):
            child_effectors[effector.parent].append(index)
        coordinate = chain.coordinate_of_joint.tolist()
        multiplier = chain.multipliers.tolist()
        shift = chain.offsets.tolist()
        deciding: dict[int, int] = {}   # coordinate -> the first joint that moves with it
        for index, (c, m) in enumerate(zip(coordinate, multiplier)):
            if m != 0.0:
                deciding.setdefault(c, index)

        point_of_joint = [0] * len(joints)
        effector_point = [0] * len(effectors)
        parent_point = [-1]
        length: list[float] = [0.0]      # metres to the parent point (a bound if sliding)
        sliding = [False]
        first_moved = [0] * len(joints)  # per joint, the run of points it moves
        stop_moved = [0] * len(joints)
        self.root_rigid: set[int] = set()   # points fixed to the base link (no joint between)

        def new_point(parent: int, distance: float, slides: bool) -> int:
            parent_point.append(parent)
            length.append(distance)
            sliding.append(slides)
            return len(parent_point) - 1

        def add_effectors(joint: int, point: int) -> None:
            for index in child_effectors[joint]:
                offset = effectors[index].offset
                effector_point[index] = new_point(point, float(np.linalg.norm(offset)), False)
                if joint < 0:
                    self.root_rigid.add(effector_point[index])

        # Depth-first without recursion: (joint, entering) pairs; leaving closes its run.
        add_effectors(-1, 0)
        stack = [(index, True) for index in reversed(child_joints[-1])]
        while stack:
            index, entering = stack.pop()
            if not entering:
                stop_moved[index] = len(parent_point)
                continue
            joint = joints[index]
            above = point_of_joint[joint.parent] if joint.parent >= 0 else 0
            distance = float(np.linalg.norm(joint.origin_xyz))
            first_moved[index] = len(parent_point)
            if joint.prismatic:
                reach = distance + max(abs(joint.lower), abs(joint.upper))
                point_of_joint[index] = new_point(above, reach, True)
            elif distance >= _COLOCATED:
                point_of_joint[index] = new_point(above, distance, False)
                if joint.parent < 0:
                    self.root_rigid.add(point_of_joint[index])
                first_moved[index] += 1     # its rotation does not move its own origin
            else:
                point_of_joint[index] = above
            add_effectors(index, point_of_joint[index])
            stack.append((index, False))
            stack += [(child, True) for child in reversed(child_joints[index])]

        lower, upper = chain.lower.tolist(), chain.upper.tolist()
        self.lower, self.upper = lower, upper   # per independent joint
        self.joints: list[_Joint] = []
        for index, joint in enumerate(joints):
            up = canonical[joint.parent] if joint.parent >= 0 else identity
            c, m, o = coordinate[index], multiplier[index], shift[index]
            low, high = sorted((m * lower[c] + o, m * upper[c] + o)) if m else (o, o)
            rotation = up.T @ joint.origin_rotation @ canonical[index]
            self.joints.append(_Joint(
                joint.parent, point_of_joint[index], _floats(rotation),
                _floats(up.T @ joint.origin_xyz), low, high, joint.prismatic, c, m, o,
                deciding.get(c) == index))
        self.effectors: list[_Effector] = []
        for index, effector in enumerate(effectors):
            up = canonical[effector.parent] if effector.parent >= 0 else identity
            point = effector_point[index]
            movers = []
            joint = effector.parent
            while joint >= 0:
                movers.append(joint)
                joint = joints[joint].parent
            movers.reverse()
            anchor = 0
            if movers:
                anchor = point_of_joint[movers[0]]
                if joints[movers[0]].prismatic:   # its own point slides: anchor above it
                    anchor = parent_point[anchor]
            path = [point] if movers else []    # on the base link nothing moves it
            while path and parent_point[path[-1]] != anchor:
                path.append(parent_point[path[-1]])
            along = np.cumsum([length[k] for k in reversed(path)])[::-1]
            self.effectors.append(_Effector(
                effector.parent, point, _floats(up.T @ effector.offset),
                _floats(up.T @ effector.rotation), tuple(movers),
                tuple(path), tuple(along.tolist()), anchor, float(along[0]) if path else 0.0))
        self.effector_links = [(e.parent, e.point, e.offset) for e in self.effectors]
        self.marker_point_set = {e.point for e in self.effectors[self.tools:]}
        self.n_points = len(parent_point)
        # Per point its children and their distance (None: it slides, measure it).
        self.children: list[list[tuple[int, float | None]]] = [[] for _ in parent_point]
        for point in range(1, self.n_points):
            self.children[parent_point[point]].append(
                (point, None if sliding[point] else length[point]))
        # Joint points (not the root, not effectors), children before parents.
        effector_points = set(effector_point)
        self.inner_points = [k for k in range(self.n_points - 1, 0, -1)
                             if k not in effector_points]
        # Every point a revolute joint turns about turns about two or more axes (universal
        # or ball joints: a tentacle, a snake), the chain FABRIK models: see IkSolver's fit.
        axes = chain.forward(chain.neutral()).axes
        turning: dict[int, list[np.ndarray]] = {}
        for index, joint in enumerate(joints):
            if not joint.prismatic:
                turning.setdefault(point_of_joint[index], []).append(axes[index])
        self.ball_joints = bool(turning) and all(
            any(np.linalg.norm(np.cross(first, other)) > _PARALLEL for other in rest)
            for first, *rest in turning.values())
        # Per joint, the downstream points its motion is fitted to (see _Fit).
        # whole_fit: the whole downstream chain, the better compromise when the FABRIK points
        # are not a pose the joints can take exactly (reachable targets).
        # next_fit: essentially the next points, the classic FABRIK forward pass; exact and
        # fast when they are (a chain of ball joints). Farther points keep a small weight to
        # decide joints whose next point lies on their axis (the fit is linear in the
        # weights, so the next points' runs add up to weight 1): the tips below, two points
        # a joint where every farther point would cost a moment sum per point (a tentacle's
        # pass took 2x the time).
        # straight_fit: the same with every farther point breaking ties, for chains laid
        # straight toward an out-of-reach target (where tips alone ended farther from some).
        self.whole_fit: list[_Fit] = []
        self.next_fit: list[_Fit] = []
        self.straight_fit: list[_Fit] = []
        tips = sorted(set(effector_point))
        for index, joint in enumerate(self.joints):
            first, stop = first_moved[index], stop_moved[index]
            if first >= stop:
                self.whole_fit.append(())
                self.next_fit.append(())
                self.straight_fit.append(())
                continue
            self.whole_fit.append(((first, stop, 1.0),))
            next_points = tuple((k, k + 1, 1.0 - _FAR_WEIGHT) for k, _ in
                                self.children[joint.point] if first <= k < stop)
            self.next_fit.append(tuple((k, k + 1, _FAR_WEIGHT) for k in tips
                                       if first <= k < stop) + next_points)
            self.straight_fit.append(((first, stop, _FAR_WEIGHT),) + next_points)
        # Plain FK, and per effector its Jacobian's rows and Hessian, and per tool of a tree
        # with marker points its orientation rows (see _compiled_sweep).
        self._forward, self._rows, self._hessians, self.turns = _compiled_sweep(self)
        # Per effector, its Jacobian's columns: (joint, coordinate, multiplier, prismatic).
        self.columns = [tuple((j, self.joints[j].coordinate, self.joints[j].multiplier,
                               self.joints[j].prismatic) for j in effector.joints)
                        for effector in self.effectors]
        self.tool_points = [effector.point for effector in self.effectors[:self.tools]]
        # Per effector, the joints that turn it: (joint, coordinate, multiplier); a slide
        # does not, and a mimic joint adds its column, times its multiplier, to its leader's.
        self.turning = [tuple((j, c, m) for j, c, m, prismatic in columns if not prismatic)
                        for columns in self.columns]
        # Root-to-tip passes, compiled per fit list on first use: {ids of the fits: (fits,
        # function)}; holding the fits keeps their ids unique.
        self._fittings: dict[tuple[int, ...], tuple[list[_Fit], Callable]] = {}
        # The last pass used and its fits list: the next pass with that list needs no key.
        self._fitting: tuple[list[_Fit] | None, Callable | None] = (None, None)
        # Per point the weight below it, per (goal points, weights): see subtree_weights.
        self._subtree_weights: dict[tuple[tuple[int, ...], tuple[float, ...]], list[float]] = {}
        self.neutral = self.sweep(chain.neutral().tolist(), _ORIGIN)
        self._made_from = (chain, markers)

    def __reduce__(self) -> tuple:
        """Pickle as the chain (and markers) it compiles: the compiled sweeps are made anew."""
        return _Tree, self._made_from

    @staticmethod
    def fit_points(fit: _Fit) -> list[int]:
        """Return the points of a fit."""
        return [k for first, stop, _ in fit for k in range(first, stop)]

    def sweep(self, q: list[float], base: tuple[float, float, float],
              desired: list[tuple[float, float, float]] | None = None,
              old: _State | None = None,
              fits: list[_Fit] | None = None) -> _State:
        """
        Run forward kinematics root to tips; with `desired` points, choose q on the way.

        Without `desired` this is plain FK of q (the independent joints, radians or metres)
        from the root point `base` (metres). With it, `old` (the state the desired points
        were made from) and `fits` (per joint, see whole_fit), each deciding joint takes the
        in-limit angle (or slide) that best moves its fit points, rigid below it as in
        `old`, onto their desired points: FABRIK's root-to-tip pass. Mimic joints follow.
        """
        if desired is None:
            q, frames, points = self._forward(q, base)
        else:
            fitting = self._fitting
            if fitting[0] is not fits:  # else the same fits as the last pass: no key to make
                key = tuple(map(id, fits))
                if key not in self._fittings:
                    self._fittings[key] = (fits, _compiled_sweep(self, fits)[0])
                fitting = self._fitting = (fits, self._fittings[key][1])
            q, frames, points = fitting[1](q, base, old.frames, old.points, desired)
        return _State(q, base, frames, points)

    def stretched(self, targets: list[tuple[float, float, float] | None], state: _State,
                  tolerance: float) -> tuple[dict[int, tuple[float, float, float]], list[float]]:
        """
        Return where the points of out-of-reach targets go, and the summed shortfall.

        FABRIK's rule for a target beyond the reach of its effector (by more than the
        tolerance, metres): lay the path from the anchor (pinned) straight toward the
        target. Returns point -> desired position (averaged where paths share a point), and
        per effector the distance (metres) by which its target lies beyond its reach: a
        lower bound of its distance to the target (0 within reach or without a target).
        """
        sums: dict[int, tuple[float, float, float, int]] = {}
        beyond = [0.0] * len(self.effectors)
        for index, (target, effector) in enumerate(zip(targets, self.effectors)):
            if target is None or not effector.path:
                continue
            ax, ay, az = state.points[effector.anchor]
            distance = math.dist(target, (ax, ay, az))
            if distance <= effector.reach + tolerance:
                continue
            beyond[index] = distance - effector.reach
            ux, uy, uz = ((t - a) / distance for t, a in zip(target, (ax, ay, az)))
            for point, along in zip(effector.path, effector.along):
                sx, sy, sz, count = sums.get(point, (0.0, 0.0, 0.0, 0))
                sums[point] = (sx + ax + along * ux, sy + ay + along * uy,
                               sz + az + along * uz, count + 1)
        stretch = {point: (sx / count, sy / count, sz / count)
                   for point, (sx, sy, sz, count) in sums.items()}
        return stretch, beyond

    def subtree_weights(self, goal_points: list[int], weights: list[float]) -> list[float]:
        """
        Return per point the summed weight of the goal points (effectors) at or below it.

        The same goals and weights come back solve after solve: the totals are kept (a few
        sets; not to be modified).
        """
        key = (tuple(goal_points), tuple(weights))
        totals = self._subtree_weights.get(key)
        if totals is None:
            totals = [0.0] * self.n_points
            for point, weight in zip(goal_points, weights):
                totals[point] = weight
            for point in self.inner_points + [0]:
                totals[point] += sum(totals[child] for child, _ in self.children[point])
            if len(self._subtree_weights) >= _KEPT_WEIGHTS:
                self._subtree_weights.clear()
            self._subtree_weights[key] = totals
        return totals

    def reach_back(self, state: _State, goal_points: list[int],
                   goals: list[tuple[float, float, float]],
                   stretch: dict[int, tuple[float, float, float]], free_root: bool,
                   weights: list[float]) -> tuple[list[tuple[float, float, float]],
                                                  tuple[float, float, float]]:
        """
        Run FABRIK's tip-to-root pass; return the desired points and the root position.

        goal_points, goals: the effector points that have a goal and where it is, metres
        (marker points too, in orientation solves). stretch: fixed desired points for
        targets out of reach (see stretched()), and where a tool with an orientation target
        puts its joint's point. weights: per point, see subtree_weights(): a sub-base goes
        to the weighted centroid of its branches' proposals, each branch weighing what its
        effectors weigh; branches with no goal stay. A pinned root stays; a free root
        follows its children like the end of a rope.
        """
        points = state.points
        desired = list(points)
        for point, goal in zip(goal_points, goals):
            desired[point] = goal
        for point, position in stretch.items():
            desired[point] = position
        for point in self.inner_points:
            children = self.children[point]
            if point in stretch or not weights[point]:    # nothing below it: it stays
                continue
            ax, ay, az = points[point]
            sx = sy = sz = total = 0.0
            for child, length in children:
                cx, cy, cz = desired[child]
                dx, dy, dz = ax - cx, ay - cy, az - cz
                distance = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length is None:  # a prismatic joint: keep the length it has
                    length = math.dist(points[point], points[child])
                weight = weights[child]
                scale = weight * length / distance if distance > 0.0 else 0.0
                sx += weight * cx + scale * dx
                sy += weight * cy + scale * dy
                sz += weight * cz + scale * dz
                total += weight
            desired[point] = (sx / total, sy / total, sz / total)
        base = state.base
        if free_root:
            bx, by, bz = base
            sx = sy = sz = total = 0.0
            for child, length in self.children[0]:
                cx, cy, cz = desired[child]
                weight = weights[child]
                total += weight
                if child in self.root_rigid:    # hangs rigidly: the root translates with it
                    ox, oy, oz = points[child]
                    sx += weight * (bx + cx - ox)
                    sy += weight * (by + cy - oy)
                    sz += weight * (bz + cz - oz)
                    continue
                dx, dy, dz = bx - cx, by - cy, bz - cz
                distance = math.sqrt(dx * dx + dy * dy + dz * dz)
                if length is None:
                    length = math.dist(base, points[child])
                scale = weight * length / distance if distance > 0.0 else 0.0
                sx += weight * cx + scale * dx
                sy += weight * cy + scale * dy
                sz += weight * cz + scale * dz
            base = (sx / total, sy / total, sz / total)
        return desired, base

    def jacobian(self, state: _State, free_root: bool, effectors: list[int]
                 ) -> list[list[float]]:
        """
        Return the position Jacobian rows (3 per effector listed), metres per radian (or metre).

        Columns: the n independent joints (a mimic joint adds its column, times its
        multiplier, to its leader's), then the root's x, y, z when it is free.
        """
        rows: list[list[float]] = []
        frames, points = state.frames, state.points
        for index in effectors:
            rows += self._rows[index](frames, *points[self.effectors[index].point])
        if free_root:
            for axis, row in enumerate(rows):
                row += (0.0, 0.0, 0.0)
                row[-3 + axis % 3] = 1.0
        return rows

    def hessian(self, state: _State, index: int, weight: float,
                goal: tuple[float, float, float]) -> tuple[list[float], list[list[float]]]:
        """
        Return an effector's J^T w r per coordinate and its objective's Hessian (m^2).

        The objective is w |goal - x|^2 / 2, r = goal - x, so J^T w r is minus its gradient;
        the Hessian is w J^T J - C, its lower triangle by coordinate rows. C = w r . d2x/dq2
        is the term Gauss-Newton drops, as large as the rest out of reach: for joints j
        upstream of k (or j = k) on the effector's path d2x/dq_j dq_k is a_j x J_k for a
        turning j, 0 for a sliding one, so their entry is J_k . u_j with u_j = w J_j -
        (w r) x a_j. A mimic joint adds its entries, times its multiplier, to its leader's.
        Compiled per effector like its Jacobian's rows (_hessian_source) where its path has
        at most _COMPILED_PAIRS pairs of joints, with numpy beyond.
        """
        ex, ey, ez = state.points[self.effectors[index].point]
        px, py, pz = weight * (goal[0] - ex), weight * (goal[1] - ey), weight * (goal[2] - ez)
        if self._hessians[index] is not None:
            return self._hessians[index](state.frames, ex, ey, ez, px, py, pz, weight)
        # J_j and u_j as rows; every pair J_j . u_k at once, those with k upstream of j (or
        # j) kept and mirrored, then summed into coordinates by the map joint -> coordinate
        # times its multiplier (two joints of one coordinate meet in both orders).
        joints, coordinates, multipliers, prismatic = map(list, zip(*self.columns[index]))
        frames = np.array([state.frames[j] for j in joints])
        axes, levers = frames[:, [2, 5, 8]], (ex, ey, ez) - frames[:, 9:]
        sliding = np.array(prismatic)[:, np.newaxis]
        columns = np.where(sliding, axes, np.cross(axes, levers))
        turned = np.where(sliding, weight * axes, weight * columns - np.cross((px, py, pz), axes))
        pairs = np.tril(columns @ turned.T)
        mapping = np.zeros((len(joints), len(self.lower)))
        mapping[np.arange(len(joints)), coordinates] = multipliers
        hessian = mapping.T @ (pairs + np.tril(pairs, -1).T) @ mapping
        descent = mapping.T @ (columns @ (px, py, pz))
        return descent.tolist(), [row[:c + 1] for c, row in enumerate(hessian.tolist())]


def _fit_without(fit: _Fit, points: set[int]) -> _Fit:
    """Return the fit with these points left out (a run split around them)."""
    runs = []
    for first, stop, weight in fit:
        start = first
        for k in range(first, stop + 1):
            if k == stop or k in points:
                if start < k:
                    runs.append((start, k, weight))
                start = k + 1
    return tuple(runs)


class _SweepWriter:
    """
    Writes a chain's root-to-tip sweep as straight-line Python with its constants folded.

    A loop over the joints would unpack every constant and multiply by every zero and one
    of the mostly axis-aligned joint frames at each call; the written code computes only
    the terms that are not constant, in local variables (3-4x faster in CPython). Values
    are floats (constants) or source atoms: a local's name, possibly negated. The source
    is made of numbers and generated names only.
    """

    def __init__(self, header: str) -> None:
        self.lines = [header]
        self.count = 0

    def value(self, terms: list[tuple[float, float | str]]) -> float | str:
        """Return sum(coefficient * value) as a constant, an atom, or a new local's name."""
        constant = 0.0
        parts = []
        for coefficient, value in terms:
            if isinstance(value, float):
                constant += coefficient * value
            elif coefficient:
                negated = value.startswith('-')
                parts.append((-coefficient if negated else coefficient,
                              value[1:] if negated else value))
        if not parts:
            return constant
        if not constant and len(parts) == 1 and parts[0][0] in (1.0, -1.0) \
                and ' ' not in parts[0][1]:
            coefficient, atom = parts[0]
            return atom if coefficient == 1.0 else _negated(atom)
        source = ''.join(f' {"-" if coefficient < 0.0 else "+"} '
                         f'{"" if abs(coefficient) == 1.0 else f"{abs(coefficient)!r} * "}{atom}'
                         for coefficient, atom in parts)
        if constant:
            source += f' + {constant!r}'
        return self.assign(source[3:] if source[1] == '+' else '-' + source[3:])

    def assign(self, source: str) -> str:
        """Emit `local = source`; return the local's name."""
        name = f'v{self.count}'
        self.count += 1
        self.lines.append(f'    {name} = {source}')
        return name


def _negated(atom: str) -> str:
    """Return the source of -atom for a name or a negated name."""
    return atom[1:] if atom.startswith('-') else '-' + atom


def _times(factor: str, value: float | str, sign: float = 1.0) -> tuple[float, float | str]:
    """Return the term sign * factor * value for _SweepWriter.value (factor: a name)."""
    if isinstance(value, float):
        return sign * value, factor
    if value.startswith('-'):
        return -sign, f'{factor} * {value[1:]}'
    return sign, f'{factor} * {value}'


def _source(values: list[float | str]) -> str:
    """Return the source of a tuple of constants and atoms."""
    return '(' + ', '.join(v if isinstance(v, str) else repr(v) for v in values) + ')'


def _compiled_sweep(tree: _Tree, fits: list[_Fit] | None = None
                    ) -> tuple[Callable[..., tuple[list, list, list]], list[Callable],
                               list[Callable], list[Callable]]:
    """
    Return the tree's sweep compiled to a function (see _SweepWriter and _Tree.sweep).

    Plain FK comes with per effector its Jacobian's rows (_rows_source) and its objective's
    Hessian (_hessian_source; None beyond _COMPILED_PAIRS and in trees with marker points),
    and in trees with marker points (orientation solves) per tool its orientation rows
    (_turns_source); a fitting with none of them ([], [], []).

    Without fits: forward(q, base) -> (q, frames, points), plain FK; the frames are per
    joint (canonical rotation, row-major 9, origin 3), the base's last. With fits:
    fitting(q, base, old_frames, old_points, desired), where each deciding joint's angle
    (or slide) is first fitted to the desired points (FABRIK's root-to-tip pass): point by
    point for short runs of fit points, from moment sums for long ones (_fit_source).
    """
    n_q = len(tree.lower)
    fitting = fits is not None
    writer = _SweepWriter('def fitting(q, base, old_frames, old_points, desired):' if fitting
                          else 'def forward(q, base):')
    coordinates = [f'q{c}' for c in range(n_q)]
    writer.lines += [f'    [{", ".join(coordinates)}] = q', '    bx, by, bz = base']
    moments = _moment_sums(fits, writer.lines) if fitting else {}
    held: dict[str, tuple[str, int]] = {}   # see _fit_source
    base_frame: list[float | str] = [*_IDENTITY, 'bx', 'by', 'bz']
    frames: list[list[float | str]] = []
    points: list[list[float | str]] = [base_frame[9:]] * tree.n_points

    def placed(parent: int, offset: tuple[float, float, float]) -> list[float | str]:
        """Return the point at `offset` in the parent's frame (the base's for -1)."""
        k = frames[parent] if parent >= 0 else base_frame
        return [writer.value([(1.0, k[9 + r])] + [(offset[c], k[3 * r + c]) for c in range(3)])
                for r in range(3)]

    def position(joint: _Joint) -> float | str:
        """Return the joint's angle (or slide) from its coordinate, mimic coupling applied."""
        return writer.value([(joint.multiplier, f'q{joint.coordinate}'), (joint.shift, 1.0)])

    for j, joint in enumerate(tree.joints):
        origin = placed(joint.parent, joint.offset)
        k = frames[joint.parent] if joint.parent >= 0 else base_frame
        # H = K B, the joint's frame at angle 0; the angle turns its x and y columns, a slide
        # moves its origin along the z column.
        h = [writer.value([(joint.rotation[3 * i + c], k[3 * r + i]) for i in range(3)])
             for r in range(3) for c in range(3)]
        angle = position(joint)
        if fitting and joint.decides:
            writer.lines += _fit_source(j, joint, angle, h, origin, fits[j], moments.get(j),
                                        held)
            c, m, o = joint.coordinate, joint.multiplier, joint.shift
            writer.lines.append(f'    q{c} = fitted' if m == 1.0 and o == 0.0 else
                                f'    q{c} = min(max((fitted - {o!r}) / {m!r}, '
                                f'lower[{c}]), upper[{c}])')
            angle = position(joint)
        if joint.prismatic:
            origin = [writer.value([(1.0, origin[r])] + ([(angle, h[3 * r + 2])]
                                                         if isinstance(angle, float) else
                                                         [_times(angle, h[3 * r + 2])]))
                      for r in range(3)]
            frame = h
        else:
            if isinstance(angle, float):
                cos, sin = math.cos(angle), math.sin(angle)
                rotated = [[(cos, x), (sin, y)] for x, y in zip(h[0::3], h[1::3])], \
                    [[(cos, y), (-sin, x)] for x, y in zip(h[0::3], h[1::3])]
            else:
                cos, sin = writer.assign(f'cos({angle})'), writer.assign(f'sin({angle})')
                rotated = [[_times(cos, x), _times(sin, y)] for x, y in zip(h[0::3], h[1::3])], \
                    [[_times(cos, y), _times(sin, x, -1.0)] for x, y in zip(h[0::3], h[1::3])]
            frame = []
            for x_terms, y_terms, z in zip(*rotated, h[2::3]):
                frame += [writer.value(x_terms), writer.value(y_terms), z]
        frames.append(frame + origin)
        points[joint.point] = origin
    for parent, point, offset in tree.effector_links:
        points[point] = placed(parent, offset)
    writer.lines.append(f'    return [{", ".join(coordinates)}], '
                        f'[{", ".join(map(_source, frames + [base_frame]))}], '
                        f'[{", ".join(map(_source, points))}]')
    oriented = any(tree.markers)  # orientation solves take no Newton steps
    if not fitting:
        for index, effector in enumerate(tree.effectors):
            writer.lines += _rows_source(tree, index, effector, frames)
            if not oriented and len(effector.joints) * (len(effector.joints) + 1) // 2 \
                    <= _COMPILED_PAIRS:
                writer.lines += _hessian_source(tree, index, effector, frames)
            if oriented and index < tree.tools:
                writer.lines += _turns_source(tree, index, effector, frames)
    namespace = {'cos': math.cos, 'sin': math.sin, 'atan2': math.atan2,
                 'remainder': math.remainder, 'inf': math.inf,
                 'limited_angle': _limited_angle, 'fitted_slide': _fitted_slide,
                 'lower': tree.lower, 'upper': tree.upper}
    name = f'<fabrik_ros {"fitting" if fitting else "forward"} sweep, {len(tree.joints)} joints>'
    exec(compile('\n'.join(writer.lines), name, 'exec'), namespace)
    if fitting:
        return namespace['fitting'], [], [], []
    effectors = range(len(tree.effectors))
    return namespace['forward'], [namespace[f'rows{index}'] for index in effectors], \
        [namespace.get(f'hessian{index}') for index in effectors], \
        [namespace[f'turns{index}'] for index in range(tree.tools) if oriented]


def _product_source(a: float | str, b: str) -> str | None:
    """Return the source of a * b (b: a name), None for 0 (a: a constant or a name)."""
    if isinstance(a, float):
        return None if a == 0.0 else b if a == 1.0 else _negated(b) if a == -1.0 \
            else f'{a!r} * {b}'
    return f'{a} * {b}'


def _difference_source(a: str | None, b: str | None) -> str:
    """Return the source of a - b (None: 0)."""
    return (f'{a} - {b}' if b else a) if a else _negated(b) if b else '0.0'


def _column_source(tree: _Tree, effector: _Effector, frames: list[list[float | str]]
                   ) -> tuple[list[str], list[tuple[_Joint, tuple[float | str, ...], list[str]]]]:
    """
    Return the source lines that set an effector's Jacobian columns, and what they set.

    frames: the joints' frames as the compiled sweep writes them (constants folded, which
    stay constant in every state it makes), read from `frames` and the effector from ex,
    ey, ez. A revolute joint's column is its axis a cross (effector - origin), a prismatic
    joint's its axis; co-located joints share their lever. Per joint of the effector's
    path: the joint, its axis (constants or names) and its column's three entries (names,
    or '0.0').
    """
    lines: list[str] = []
    columns = []
    lever: tuple[float | str, ...] = ()     # the origin whose lever is in lx, ly, lz
    for j in effector.joints:
        joint = tree.joints[j]
        frame = frames[j]
        names = [f'f{j}_{i}' if i in (2, 5, 8, 9, 10, 11) and not isinstance(value, float)
                 else '_' for i, value in enumerate(frame)]
        lines.append(f'    {", ".join(names)} = frames[{j}]')
        ax, ay, az = axis = tuple(value if isinstance(value, float) else names[i]
                                  for i, value in zip((2, 5, 8), frame[2::3]))
        if joint.prismatic:
            column = [value if isinstance(value, str) else repr(value) for value in axis]
        else:
            if tuple(frame[9:]) != lever:
                lever = tuple(frame[9:])
                lines.append('    lx, ly, lz = ' + ', '.join(
                    f'e{axis} - {name}' if name != '_' else f'e{axis} - {value!r}'
                    for axis, name, value in zip('xyz', names[9:], frame[9:])))
            column = [_difference_source(_product_source(ay, 'lz'), _product_source(az, 'ly')),
                      _difference_source(_product_source(az, 'lx'), _product_source(ax, 'lz')),
                      _difference_source(_product_source(ax, 'ly'), _product_source(ay, 'lx'))]
        kept = [(f'c{j}{name}', value) for name, value in zip('xyz', column) if value != '0.0']
        if kept:
            lines.append(f'    {", ".join(name for name, _ in kept)} = '
                         f'{", ".join(value for _, value in kept)}')
        columns.append((joint, axis, [f'c{j}{name}' if value != '0.0' else '0.0'
                                      for name, value in zip('xyz', column)]))
    return lines, columns


def _rows_source(tree: _Tree, index: int, effector: _Effector,
                 frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of rows<index>(frames, ex, ey, ez): the effector's Jacobian rows.

    The columns of _column_source; a mimic joint adds its column, times its multiplier, to
    its leader's (IkSolver's columns are the independent joints). Returns three lists of
    floats, one per row.
    """
    lines, columns = _column_source(tree, effector, frames)
    terms: list[list[list[str]]] = [[[], [], []] for _ in tree.lower]  # per coordinate, row
    for joint, _, column in columns:
        for row, name in enumerate(column):
            if name != '0.0':
                terms[joint.coordinate][row].append(
                    name if joint.multiplier == 1.0 else f'{joint.multiplier!r} * {name}')
    for row in range(3):
        entries = (' + '.join(per_row[row]) or '0.0' for per_row in terms)
        lines.append(f'    row{row} = [{", ".join(entries)}]')
    return [f'def rows{index}(frames, ex, ey, ez):'] + lines + ['    return row0, row1, row2']


def _turns_source(tree: _Tree, index: int, effector: _Effector,
                  frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of turns<index>(frames, s): the tool's orientation rows times s.

    A revolute joint of the tool's path turns it about the joint's axis, the z column of
    its frame (constants folded as the sweep writes them, the rest read from `frames`); a
    slide does not; a mimic joint adds its axis, times its multiplier, to its leader's
    column. Returns three lists of floats, one per row.
    """
    terms: list[list[list[str]]] = [[[], [], []] for _ in tree.lower]  # per coordinate, row
    for j in effector.joints:
        joint = tree.joints[j]
        if joint.prismatic:
            continue
        m = joint.multiplier
        for row, i in enumerate((2, 5, 8)):
            value = frames[j][i]
            if isinstance(value, str):
                terms[joint.coordinate][row].append(
                    f'frames[{j}][{i}]' if m == 1.0 else f'{m!r} * frames[{j}][{i}]')
            elif value != 0.0:
                terms[joint.coordinate][row].append(repr(m * value))
    rows = ['[' + ', '.join(f's * ({" + ".join(per_row[row])})' if per_row[row] else '0.0'
                            for per_row in terms) + ']' for row in range(3)]
    return [f'def turns{index}(frames, s):', f'    return {", ".join(rows)}']


def _hessian_source(tree: _Tree, index: int, effector: _Effector,
                    frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of hessian<index>(frames, ex, ey, ez, px, py, pz, w): see _Tree.hessian.

    p = w (goal - effector). With the columns J_j of _column_source, per joint of the path
    u_j = w J_j - p x a_j (w a_j for a slide); the descent per coordinate sums m_j p . J_j,
    and the Hessian's entry of coordinates (c, d) sums m_j m_k J_j . u_k over the path's
    pairs k upstream of j or k = j (twice for two joints of one coordinate).
    """
    lines, columns = _column_source(tree, effector, frames)
    n = len(tree.lower)
    descent: list[list[str]] = [[] for _ in range(n)]
    entries: dict[tuple[int, int], list[str]] = {}
    for own, (joint, (ax, ay, az), column) in enumerate(columns):
        j = effector.joints[own]
        if joint.prismatic:
            u = [_product_source(a, 'w') or '0.0' for a in (ax, ay, az)]
        else:   # w J - p x a
            crossed = [_difference_source(_product_source(a, p), _product_source(b, q))
                       for a, p, b, q in ((az, 'py', ay, 'pz'), (ax, 'pz', az, 'px'),
                                          (ay, 'px', ax, 'py'))]
            u = [_difference_source(_product_source('w', c) if c != '0.0' else None,
                                    f'({t})' if t != '0.0' else None)
                 for c, t in zip(column, crossed)]
        lines.append(f'    u{j}x, u{j}y, u{j}z = {", ".join(u)}')
        m, c = joint.multiplier, joint.coordinate
        dot = [f'{p} * {name}' for p, name in zip(('px', 'py', 'pz'), column) if name != '0.0']
        if dot:
            descent[c].append(f'{m!r} * ({" + ".join(dot)})')
        for k, (upstream, _, _) in enumerate(columns[:own + 1]):
            uk = effector.joints[k]
            dot = [f'{name} * u{uk}{axis}' for name, axis in zip(column, 'xyz') if name != '0.0']
            d = upstream.coordinate
            factor = m * upstream.multiplier * (2.0 if c == d and k != own else 1.0)
            if dot:
                entries.setdefault((max(c, d), min(c, d)), []).append(
                    f'{factor!r} * ({" + ".join(dot)})')
    rows = ', '.join('[' + ', '.join(' + '.join(entries.get((c, d), ['0.0']))
                                     for d in range(c + 1)) + ']' for c in range(n))
    return [f'def hessian{index}(frames, ex, ey, ez, px, py, pz, w):'] + lines + [
        f'    return [{", ".join(" + ".join(terms) or "0.0" for terms in descent)}], [{rows}]']


_MOMENT_POINTS = 7  # a run of this many fit points or more is summed by moments (_moment_sums)
_MOMENTS = ('W', 'V0', 'V1', 'V2', 'D0', 'D1', 'D2', 'S00', 'S01', 'S02', 'S10', 'S11', 'S12',
            'S20', 'S21', 'S22')


def _fit_source(joint: int, model: _Joint, current: float | str, h: list[float | str],
                origin: list[float | str], fit: _Fit, sums: list[str] | None,
                held: dict[str, tuple[str, int]]) -> list[str]:
    """
    Return the source lines that set `fitted`, the joint's fitted angle or slide.

    h: the joint's frame at angle 0 and origin: its origin (new upstream joints), as
    _SweepWriter values; old_frames[joint]: its frame and origin in the state the points
    come from, where each point's coordinates g are rigid below the joint. Revolute: at
    angle theta a point sits at origin + H Rz(theta) g; maximising sum w (Rz g) . u over the
    points (u: the desired point in H) gives theta = atan2(sum w (gx uy - gy ux),
    sum w (gx ux + gy uy)), the closed-form least-squares rotation. Prismatic: at slide d it
    sits at origin + d a + H g (a: H's z column); the least-squares d is the weighted mean
    of a . (desired - origin) - g_z. Both sums are linear in the points: the fit's long
    runs come from their moment sums (`sums`, see _moment_sums; None without long runs),
    the short ones point by point.
    held: per local, the source and joint point it was last computed for: each point's
    old and desired positions relative to the old and new origin are locals of their own,
    and so are the moments, so co-located joints (a two- or three-axis point, sharing
    origins and fit points) compute them once.
    """
    def dot(column: tuple[float | str, ...], names: tuple[str, str, str]) -> str:
        terms = [name if value == 1.0 else f'{value!r} * {name}' if isinstance(value, float)
                 else f'{value} * {name}' for value, name in zip(column, names) if value != 0.0]
        return ' + '.join(terms) or '0.0'

    def offset(name: str, value: float | str) -> str:
        return name if value == 0.0 else f'{name} - {value!r}' if isinstance(value, float) \
            else f'{name} + {value[1:]}' if value.startswith('-') else f'{name} - {value}'

    lines = [f'    a0, a1, a2, a3, a4, a5, a6, a7, a8, ox, oy, oz = old_frames[{joint}]']
    lines += _moment_source(model, h, origin, sums, held) if sums else ['    num = den = 0.0']
    for point, weight in ((k, w) for first, stop, w in fit if stop - first < _MOMENT_POINTS
                          for k in range(first, stop)):
        scale = '' if weight == 1.0 else f'{weight!r} * '
        x, y, z = f'x{point}', f'y{point}', f'z{point}'
        dx, dy, dz = f'dx{point}', f'dy{point}', f'dz{point}'
        relative = f'{x}, {y}, {z} = {x} - ox, {y} - oy, {z} - oz'
        desired = f'{dx}, {dy}, {dz} = {", ".join(map(offset, (dx, dy, dz), origin))}'
        if held.get(x) != (relative + desired, model.point):
            held[x] = (relative + desired, model.point)
            lines += [f'    {x}, {y}, {z} = old_points[{point}]',
                      f'    {dx}, {dy}, {dz} = desired[{point}]',
                      f'    {relative}', f'    {desired}']
        if model.prismatic:
            lines += [f'    num += {scale}({dot(h[2::3], (dx, dy, dz))} '
                      f'- (a2 * {x} + a5 * {y} + a8 * {z}))',
                      f'    den += {weight!r}']
        else:
            lines += [f'    gx, gy = a0 * {x} + a3 * {y} + a6 * {z}, '
                      f'a1 * {x} + a4 * {y} + a7 * {z}',
                      f'    ux, uy = {dot(h[0::3], (dx, dy, dz))}, {dot(h[1::3], (dx, dy, dz))}',
                      f'    num += {scale}(gx * uy - gy * ux)',
                      f'    den += {scale}(gx * ux + gy * uy)']
    return lines + _fitted_lines(model, current)


def _fitted_lines(model: _Joint, current: float | str) -> list[str]:
    """
    Return the lines that turn a joint's num and den into `fitted`, its in-limit fit.

    Revolute: atan2(num, den), the turn of it nearest the current angle, else the limit
    closest in effect (_limited_angle); a weak fit means the points lie on the axis and say
    nothing: the angle stays. Written out, not called: a call per joint costs as much as the
    rest of a small joint's fit. Prismatic: see _fitted_slide.
    """
    current = current if isinstance(current, str) else repr(current)
    limits = f'{model.lower!r}, {model.upper!r}'
    if model.prismatic:
        return [f'    fitted = fitted_slide(num, den, {current}, {limits})']
    return [f'    if num * num + den * den <= {_ON_AXIS * _ON_AXIS!r}:',
            f'        fitted = {current}',
            '    else:',
            '        best = atan2(num, den)',
            f'        fitted = {current} + remainder(best - {current}, {_TWO_PI!r})',
            f'        if not {model.lower!r} <= fitted <= {model.upper!r}:',
            f'            fitted = limited_angle(best, {current}, {limits})']


def _moment_sums(fits: list[_Fit], lines: list[str]) -> dict[int, list[str]]:
    """
    Append source lines that sum the fit moments of the joints' long runs of fit points.

    A joint's fit needs, over its fit points (old position v, desired d, weight w), the sums
    W = sum w, V = sum w v, D = sum w d and S = sum w v d^T (_moment_source): then it
    costs the same for any number of points. Points are numbered depth-first, so a fit is
    a few runs of points: the sums of a run are differences of running sums over the points,
    taken once per pass, and a pass is linear in the chain's length where point by point it
    is quadratic. Returns per joint with runs of _MOMENT_POINTS points or more the source of
    their 16 sums (_MOMENTS order); shorter runs (the next point of fit 'next') are cheaper
    point by point.
    """
    long_runs = {j: runs for j, runs in enumerate(
        [run for run in fit if run[1] - run[0] >= _MOMENT_POINTS] for fit in fits) if runs}
    bounds = sorted({bound for runs in long_runs.values() for first, stop, _ in runs
                     for bound in (first, stop)})
    if not bounds:
        return {}
    running = ', '.join(f'R{part}' for part in _MOMENTS)
    lines.append(f'    {" = ".join(f"R{part}" for part in _MOMENTS)} = 0.0')
    for previous, bound in zip(bounds, bounds[1:]):
        lines += [f'    for (x, y, z), (dx, dy, dz) in zip(old_points[{previous}:{bound}], '
                  f'desired[{previous}:{bound}]):',
                  '        RW += 1.0',
                  '        RV0 += x; RV1 += y; RV2 += z; RD0 += dx; RD1 += dy; RD2 += dz',
                  '        RS00 += x * dx; RS01 += x * dy; RS02 += x * dz',
                  '        RS10 += y * dx; RS11 += y * dy; RS12 += y * dz',
                  '        RS20 += z * dx; RS21 += z * dy; RS22 += z * dz',
                  f'    {", ".join(f"B{bound}{part}" for part in _MOMENTS)} = {running}']
    lines.append(f'    {", ".join(f"B{bounds[0]}{part}" for part in _MOMENTS)} = '
                 f'{", ".join(["0.0"] * len(_MOMENTS))}')
    return {j: [' + '.join(f'{"" if w == 1.0 else f"{w!r} * "}(B{stop}{part} - B{first}{part})'
                           for first, stop, w in runs) for part in _MOMENTS]
            for j, runs in long_runs.items()}


def _moment_source(model: _Joint, h: list[float | str], origin: list[float | str],
                   sums: list[str], held: dict[str, tuple[str, int]]) -> list[str]:
    """
    Return the source lines that set num and den from the joint's moment sums.

    The sums of _fit_source, summed once: with o the joint's old origin and p its new one,
    M = sum w (v - o)(d - p)^T = S - o (D - W p)^T - V p^T; revolute: num = kx M hy -
    ky M hx, den = kx M hx + ky M hy (k, h: its old and new frame's columns; only the
    columns of M that h's x and y columns use are computed); prismatic:
    num = a . (D - W p) - kz . (V - W o), den = W. held: see _fit_source.
    """
    v, d, s = sums[1:4], sums[4:7], sums[7:]
    p = [value if isinstance(value, str) else repr(value) for value in origin]
    lines: list[str] = []

    def let(name: str, source: str) -> None:
        """Emit `name = source` unless the local already holds it (for this point)."""
        if held.get(name) != (source, model.point):
            held[name] = (source, model.point)
            lines.append(f'    {name} = {source}')

    let('w', f'({sums[0]})')
    if model.prismatic:
        for c in range(3):
            let(f'e{c}', f'{d[c]} - w * ({p[c]})')
        a = [value if isinstance(value, str) else repr(value) for value in h[2::3]]
        return lines + [
            f'    num = ({a[0]}) * e0 + ({a[1]}) * e1 + ({a[2]}) * e2 - ('
            f'a2 * ({v[0]} - w * ox) + a5 * ({v[1]} - w * oy) + a8 * ({v[2]} - w * oz))',
            '    den = w']
    for c in range(3):
        if h[3 * c] != 0.0 or h[3 * c + 1] != 0.0:
            let(f'e{c}', f'{d[c]} - w * ({p[c]})')
            for r, o in enumerate(('ox', 'oy', 'oz')):
                let(f'm{r}{c}', f'{s[3 * r + c]} - {o} * e{c} - ({v[r]}) * ({p[c]})')

    def times_m(column: list[float | str], row: int) -> str:
        terms = [f'm{row}{c}' if value == 1.0 else f'{value!r} * m{row}{c}'
                 if isinstance(value, float) else f'({value}) * m{row}{c}'
                 for c, value in enumerate(column) if value != 0.0]
        return ' + '.join(terms) or '0.0'

    return lines + [
        f'    t0, t1, t2 = {", ".join(times_m(h[0::3], r) for r in range(3))}',
        f'    u0, u1, u2 = {", ".join(times_m(h[1::3], r) for r in range(3))}',
        '    num = a0 * u0 + a3 * u1 + a6 * u2 - (a1 * t0 + a4 * t1 + a7 * t2)',
        '    den = a0 * t0 + a3 * t1 + a6 * t2 + a1 * u0 + a4 * u1 + a7 * u2']


def _fitted_slide(total: float, weights: float, current: float, lower: float, upper: float
                  ) -> float:
    """Return the in-limit slide total / weights of a fit (metres), or `current` if none."""
    if weights == 0.0:
        return current
    return min(max(total / weights, lower), upper)


def _limited_angle(best: float, current: float, lower: float, upper: float) -> float:
    """
    Return the angle in [lower, upper] closest in effect to `best` (radians).

    Of the turns best + 2 pi k inside the limits, take the one nearest `current` (no
    needless full turns, for continuous joints too); when none is inside, take the limit
    angularly closer to best: the fit's objective is a cosine around best.
    """
    angle = current + math.remainder(best - current, _TWO_PI)
    if angle < lower:
        angle += _TWO_PI * math.ceil((lower - angle) / _TWO_PI)
    elif angle > upper:
        angle -= _TWO_PI * math.ceil((angle - upper) / _TWO_PI)
    if lower <= angle <= upper:
        return angle
    return lower if math.cos(lower - best) >= math.cos(upper - best) else upper


def _damped_least_squares(rows: list[list[float]], residual: list[float],
                          damping: float) -> list[float]:
    """
    Return dx = J^T (J J^T + damping I)^-1 r for a short wide J given by its rows.

    damping > 0 keeps the system positive definite at singular poses (stretched arms).
    Small systems (one effector, with its orientation, or two; up to _COMPILED_PRODUCTS)
    are solved by straight-line code on plain floats (_compiled_damped_solve), 1.2-3x
    faster than numpy at these sizes; larger ones, and any that rounding leaves not
    positive definite, by numpy.
    """
    size, width = len(rows), len(rows[0])
    if size * (size + 1) // 2 * width <= _COMPILED_PRODUCTS:
        try:
            return _compiled_damped_solve(size, width)(rows, residual, damping)
        except _NOT_POSITIVE_DEFINITE:
            pass
    jacobian = np.array(rows)
    system = jacobian @ jacobian.T
    system.flat[::len(rows) + 1] += damping
    return (np.linalg.solve(system, residual) @ jacobian).tolist()


# What a straight-line Cholesky raises on a matrix that is not positive definite, and numpy's.
_NOT_POSITIVE_DEFINITE = (ValueError, ZeroDivisionError, np.linalg.LinAlgError)


def _cholesky_source(size: int) -> list[str]:
    """
    Return straight-line source that solves A y = r for a symmetric positive definite A.

    Reads the locals aI_K (A's lower triangle, I >= K) and rI; writes yI, through the
    Cholesky factor lI_K, its pivots dI, their reciprocals vI and zI (L z = r). A pivot
    that is not positive (A is not positive definite in floating point) raises ValueError
    or ZeroDivisionError (_NOT_POSITIVE_DEFINITE).
    """
    def less(first: str, products: list[tuple[str, str]]) -> str:
        """Return the source of first - a * b - ... over the products (a, b)."""
        return ' - '.join([first] + [f'{a} * {b}' for a, b in products])

    n = range(size)
    lines = []
    for k in n:
        diagonal = less(f'a{k}_{k}', [(f'l{k}_{c}', f'l{k}_{c}') for c in range(k)])
        lines += [f'    d{k} = sqrt({diagonal})', f'    v{k} = 1.0 / d{k}']
        for i in range(k + 1, size):
            below = less(f'a{i}_{k}', [(f'l{i}_{c}', f'l{k}_{c}') for c in range(k)])
            lines.append(f'    l{i}_{k} = ({below}) * v{k}')
    for i in n:
        forward = less(f'r{i}', [(f'l{i}_{c}', f'z{c}') for c in range(i)])
        lines.append(f'    z{i} = ({forward}) * v{i}')
    for i in reversed(n):
        back = less(f'z{i}', [(f'l{c}_{i}', f'y{c}') for c in range(i + 1, size)])
        lines.append(f'    y{i} = ({back}) * v{i}')
    return lines


def _compiled(name: str, lines: list[str], label: str) -> Callable:
    """Return the function `name` that the source lines define (math's sqrt in scope)."""
    namespace = {'sqrt': math.sqrt}
    exec(compile('\n'.join(lines), f'<fabrik_ros {label}>', 'exec'), namespace)
    return namespace[name]


@functools.cache
def _compiled_damped_solve(rows: int, columns: int
                           ) -> Callable[[list[list[float]], list[float], float], list[float]]:
    """
    Return solve(J rows, r, damping) -> J^T y with (J J^T + damping I) y = r, for one shape.

    Straight-line code: the Gram matrix's lower triangle (aI_K), then _cholesky_source.
    """
    n, m = range(rows), range(columns)
    lines = ['def solve(rows, residual, damping):']
    lines += [f'    {", ".join(f"j{i}_{c}" for c in m)}, = rows[{i}]' for i in n]
    lines.append(f'    {", ".join(f"r{i}" for i in n)}, = residual')
    for i in n:
        for k in range(i + 1):
            gram = ' + '.join(f'j{i}_{c} * j{k}_{c}' for c in m)
            lines.append(f'    a{i}_{k} = {gram}' + (' + damping' if i == k else ''))
    lines += _cholesky_source(rows)
    step = ', '.join(' + '.join(f'j{i}_{c} * y{i}' for i in n) for c in m)
    lines.append(f'    return [{step}]')
    return _compiled('solve', lines, f'damped solve, {rows}x{columns}')


def _shifted_solve(lower: list[list[float]], residual: list[float], shift: float
                   ) -> list[float]:
    """
    Return y with (A + shift I) y = r; A by its lower triangle's rows (row I: I + 1 entries).

    A + shift I must be positive definite, else _NOT_POSITIVE_DEFINITE is raised. Systems
    whose factorisation takes at most _COMPILED_PRODUCTS products run as straight-line
    code (_compiled_shifted_solve), larger ones with numpy (faster from about 15 unknowns).
    """
    size = len(lower)
    if size * (size + 1) * (size + 2) // 6 <= _COMPILED_PRODUCTS:
        return _compiled_shifted_solve(size)(lower, residual, shift)
    system = np.zeros((size, size))
    for row, entries in enumerate(lower):
        system[row, :row + 1] = entries
    system += np.tril(system, -1).T
    system.flat[::size + 1] += shift
    factor = np.linalg.cholesky(system)
    return np.linalg.solve(factor.T, np.linalg.solve(factor, residual)).tolist()


@functools.cache
def _compiled_shifted_solve(size: int
                            ) -> Callable[[list[list[float]], list[float], float], list[float]]:
    """
    Return solve(lower, r, shift) -> y with (A + shift I) y = r, for one size of A.

    lower: A's lower triangle by rows (row I has I + 1 entries); A + shift I must be
    positive definite (else _NOT_POSITIVE_DEFINITE is raised). Straight-line code, see
    _cholesky_source.
    """
    n = range(size)
    lines = ['def solve(lower, residual, shift):']
    lines += [f'    {", ".join(f"a{i}_{k}" for k in range(i + 1))}, = lower[{i}]' for i in n]
    lines += [f'    a{i}_{i} += shift' for i in n]
    lines.append(f'    {", ".join(f"r{i}" for i in n)}, = residual')
    lines += _cholesky_source(size)
    lines.append(f'    return [{", ".join(f"y{i}" for i in n)}]')
    return _compiled('solve', lines, f'shifted solve, {size}x{size}')


def _product(a: Sequence[float], b: Sequence[float]) -> tuple[float, ...]:
    """Return the product of two row-major 3x3 rotations (9-tuples)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7,
            a0 * b2 + a1 * b5 + a2 * b8, a3 * b0 + a4 * b3 + a5 * b6,
            a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8,
            a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7,
            a6 * b2 + a7 * b5 + a8 * b8)


def _transposed(m: Sequence[float]) -> tuple[float, ...]:
    """Return the transpose (the inverse) of a row-major 3x3 rotation; reads 9 entries."""
    return m[0], m[3], m[6], m[1], m[4], m[7], m[2], m[5], m[8]


def _turn(target: Sequence[float], reached: Sequence[float]) -> tuple[float, ...]:
    """
    Return target @ reached^T: the rotation (row-major 9-tuple) turning reached onto target.

    Only the first nine entries of `reached` are read: a state's frame serves as it is.
    """
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = target
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = reached[:9]
    return (a0 * b0 + a1 * b1 + a2 * b2, a0 * b3 + a1 * b4 + a2 * b5,
            a0 * b6 + a1 * b7 + a2 * b8, a3 * b0 + a4 * b1 + a5 * b2,
            a3 * b3 + a4 * b4 + a5 * b5, a3 * b6 + a4 * b7 + a5 * b8,
            a6 * b0 + a7 * b1 + a8 * b2, a6 * b3 + a7 * b4 + a8 * b5,
            a6 * b6 + a7 * b7 + a8 * b8)


def _apply(r: Sequence[float], v: Sequence[float]) -> tuple[float, float, float]:
    """Return the row-major 3x3 rotation r applied to the 3-vector v."""
    x, y, z = v
    return (r[0] * x + r[1] * y + r[2] * z, r[3] * x + r[4] * y + r[5] * z,
            r[6] * x + r[7] * y + r[8] * z)


def _rotation_error(reached: Sequence[float], target: Sequence[float]
                    ) -> tuple[float, tuple[float, float, float]]:
    """Return the angle (radians) and rotation vector (base frame) turning reached onto target."""
    return _rotation_vector(_turn(target, reached))


def _rotation_vector(m: Sequence[float]) -> tuple[float, tuple[float, float, float]]:
    """
    Return the angle (radians) and rotation vector of a rotation (row-major 9-tuple).

    The vector is the log of m, whose sine part gives the axis away from a half turn; at a
    half turn the axis comes from m + I.
    """
    vx, vy, vz = m[7] - m[5], m[2] - m[6], m[3] - m[1]
    sine = math.sqrt(vx * vx + vy * vy + vz * vz)     # 2 sin(angle)
    angle = math.atan2(sine, m[0] + m[4] + m[8] - 1.0)
    if sine > 1e-6:
        return angle, (vx * angle / sine, vy * angle / sine, vz * angle / sine)
    if angle < 1.0:
        return angle, (vx / 2.0, vy / 2.0, vz / 2.0)
    columns = [(m[0] + 1.0, m[3], m[6]), (m[1], m[4] + 1.0, m[7]), (m[2], m[5], m[8] + 1.0)]
    ux, uy, uz = max(columns, key=lambda c: c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
    norm = math.sqrt(ux * ux + uy * uy + uz * uz)
    return angle, (ux * angle / norm, uy * angle / norm, uz * angle / norm)


def _axis_error(reached: Sequence[float], target: Sequence[float]
                ) -> tuple[float, tuple[float, float, float]]:
    """
    Return the angle (radians) between two unit axes and the rotation vector between them.

    The vector turns the first axis onto the second the shortest way: perpendicular to both
    (at a half turn, any axis perpendicular to the first).
    """
    ax, ay, az = reached
    bx, by, bz = target
    vx, vy, vz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    sine = math.sqrt(vx * vx + vy * vy + vz * vz)
    angle = math.atan2(sine, ax * bx + ay * by + az * bz)
    if sine <= 1e-12:
        if angle < 1.0:
            return angle, (0.0, 0.0, 0.0)
        # Half turn: about any axis perpendicular to `reached`.
        vx, vy, vz = (0.0, -az, ay) if abs(ax) < 0.9 else (az, 0.0, -ax)
        sine = math.sqrt(vx * vx + vy * vy + vz * vz)
    return angle, (vx * angle / sine, vy * angle / sine, vz * angle / sine)


def quaternion_rotation(quaternion: object, what: str = 'orientation') -> tuple[float, ...]:
    """
    Return the row-major 3x3 rotation (9-tuple) of a quaternion (x, y, z, w), ROS order.

    A non-unit quaternion is normalised; a zero, non-finite or wrongly shaped one raises
    ValueError naming `what`.
    """
    values = np.asarray(quaternion, dtype=float).tolist()
    if not isinstance(values, list) or len(values) != 4 or isinstance(values[0], list):
        raise ValueError(f'{what} has shape {np.shape(quaternion)}, expected a quaternion '
                         '(x, y, z, w)')
    return _unit_rotation(values, what)


def _unit_rotation(values: list[float], what: str) -> tuple[float, ...]:
    """Return the rotation (9-tuple) of four floats (x, y, z, w), normalised; ValueError."""
    x, y, z, w = values
    norm = math.hypot(x, y, z, w)   # NaN or inf with any entry that is
    if not math.isfinite(norm):
        raise ValueError(f'{what} is not finite: {values}')
    if norm < 1e-9:
        raise ValueError(f'{what} is a zero quaternion: {values}')
    return rotation_tuple((x / norm, y / norm, z / norm, w / norm))


class _Orientations:
    """
    The orientation targets of one solve, in the solver's units.

    An orientation error of angle a counts as a distance of `scale` * a metres (scale =
    tolerance / orientation_tolerance), so one objective, the sum of squares, weighs both,
    and an error within the position tolerance means within both tolerances. Per targeted
    effector: its index, mode ('full' or 'axis'), target rotation (9-tuple, base frame),
    tool axis (tool frame), target axis (base frame; None for 'full', which compares whole
    frames) and aim: what its parent joint's frame F is compared with, the target rotation
    times the tool's inverse ('full': the turn onto the target is aim @ F^T) or the tool
    axis in F ('axis': the reached axis is F @ aim).
    """

    def __init__(self, tree: _Tree, rotations: list[tuple[float, ...] | None],
                 modes: Sequence[str], axes: Sequence[tuple[float, float, float]],
                 scale: float) -> None:
        self.tree = tree
        self.scale = scale
        self.items = []
        for index, rotation in enumerate(rotations):
            mode = modes[index]
            if rotation is None or mode == 'position':
                continue
            axis, tool = axes[index], tree.effectors[index].tool
            self.items.append((index, mode, rotation, axis, None, _turn(rotation, tool))
                              if mode == 'full' else
                              (index, mode, rotation, axis, _apply(rotation, axis),
                               _apply(tool, axis)))
        self._measured: _State | None = None
        self._found: list = []
        self.goals: list[tuple[float, float, float]] = []  # per marker, see marker_goals()

    def errors(self, state: _State) -> list[tuple[float, tuple[float, float, float],
                                                  tuple[float, ...]]]:
        """
        Return per targeted effector (angle, rotation vector, what was compared).

        What was compared: the turn onto the target (9-tuple, 'full') or the reached tool
        axis ('axis'), base frame.
        """
        if state is self._measured:
            return self._found
        found = []
        effectors, frames = self.tree.effectors, state.frames
        for index, mode, _, _, target_axis, aim in self.items:
            frame = frames[effectors[index].parent]
            if mode == 'full':
                turn = _turn(aim, frame)
                found.append((*_rotation_vector(turn), turn))
            else:
                reached = _apply(frame, aim)
                found.append((*_axis_error(reached, target_axis), reached))
        self._measured, self._found = state, found     # measured, then stepped from
        return found

    def squares(self, state: _State) -> list[float]:
        """Return the squared orientation errors, as metres^2 (see the class docstring)."""
        # (scale * angle) squared by a product, as _one_effector_fit squares it: ** 2 (C's
        # pow) may round differently, and the tracking path must answer the full solve's
        # answer to the bit.
        scale = self.scale
        return [scale * angle * (scale * angle) for angle, _, _ in self.errors(state)]

    def marker_goals(self, goals: list[tuple[float, float, float]]
                     ) -> list[tuple[float, float, float]]:
        """Return where the tools' marker points go: the target frames' points (metres)."""
        tree = self.tree
        found: list[tuple[float, float, float] | None] = [None] * (len(tree.effectors)
                                                                   - tree.tools)
        for index, _, rotation, _, _, _ in self.items:
            gx, gy, gz = goals[index]
            for marker, local in zip(tree.markers[index], tree.marker_points[index]):
                dx, dy, dz = _apply(rotation, local)
                found[marker - tree.tools] = (gx + dx, gy + dy, gz + dz)
        return found

    def placed(self, state: _State, goals: list[tuple[float, float, float]]
               ) -> dict[int, tuple[float, float, float]]:
        """
        Return where the tools' rigid bodies put their parent joints' points (FABRIK pass 1).

        The tool and the point of the joint it hangs from are one rigid body: with the tool
        on its target frame, that point goes where the body takes it ('full'), or, with the
        roll about the tool axis free ('axis'), to the nearest such place.
        """
        tree = self.tree
        placed = {}
        for (index, mode, _, _, target_axis, _), (_, _, compared) in zip(
                self.items, self.errors(state)):
            effector = tree.effectors[index]
            if effector.parent < 0:
                continue
            point = tree.joints[effector.parent].point
            if point in tree.root_rigid:
                continue
            px, py, pz = state.points[point]
            tx, ty, tz = state.points[effector.point]
            gx, gy, gz = goals[index]
            rel = (px - tx, py - ty, pz - tz)
            if mode == 'full':     # compared: the turn onto the target frame
                dx, dy, dz = _apply(compared, rel)
                placed[point] = (gx + dx, gy + dy, gz + dz)
                continue
            ax, ay, az = compared   # the reached tool axis
            height = rel[0] * ax + rel[1] * ay + rel[2] * az
            radial = math.sqrt(max(sum(v * v for v in rel) - height * height, 0.0))
            bx, by, bz = target_axis
            wx, wy, wz = px - gx, py - gy, pz - gz
            along = wx * bx + wy * by + wz * bz
            wx, wy, wz = wx - along * bx, wy - along * by, wz - along * bz
            norm = math.sqrt(wx * wx + wy * wy + wz * wz)
            scale = radial / norm if norm > 1e-12 else 0.0
            placed[point] = (gx + height * bx + scale * wx, gy + height * by + scale * wy,
                             gz + height * bz + scale * wz)
        return placed

    def extend(self, state: _State, rows: list[list[float]], residual: list[float]) -> None:
        """
        Append the orientation rows of the Jacobian and the residual, scaled to metres.

        A joint turns the tool about its own axis: the rows are that axis times scale, for
        the joints that move the tool; with a free roll ('axis') the part along the tool axis
        changes nothing and is taken out. The residual is the rotation vector times scale.
        """
        width = len(rows[0])
        scale = self.scale
        frames = state.frames
        tree = self.tree
        turning = tree.turning
        found = self.errors(state)
        for (index, mode, *_), (_, (vx, vy, vz), compared) in zip(self.items, found):
            if mode == 'full':
                rx, ry, rz = tree.turns[index](frames, scale)
                if width > len(rx):     # a free root's columns: translating turns nothing
                    rx, ry, rz = (row + [0.0] * (width - len(row)) for row in (rx, ry, rz))
            else:   # the part along the reached tool axis changes nothing: taken out
                rx, ry, rz = [0.0] * width, [0.0] * width, [0.0] * width
                ax, ay, az = compared
                for j, c, m in turning[index]:
                    frame = frames[j]
                    ux, uy, uz = frame[2], frame[5], frame[8]
                    along = ux * ax + uy * ay + uz * az
                    m *= scale
                    rx[c] += m * (ux - along * ax)
                    ry[c] += m * (uy - along * ay)
                    rz[c] += m * (uz - along * az)
            rows += [rx, ry, rz]
            residual += [scale * vx, scale * vy, scale * vz]


def _clamped(q: list[float], step: list[float], lower: list[float], upper: list[float]
             ) -> tuple[list[float], list[int]]:
    """Return q + step clamped into [lower, upper] (radians), and the joints clamped."""
    moved = list(map(add, q, step))
    if all(map(le, lower, moved)) and all(map(le, moved, upper)):
        return moved, []
    held = [j for j, (a, lo, hi) in enumerate(zip(moved, lower, upper)) if a < lo or a > hi]
    for j in held:
        moved[j] = lower[j] if moved[j] < lower[j] else upper[j]
    return moved, held


def _weighted_step(rows: list[list[float]], residual: list[float],
                   weights: list[tuple[int, float]], damping: float) -> list[float]:
    """
    Return the damped least-squares step with column weights: W J^T (J W^2 J^T + d)^-1 r.

    weights: (column, weight) for the columns whose weight is not 1 (few: joints near a
    limit), so the rest of W costs nothing.
    """
    if not weights:
        return _damped_least_squares(rows, residual, damping)
    scaled = [row[:] for row in rows]
    for j, weight in weights:
        for row in scaled:
            row[j] *= weight
    step = _damped_least_squares(scaled, residual, damping)
    for j, weight in weights:
        step[j] *= weight
    return step


def _pushed(rows: list[list[float]], residual: list[float], push: list[tuple[int, float]]
            ) -> list[float]:
    """Return what a step must achieve besides the push (column, change): r - J push."""
    return [r - sum(row[j] * change for j, change in push) for row, r in zip(rows, residual)]


class IkSolver:
    """
    FABRIK inverse kinematics for a Chain: one or several effectors, pinned or free root.

    tolerance: metres; a solve stops when every effector with a target (or a held pose) is
    this close. max_iterations: FABRIK iterations plus closing steps of the whole solve,
    all attempts together. timeout: seconds, the solve's time budget (like MoveIt's
    kinematics_solver_timeout), None for none; when it runs out the best pose found is
    returned (result.timed_out). clock: the time source in seconds (time.perf_counter;
    tests pass their own).
    root: 'pinned' (the base stays) or 'free' (the base slides toward the targets like the
    end of a rope; result.base_position says where it went).
    fit: which downstream points a joint's angle brings onto the FABRIK points for a
    reachable target: 'chain' (the whole downstream chain) or 'next' (the next points, the
    classic forward pass, the tips below breaking ties). The default, 'auto', is 'next'
    where every joint point turns about two or more axes (universal or ball joints,
    FABRIK's own model: each point can take the next one's FABRIK position, and the classic
    pass needs fewer iterations) and 'chain' otherwise (hinges and arms, whose points
    cannot: the whole chain is the better compromise). Out of reach, FABRIK lays the chain
    on the straight line to the target; joints fit the next points on it, every farther
    point breaking ties, except in the first attempt of a single chain fitted 'chain'
    toward a position target, which keeps the whole-chain fit (see solve).
    fabrik_gain, closing_radius: FABRIK iterates while each iteration cuts the error below
    fabrik_gain times the previous one and the error exceeds closing_radius (metres,
    default 10 % of the reach); then damped least-squares steps close the rest, quadratic
    where FABRIK is linear. A seed already within closing_radius goes straight to them.
    max_restarts: attempts from other seeds when a solve stalls short of a target that may
    be reachable. unreachable_after: restarts that end at the best pose's residual
    (within 0.1 % of the reach, at least one tolerance) without a closer one in between,
    after which the target counts as unreachable (a hole behind the joint limits) and the
    solve ends; None runs all max_restarts. The default, 'auto', is 2 for a chain with
    more joints than three per effector (position leaves it redundant: wide basins, so
    agreeing seeds tell), times the effectors of the largest group sharing joints (4 for
    two arms on one torso), and None otherwise (isolated solutions in small basins). For
    one effector's position on a pinned root the first restart starts from the pose of a
    workspace map whose effector lies nearest the target (1024 random poses, mapped on the
    first such restart: a few milliseconds, which can take that one solve past its time
    budget); unless unreachable_after is None, that restart ending back at the best
    residual settles the target as unreachable on its own. Unless None, a position solve
    on a pinned root also stops restarting when its best pose is
    about as close as any pose can be: the target lies farther from the effector's anchor
    than the effector ever gets by more than 1 % of the reach (that distance is found on
    the first such solve: a few milliseconds, which can take that one solve past its time
    budget).
    restart_error: metres (default 10 tolerances, at most 0.1 % of the reach, at least one
    tolerance); when tracking (the seed's effectors start within
    closing_radius of their targets) only a solve that stalls farther than this restarts;
    closer, the seed's branch is kept: a miss that small is a target a joint limit keeps
    just out of reach, not a wrong branch, and a restart would jump to another branch (a
    flip) for a fraction of it.
    effector_weights: effector name -> weight > 0. The solver minimises sum w_i d_i^2 over
    the effectors with a target or holding (d_i metres from its goal): where targets
    conflict over shared joints (a torso), the weights set the compromise. Defaults: 1 for
    an effector with a target, 100 for one holding its pose, so held effectors hold.
    Effectors that share no joint with an unreachable one reach their targets whatever
    the weights.

    Orientation targets (solve(..., orientation=...)): orientation_tolerance, radians, is
    how close the tool frame must come. orientation_mode says which of its freedoms the
    target fixes, one for every effector or a mapping effector name -> mode: 'full' (the
    whole frame), 'axis' (the tool axis points along the target's, the roll about it is
    free: drills, cameras, 5-DOF arms) or 'position' (the orientation is reported, not
    sought). tool_axis: that axis in the tool frame (a 3-vector, or a mapping per effector),
    default z. Inside, an orientation error of a radians weighs as much as
    orientation_scale * a metres of position error, orientation_scale = tolerance /
    orientation_tolerance (0.1 m by default): both tolerances weigh the same. An
    orientation solve treats the effectors as one group, and with unreachable_after
    'auto' it tries every restart seed (an oriented tool has little redundancy).
    A serial arm whose last three joints turn about axes through one point (a spherical
    wrist, like most industrial six-joint arms: fabrik_ros.wrist) splits a full pose in two:
    the joints above the wrist bring its centre where the target pose puts it (a position
    solve: FABRIK and closing steps), then the wrist turns the tool onto the target
    orientation in closed form (exact, the solution nearest the seed; in 'axis' mode, where
    the centre lies on the tool axis, it points that axis, the last wrist joint at its seed
    angle), unless the seed is within closing_radius (tracking keeps to closing steps, which
    move it on continuously). Where the wrist's limits allow neither solution on the arm's
    branches tried, or the centre is missed, the whole arm's solve takes over from the seed
    with the iterations left. An arm of the UR family (three parallel joints, an offset
    wrist) takes cold full poses in closed form, the solution nearest the seed of its eight.
    """

    def __init__(self, chain: Chain, tolerance: float = 1e-4, max_iterations: int = 100,
                 root: str = 'pinned', *, fit: str = 'auto', fabrik_gain: float = 0.8,
                 closing_radius: float | None = None, max_restarts: int = 24,
                 restart_error: float | None = None,
                 unreachable_after: int | None | str = 'auto',
                 timeout: float | None = None, clock: Callable[[], float] = time.perf_counter,
                 effector_weights: Mapping[str, float] | None = None,
                 orientation_tolerance: float = 1e-3,
                 orientation_mode: str | Mapping[str, str] = 'full',
                 tool_axis: object = (0.0, 0.0, 1.0)) -> None:
        if not (math.isfinite(tolerance) and tolerance > 0.0):
            raise ValueError(f'tolerance must be a positive number of metres, got {tolerance}')
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) \
                or max_iterations < 1:
            raise ValueError(f'max_iterations must be a positive integer, got {max_iterations!r}')
        if root not in ROOT_MODES:
            raise ValueError(f'root must be one of {ROOT_MODES}, got {root!r}')
        if fit not in FIT_MODES:
            raise ValueError(f'fit must be one of {FIT_MODES}, got {fit!r}')
        if not 0.0 < fabrik_gain < 1.0:
            raise ValueError(f'fabrik_gain must be in (0, 1), got {fabrik_gain}')
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) \
                or max_restarts < 0:
            raise ValueError(f'max_restarts must be an integer >= 0, got {max_restarts!r}')
        if not (math.isfinite(orientation_tolerance) and orientation_tolerance > 0.0):
            raise ValueError('orientation_tolerance must be a positive number of radians, got '
                             f'{orientation_tolerance}')
        self._unreachable_auto = unreachable_after == 'auto'
        if unreachable_after == 'auto':
            # Position leaves a redundant chain a manifold of solutions with wide basins,
            # so seeds that agree are telling; a chain with no more joints than its targets
            # have coordinates has isolated solutions in small basins: try every seed.
            # Effectors whose branches share joints (two arms on a torso) multiply the
            # basins: as many confirmations for each effector of the largest such group.
            redundant = chain.dof > 3 * len(chain.effectors)
            sharing = max(len(group.effectors)
                          for group in _independent_groups(chain.moves_effector))
            unreachable_after = _UNREACHABLE_AFTER * sharing if redundant else None
        if unreachable_after is not None and (
                isinstance(unreachable_after, bool) or not isinstance(unreachable_after, int)
                or unreachable_after < 1):
            raise ValueError(f"unreachable_after must be an integer >= 1, None or 'auto', "
                             f'got {unreachable_after!r}')
        self.unreachable_after = unreachable_after
        self.timeout = _checked_timeout(timeout)
        self.clock = clock
        self.chain = chain
        self.tolerance = float(tolerance)
        self.orientation_tolerance = float(orientation_tolerance)
        self.orientation_scale = self.tolerance / self.orientation_tolerance
        self._effector_index = {name: i for i, name in enumerate(chain.effector_names)}
        self.orientation_modes = tuple(self._per_effector(
            orientation_mode, 'orientation_mode', _orientation_mode, 'full'))
        self.tool_axes = self._per_effector(tool_axis, 'tool_axis', _unit_axis,
                                            (0.0, 0.0, 1.0))
        self._pose_trees: dict[tuple[str, ...], tuple[_Tree, list]] = {}
        self.max_iterations = max_iterations
        self.root = root
        self.fabrik_gain = float(fabrik_gain)
        self._tree = _Tree(chain)
        if fit == 'auto':
            fit = 'next' if self._tree.ball_joints else 'chain'
        self.fit = fit
        self._fits = self._tree.whole_fit if fit == 'chain' else self._tree.next_fit
        reach = max(effector.reach for effector in self._tree.effectors)
        self.reach = reach
        if closing_radius is None:
            closing_radius = 0.1 * reach
        if not closing_radius >= 0.0:   # inf allowed: the closing step alone
            raise ValueError(f'closing_radius must be >= 0 metres, got {closing_radius}')
        self.closing_radius = float(closing_radius)
        # A Newton step from e metres away misses by about e^2 / reach (the curvature of the
        # kinematics): from farther than this one step rarely reaches the tolerance, so
        # _track leaves such seeds to the full solve rather than take a step twice.
        self._track_radius = min(self.closing_radius, math.sqrt(self.tolerance * reach))
        # With a pinned root, effectors that share no joint are independent sub-problems;
        # a free root moves them all.
        everything = _Group(tuple(range(len(chain.effectors))), tuple(range(chain.dof)))
        self._groups = (_independent_groups(chain.moves_effector) if root == 'pinned'
                        else (everything,))
        self._everything = (everything,)
        self.effector_weights = self._weights(effector_weights or {})
        # One effector, pinned, at weight 1: a seed already close takes the lean path (_track)
        # (position only: unless joints that do not move it make a group of their own).
        self._trackable = root == 'pinned' and len(chain.effectors) == 1 and \
            self.effector_weights.get(chain.effector_names[0], 1.0) == 1.0
        self._trackable_position = self._trackable and self._groups == self._everything
        self._lower = chain.lower.tolist()
        self._upper = chain.upper.tolist()
        # Inside these a joint is not near a limit (closing steps: _LIMIT_MARGIN, a narrow
        # joint's share of its range).
        self._margins = [min(_LIMIT_MARGIN, _LIMIT_MARGIN_SHARE * (hi - lo))
                         for lo, hi in zip(self._lower, self._upper)]
        self._inner_lower = [lo + margin for lo, margin in zip(self._lower, self._margins)]
        self._inner_upper = [hi - margin for hi, margin in zip(self._upper, self._margins)]
        self._last = (self._tree, self._tree.neutral)  # the last answer's state (see _start)
        rng = np.random.default_rng(_RESTART_SEED)
        n = chain.dof
        # Seeds span each joint's range, at most one turn of it (continuous: -pi to pi).
        low = np.where(np.isfinite(chain.lower), chain.lower,
                       np.minimum(chain.upper - _TWO_PI, -math.pi))
        high = np.minimum(chain.upper, low + _TWO_PI)
        self.max_restarts = max_restarts
        if restart_error is None:
            restart_error = max(self.tolerance, min(_RESTART_ERROR * self.tolerance,
                                                    _RESTART_ERROR_REACH * reach))
        if not restart_error >= self.tolerance:
            raise ValueError(f'restart_error must be >= tolerance ({self.tolerance} m), got '
                             f'{restart_error}')
        self.restart_error = float(restart_error)
        # Random poses; every other one has each joint at a limit with probability 2/3:
        # targets whose solution has several joints at their limits sit in small basins.
        self._seed_box = (low, np.maximum(low, high))
        seeds = rng.uniform(*self._seed_box, size=(max(max_restarts - 1, 0), n))
        corners = rng.choice(3, size=seeds.shape)
        seeds[1::2] = np.where(corners == 0, low, np.where(corners == 1, high, seeds))[1::2]
        self._restart_seeds = seeds.tolist()
        self._farthest_found: list[float | None] = [None] * len(self._tree.effectors)
        self._workspace_map: tuple[list[list[float]], np.ndarray, np.ndarray] | None = None
        self._split = _Split.of(self, max_restarts) \
            if self._trackable and self.orientation_modes != ('position',) else None

    # ------------------------------------------------------------------ input

    def _weights(self, weights: Mapping[str, float]) -> dict[str, float]:
        """Return the given effector weights, checked; ValueError names a bad one."""
        checked = {}
        for name, weight in weights.items():
            if name not in self._effector_index:
                raise ValueError(f'effector_weights: unknown effector {name!r}; the chain '
                                 f'has {self.chain.effector_names}')
            if isinstance(weight, bool) or not (isinstance(weight, (int, float))
                                                and math.isfinite(weight) and weight > 0.0):
                raise ValueError(f'effector_weights: the weight of {name!r} must be a '
                                 f'positive number, got {weight!r}')
            checked[name] = float(weight)
        return checked

    def _per_effector(self, value: object, what: str, check, default: object) -> list:
        """
        Return one checked value per effector from a value for all or a name mapping.

        Effectors a mapping leaves out get `default`.
        """
        names = self.chain.effector_names
        if not isinstance(value, Mapping):
            return [check(value, what)] * len(names)
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f'{what}: unknown effectors {sorted(unknown)}; the chain has '
                             f'{names}')
        return [check(value[name] if name in value else default, f'{what} of {name!r}')
                for name in names]

    def _orientations(self, orientation: object,
                      targets: list[tuple[float, float, float] | None]
                      ) -> list[tuple[float, ...] | None]:
        """Return per effector its target rotation (9-tuple) or None; ValueError if bad."""
        m = len(targets)
        names = self.chain.effector_names
        rotations: list[tuple[float, ...] | None] = [None] * m
        if _is_mapping(orientation):
            for name, value in orientation.items():
                if name not in self._effector_index:
                    raise ValueError(f'unknown effector {name!r} in orientation; the chain has '
                                     f'{names}')
                rotations[self._effector_index[name]] = quaternion_rotation(
                    value, f'orientation for {name!r}')
        else:
            array = np.asarray(orientation, dtype=float)
            if array.shape == (4,) and m == 1:
                rotations[0] = _unit_rotation(array.tolist(), 'orientation')
            elif array.shape == (m, 4):
                for index, row in enumerate(array.tolist()):
                    if not all(map(math.isnan, row)):
                        rotations[index] = _unit_rotation(
                            row, f'orientation for {names[index]!r}')
            else:
                raise ValueError(
                    f'orientation has shape {array.shape}; expected a quaternion (x, y, z, w) '
                    f'for a single effector, ({m}, 4) with NaN rows, or a mapping of effector '
                    f'names {names} to quaternions')
        if m > 1:   # (one effector has a target: _targets saw to it)
            for index, (rotation, target) in enumerate(zip(rotations, targets)):
                if rotation is not None and target is None:
                    raise ValueError(f'effector {names[index]!r} has an orientation but no '
                                     'position target')
        return rotations

    def _pose_tree(self, modes: tuple[str, ...]) -> tuple[_Tree, list]:
        """
        Return the tree with marker points for these per-effector modes, and its fits.

        'full' adds two points on the tool's x and y axes, 'axis' one on the tool axis, at
        orientation_scale metres from the tool point: fitted onto the target frame's points,
        they carry the orientation through FABRIK's passes. The markers of a full frame whose
        tool has six joints of its own (moving no other tool: an arm) are fitted only by the
        joints at its tool's joint point, which turn the tool about it: the tool's rigid body
        already places that point (_Orientations.placed), and the joints above fit it with
        the positions (fitting the markers too, an arm's shoulder and elbow traded position for
        orientation: cold full poses took 1.1x the time and restarted more). With fewer, all
        of its joints must orient it (an arm of five on a torso another arm holds).
        """
        if modes not in self._pose_trees:
            scale = self.orientation_scale
            markers = [[] if mode == 'position' else
                       [np.array(axis) * scale] if mode == 'axis' else
                       [np.array([scale, 0.0, 0.0]), np.array([0.0, scale, 0.0])]
                       for mode, axis in zip(modes, self.tool_axes)]
            tree = _Tree(self.chain, markers)
            fits = tree.next_fit
            if self.fit == 'chain':
                pivots = {}     # a full frame's marker points -> the point its tool turns about
                moves = self.chain.moves_effector
                for index, mode in enumerate(modes):
                    parent = tree.effectors[index].parent
                    own = moves[index] & ~np.delete(moves, index, axis=0).any(axis=0)
                    if mode == 'full' and parent >= 0 and own.sum() >= 6:
                        for marker in tree.markers[index]:
                            pivots[tree.effectors[marker].point] = tree.joints[parent].point
                fits = [_fit_without(fit, {marker for marker, pivot in pivots.items()
                                           if pivot != joint.point})
                        for fit, joint in zip(tree.whole_fit, tree.joints)]
            self._pose_trees[modes] = (tree, fits)
        return self._pose_trees[modes]

    def _targets(self, target: object) -> list[tuple[float, float, float] | None]:
        """Return per effector its target (metres) or None; ValueError on bad input."""
        m = len(self._tree.effectors)
        names = self.chain.effector_names
        rows: list[tuple[float, float, float] | None] = [None] * m
        if _is_mapping(target):
            for name, value in target.items():
                if name not in self._effector_index:
                    raise ValueError(f'unknown effector {name!r}; the chain has {names}')
                rows[self._effector_index[name]] = _point(value, f'target for {name!r}')
        else:
            array = np.asarray(target, dtype=float)
            if array.shape == (3,) and m == 1:
                rows[0] = _finite_point(array.tolist(), 'target')
                return rows
            elif array.shape == (m, 3):
                for index, row in enumerate(array.tolist()):
                    if not all(map(math.isnan, row)):
                        rows[index] = _finite_point(row, f'target for {names[index]!r}')
            else:
                raise ValueError(
                    f'target has shape {array.shape}; expected (3,) for a single effector, '
                    f'({m}, 3) with NaN rows for effectors without a target, or a mapping '
                    f'of effector names {names} to points')
        if rows.count(None) == m:
            raise ValueError(f'no effector has a target (effectors: {names})')
        return rows

    def _start(self, seed: object, tree: _Tree) -> _State:
        """
        Return the state of the seed clipped into the limits; ValueError on a wrong or NaN seed.

        The neutral pose's state is the tree's (seed None or equal to it), and a seed equal
        to the last answer (tracking: each solve seeded with the previous one) reuses that
        answer's state, which is within the limits and whose forward kinematics is known.
        """
        if seed is None:
            return tree.neutral
        array = np.asarray(seed, dtype=float)
        if array.shape != (len(self._lower),):
            raise ValueError(f'seed has shape {array.shape}, expected ({len(self._lower)},) '
                             f'for joints {self.chain.joint_names}')
        values = array.tolist()
        last_tree, last = self._last
        if last_tree is tree and values == last.q:
            return last
        if values == tree.neutral.q:
            return tree.neutral
        if not all(map(math.isfinite, values)):
            raise ValueError(f'seed is not finite: {values}')
        return tree.sweep(
            [min(max(v, lo), hi) for v, lo, hi in zip(values, self._lower, self._upper)], _ORIGIN)

    # ------------------------------------------------------------------ solve

    def solve(self, target: object, seed: object = None, trace: bool = False,
              timeout: float | None = None, *, orientation: object = None) -> IkResult:
        """
        Return joint angles that bring the effectors to their targets.

        target: (3,) metres in the base frame for a single effector; (m, 3) with all-NaN rows
        for effectors without a target; or a mapping effector name -> (3,). Effectors
        without a target hold the position the seed gives them. seed: (n,) radians, clipped
        into the limits; default chain.neutral(). timeout: seconds for this solve (default
        the solver's). An unreachable target leaves the chain stretched toward it as far as
        the joints allow; result.error is the remaining distance and reached is False.
        Raises ValueError on NaN/inf, wrong shapes, unknown effector names, an all-NaN
        target, a non-finite seed or a timeout that is not a positive number.

        orientation: the tool frame's target orientation, a quaternion (x, y, z, w) in ROS
        order, base frame, normalised if not unit; for trees a mapping effector name ->
        quaternion (or (m, 4) with NaN rows), each for an effector with a position target.
        What it fixes follows orientation_mode; None (default): position only, exactly the
        solve without orientations. An unreachable pose ends at the best compromise of
        both errors (see orientation_scale), both reported.
        """
        targets = self._targets(target)
        rotations = self._orientations(orientation, targets) if orientation is not None \
            else None
        budget = self.timeout if timeout is None else _checked_timeout(timeout)
        deadline = self.clock() + budget if budget is not None else math.inf
        orientations = None
        tree, tree_fits, all_groups = self._tree, self._fits, self._groups
        unreachable_after = self.unreachable_after
        trackable = self._trackable_position
        if rotations is not None:
            modes = self.orientation_modes if None not in rotations else tuple(
                mode if rotation is not None else 'position'
                for rotation, mode in zip(rotations, self.orientation_modes))
            if modes.count('position') < len(modes):
                tree, tree_fits = self._pose_tree(modes)
                orientations = _Orientations(tree, rotations, modes, self.tool_axes,
                                             self.orientation_scale)
                all_groups = self._everything
                trackable = self._trackable
                if self._unreachable_auto:
                    # An oriented tool leaves little or no redundancy (six joints, a full
                    # pose: isolated solutions; a free roll: one family) in small basins.
                    unreachable_after = None
        free_root = self.root == 'free'
        start = self._start(seed, tree)
        if trackable and not trace:
            tracked = self._track(tree, start, targets, rotations, orientations, deadline)
            if tracked is not None:
                return tracked
        spent = None    # what a wrist's split solve spent before handing over (_Split)
        if self._split is not None and orientations is not None:
            split, spent = self._split.solve(tree, start, targets, rotations, orientations,
                                             deadline, trace)
            if split is not None:
                return split
        goals = [goal if goal is not None else start.points[effector.point]
                 for goal, effector in zip(targets, tree.effectors)]
        weights = [self.effector_weights.get(name, 1.0 if goal is not None else HELD_WEIGHT)
                   for name, goal in zip(self.chain.effector_names, targets)]
        stretch, floors = (tree.stretched(targets, start, self.tolerance) if not free_root
                           else ({}, [0.0] * len(targets)))
        if orientations is not None:    # the target frames, out of reach where they can be
            bases = [stretch.get(effector.point, goal)
                     for goal, effector in zip(goals, tree.effectors)]
            orientations.goals = orientations.marker_goals(bases)
        # Groups that share no joint with a target out of reach are solved first, on their
        # own: restarts and stall tests then see only them, and they reach their targets
        # as if the far ones were not there. Then the groups out of reach, stretched.
        if len(all_groups) == 1:    # (a single effector, or effectors sharing joints)
            passes = [(all_groups, stretch if any(floors) else {})]
            rest = start.q, 0.0
        else:
            far = tuple(group for group in all_groups
                        if any(floors[i] for i in group.effectors))
            near = tuple(group for group in all_groups if group not in far)
            passes = [(groups, pass_stretch) for groups, pass_stretch
                      in ((near, {}), (far, stretch)) if groups]
            # Meanwhile the groups of the second pass stay at the seed. Their objective is
            # summed as _Solve.score will sum it (effector order, d * d: d ** 2 rounds
            # differently), so the logged best error does not rise where the passes meet.
            waiting = sorted(i for group in far for i in group.effectors) if near else []
            distances = [math.dist(goals[i], start.points[tree.effectors[i].point])
                         for i in waiting]
            rest = start.q, sum(weights[i] * (d * d) for i, d in zip(waiting, distances))
        solve = spent
        for groups, pass_stretch in passes:
            fits = retry_fits = tree_fits
            if pass_stretch:
                # Joints that move only stretched points (and their markers) lay straight.
                markers = tree.marker_point_set
                straight = [straight_fit if all(point in pass_stretch or point in markers
                                                for point in tree.fit_points(whole_fit)) else fit
                            for fit, whole_fit, straight_fit in zip(fits, tree.whole_fit,
                                                                    tree.straight_fit)]
                # But a chain fitted whole keeps its fit for a position target: the straight
                # line is no pose a chain with offsets can take, and fitted point by point to
                # it the UR5's elbow folded onto its stop for 40 % of far targets, a saddle
                # only the nudged retry left (fitted whole: 0.8x the time, none farther; the
                # demo arm 0.7x, of 900 targets 20 closer, one by 0.22 m, and 20 farther, 6 by
                # 1 mm). Its retries lay it straight: the other way in where the first attempt
                # stopped. (Trees and full poses keep the line: fitted whole, the dual arm's
                # held tool drifted more, and far poses moved both ways.)
                if self.fit == 'chain' and orientations is None and len(tree.effectors) == 1:
                    retry_fits = straight
                else:
                    fits = retry_fits = straight
            solve = _Solve(self, groups, goals, weights, floors, pass_stretch, fits, free_root,
                           rest, trace, deadline, solve, orientations, retry_fits)
            solve.attempt(start)
            self._restart(solve, start, bool(pass_stretch), unreachable_after)
            rest = solve.pose(), solve.best_fit.objective
        return self._result(solve.final(), solve.tree, targets, rotations, _Steps(
            solve.fabrik_iterations, solve.closing_steps, solve.restarts, solve.initial_error,
            solve.fabrik_error, solve.history, solve.trace, solve.timed_out), orientations)

    def _track(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
               rotations: list | None, orientations: _Orientations | None, deadline: float
               ) -> IkResult | None:
        """
        Return the answer for a seed already close to its target (tracking), or None.

        The lean path of a single effector on a pinned root: what the full solve does from
        such a seed (no FABRIK, one closing step with the same damping, limit steering and
        clamping, no restart) without its bookkeeping (groups, passes, scores, budgets).
        None when the full solve would do more: the target beyond reach, the seed farther
        than _track_radius (one step would likely not do), the time budget spent, or the
        step not lowering the error to the tolerance; the full solve then starts from the
        same seed.
        """
        effector = tree.effectors[0]
        goal = targets[0]
        tolerance = self.tolerance
        if not effector.path or \
                math.dist(goal, start.points[effector.anchor]) > effector.reach + tolerance:
            return None
        objective, error = _one_effector_fit(start, goal, effector.point, orientations)
        excess = max(math.sqrt(objective), 1e-15)
        if excess > self._track_radius:
            return None
        history = [math.sqrt(objective)]
        state = start
        # Open (_Solve._open; with weight 1 the excess is at least the error).
        if error > tolerance and excess > _STALL * tolerance:
            if deadline < math.inf and self.clock() >= deadline:
                return None
            rows = tree.jacobian(start, False, [0])
            x, y, z = start.points[effector.point]
            residual = [goal[0] - x, goal[1] - y, goal[2] - z]
            if orientations is not None:
                orientations.extend(start, rows, residual)
            weights, push = ([], []) if orientations is not None and len(rows) >= len(
                rows[0]) else self._limit_steering(start.q, rows, residual, True)
            aim = _pushed(rows, residual, push) if push else residual
            floor = _DAMPING_FLOOR if orientations is None else _POSE_DAMPING_FLOOR
            q = self._limited_step(start.q, rows, aim, weights, push,
                                   max(_DAMPING_START * excess ** 2, floor))[0]
            state = tree.sweep(q, _ORIGIN)
            new_objective, new_error = _one_effector_fit(state, goal, effector.point,
                                                         orientations)
            if new_objective >= objective or new_error > tolerance:
                return None
            history.append(math.sqrt(new_objective))
        return self._result(state, tree, targets, rotations, _Steps(
            0, len(history) - 1, 0, error, error, history, None, False), orientations)

    def _restart(self, solve: _Solve, start: _State, stretch: bool,
                 unreachable_after: int | None) -> None:
        """
        Attempt from other seeds while the best pose misses and restarts still make progress.

        Tracking (a seed within the closing radius of its targets) keeps the seed's branch
        unless it misses by more than restart_error; a cold solve restarts on any miss. When
        unreachable_after restarts end where the best pose is (within 0.1 % of the reach),
        none of them closer, the target is taken as out of reach (the seeds converge on the
        same residual) and the best pose is the answer; restarts that end farther off (in
        another basin) neither confirm nor refute it. A best pose about as close as any pose
        can come (_beyond_workspace) needs no restart at all.
        """
        tracking = solve.initial_miss <= self.closing_radius
        patience = self.restart_error if tracking else self.tolerance
        if stretch or solve.best_fit.miss > patience:   # else no restart would start
            if tracking and not stretch:
                # The seed's branch is kept against answers no more than a tolerance closer
                # elsewhere: a restart of the UR5 tracking a target just beyond its shell
                # ended 0.02 mm closer, before the polish that brings both to the same floor,
                # with a wrist joint turned a full turn and its last joint anywhere.
                # (Restarts stop early, still creeping down: one ending 1 mm closer may lie in
                # a basin far deeper. Out of reach the retries leave a saddle or a stop: they
                # are taken.)
                solve.hold = self.tolerance
            self._explore(solve, start, stretch, patience, unreachable_after)
            solve.hold = 0.0
        if solve.best_error > self.tolerance and solve.best_fit.excess > _STALL * self.tolerance:
            # Explored attempts stopped early (see _EXPLORE_STALL), and so did the first
            # attempt out of reach (its nudged retry would only creep down the same tail).
            solve.attempt(solve.best, polish=True)

    def _explore(self, solve: _Solve, start: _State, stretch: bool, patience: float,
                 unreachable_after: int | None) -> None:
        """Run _restart's attempts from other seeds; patience: metres, see _restart."""
        margin = max(self.tolerance, _AGREE * self.reach)
        if unreachable_after is not None:
            # Explored attempts end within a few explore stalls of their own minimum.
            margin = max(margin, 2.0 * _EXPLORE_STALL * solve.best_fit.miss)
        random_seeds = iter(self._restart_seeds)
        confirmed = 0   # restarts since the last progress that ended at the best residual
        skipped = 0     # restarts that confirmed without being run (see below)
        while solve.restarts + skipped < self.max_restarts and confirmed != unreachable_after \
                and solve.has_budget():
            before = solve.best_fit.miss
            mapped = False
            if before > patience:
                if unreachable_after is not None and self._beyond_workspace(solve, margin):
                    break
                # First from the mapped pose whose effector lies nearest the target (one
                # effector's position, pinned root), then from the best pose with the joints
                # it pinned at a limit released to mid-range (an elbow stuck straight, bent
                # the wrong way), then at random.
                tried = solve.restarts + skipped
                mapped = solve.mappable and not tried
                if mapped:
                    seed = self._mapped_seed(solve.effectors[0], solve.goals[0])
                elif tried == (1 if solve.mappable else 0):
                    seed = self._released(solve.best.q)
                else:
                    seed = next(random_seeds)
                if seed == solve.best.q and unreachable_after is not None:
                    # Nothing pinned: this restart would only go on down the best pose's own
                    # basin (the polish finishes it) and end at its residual. It confirms
                    # without being run (and takes its place among max_restarts).
                    skipped += 1
                    confirmed += 1
                    continue
            elif stretch and not solve.restarts and solve.best_fit.excess > self.tolerance:
                # Out of reach and not straight, unless the (polished) best pose is a basin's
                # floor with no root at a stop: once more from the first attempt's pose
                # nudged off a saddle (joint axes in line with the target give every joint a
                # zero gradient), the joints it pinned at a limit released to mid-range (an
                # elbow folded back against its stop ended up to 0.7 m farther than it
                # could). Not from the polished pose: where the polish settles the demo arm's
                # wrist straight (its roll then flat), a nudge no longer finds the closer
                # basin with the wrist bent sideways.
                early = solve.best.q
                if solve.settles_in_basin() and not self._root_at_a_stop(solve):
                    break
                seed = self._nudged(self._released(early))
            elif stretch and 1 <= solve.restarts <= _STOP_RETRIES \
                    and len(solve.effectors) == 1 and solve.best_fit.excess > self.tolerance \
                    and self._root_at_a_stop(solve):
                # Still turned to a stop after that: from random seeds. (Released to
                # mid-range, the demo arm's base turned back to the same stop for most of the
                # far targets it had reached back over its shoulder for; after one random
                # seed 6-10 % of them were still there, up to 0.66 m farther than they could
                # get. Trees: no gain seen.)
                seed = next(random_seeds)
            else:
                break
            solve.restarts += 1
            base = start.base
            if solve.free_root:
                # The free body stays where the best pose put it, and so do the legs that
                # reach their targets: only the branches that miss start afresh (a random
                # pose of every leg from the start rarely has all of them land at once).
                seed, base = self._missing_branches(solve, seed, patience), solve.best.base
            ended = solve.attempt(solve.tree.sweep(seed, base), band=before + margin,
                                  confirms=unreachable_after is not None)
            if solve.best_fit.miss < before - margin:
                confirmed = 0
            elif mapped and unreachable_after is not None and ended < before + margin:
                # Started next to the target, where the workspace comes closest to it as far
                # as the map tells, and back at the best residual: that settles it. (Random
                # chains of 4-7 joints from random seeds: 11 and 12 of 1200 and 2000
                # reachable targets left unreached, against 32 and 40 with two confirming
                # restarts from the released and a random seed; the demo arm's holes 0.87x.)
                confirmed = unreachable_after
            elif before > patience and ended < before + margin:
                confirmed += 1  # (retries out of reach have their own bounds above)

    def _root_at_a_stop(self, solve: _Solve) -> bool:
        """
        Tell whether a root joint of the pass, with over half a turn of range, is at a stop.

        Turned the other way round, a revolute root joint with more than half a turn of range
        points its chain where its stop blocks it from this side: another basin, which the
        basin test of a pose out of reach (_Solve.at_floor) cannot see. (The demo arm's base
        at its stop, reaching back over the shoulder, ended up to 0.65 m farther than it
        could.) A slide or a narrow root (a rail, a tentacle's segment) pushed to its end by a
        far target is where it belongs. Looks at the best pose.
        """
        q, tree = solve.best.q, solve.tree
        for index in solve.effectors:
            joints = tree.effectors[index].joints
            if not joints:
                continue
            root = tree.joints[joints[0]]
            coordinate = root.coordinate
            if not root.prismatic and root.upper - root.lower > math.pi \
                    and q[coordinate] in (self._lower[coordinate], self._upper[coordinate]):
                return True
        return False

    def _beyond_workspace(self, solve: _Solve, margin: float) -> bool:
        """
        Tell whether no pose brings the judged effectors closer than the best pose does.

        An effector comes no closer to its target than the target's distance from its
        anchor less the farthest the effector gets from the anchor (_farthest). Where that
        bound exceeds _BEYOND_SHELL of the reach (a target clearly outside the workspace's
        outer shell, whatever a local search of the farthest pose missed) and the best pose
        is within margin (metres) of it, restarts cannot do better; every judged
        effector must be there or within the tolerance. Position solves, pinned root: on
        the UR5 every hole in the summed links' reach sphere (1.24 m) lies beyond its shell
        (0.95 m), which its first attempt reaches.
        """
        if solve.free_root or solve.orientations is not None:
            return False
        tree, distances, tolerance = solve.tree, solve.best_fit.distances, self.tolerance
        for i in solve.judged:
            if distances[i] <= tolerance:
                continue
            index = solve.effectors[i]
            anchor = tree.neutral.points[tree.effectors[index].anchor]
            bound = math.dist(solve.goals[i], anchor) - self._farthest(index)
            if not _BEYOND_SHELL * self.reach < bound >= distances[i] - margin:
                return False
        return True

    def _farthest(self, index: int) -> float:
        """
        Return the farthest effector `index` gets from its anchor, metres (pinned root).

        Found on first need (a few milliseconds) and kept: the farthest _FARTHEST_STARTS of
        the neutral pose, the restart seeds and _FARTHEST_SAMPLES random poses, each pushed
        out to a local maximum of the distance by damped Newton steps on -d^2 / 2
        (_Tree.hessian with weight -1 and the anchor as goal) within the limits; the largest
        of them. A pose whose path lies straight reaches the path's length, none farther:
        where the neutral pose does, or the path has more than _NEWTON_JOINTS joints (the
        search's dense Hessians would cost seconds), that length is the answer.
        """
        found = self._farthest_found[index]
        if found is not None:
            return found
        tree, lower, upper = self._tree, self._lower, self._upper
        effector = tree.effectors[index]
        point, anchor = effector.point, tree.neutral.points[effector.anchor]
        straight = effector.reach * (1.0 - 1e-12)
        neutral = math.dist(tree.neutral.points[point], anchor)
        if neutral >= straight or len(effector.joints) > _NEWTON_JOINTS:
            # (An effector on the base link: no path, its point stays where it is.)
            self._farthest_found[index] = max(neutral, effector.reach)
            return self._farthest_found[index]
        effector_joints = sorted({tree.joints[joint].coordinate for joint in effector.joints})
        samples = np.random.default_rng(_RESTART_SEED + 1).uniform(
            *self._seed_box, size=(_FARTHEST_SAMPLES, len(lower)))
        starts = [tree.neutral] + [tree.sweep(seed, _ORIGIN) for seed in
                                   self._restart_seeds + samples.tolist()]
        starts.sort(key=lambda state: math.dist(state.points[point], anchor), reverse=True)
        farthest = 0.0
        for state in starts[:_FARTHEST_STARTS]:
            distance = math.dist(state.points[point], anchor)
            damping = _NEWTON_DAMPING_START
            for _ in range(_FARTHEST_STEPS):
                system = _free_system(state.q, effector_joints,
                                      *tree.hessian(state, index, -1.0, anchor), lower, upper)
                if system is None or damping > _DAMPING_MAX:
                    break
                free, hessian, gradient, scale = system
                try:
                    step = _shifted_solve(hessian, gradient, damping * scale)
                except _NOT_POSITIVE_DEFINITE:
                    damping *= 10.0
                    continue
                if sum(map(mul, step, gradient)) < _NEWTON_STALL * distance * distance:
                    break   # about the model's gain: a maximum
                moved = list(state.q)
                for j, change in zip(free, step):
                    moved[j] = min(max(moved[j] + change, lower[j]), upper[j])
                candidate = tree.sweep(moved, _ORIGIN)
                gained = math.dist(candidate.points[point], anchor) - distance
                if gained <= 0.0:
                    damping *= 10.0
                    continue
                state, distance = candidate, distance + gained
                damping = max(damping * 0.1, _NEWTON_DAMPING_MIN)
            farthest = max(farthest, distance)
            if farthest >= straight:
                break
        self._farthest_found[index] = farthest
        return farthest

    def _mapped_seed(self, index: int, goal: tuple[float, float, float]) -> list[float]:
        """
        Return the pose of the workspace map whose effector `index` lies nearest goal.

        The map: _MAP_SAMPLES random poses in the restart seeds' box and where their
        effectors are (pinned root), built on first need (as many forward sweeps: the demo
        arm's take 4 ms, which can take that one solve past its time budget) and kept. A
        target in reach lies near some mapped effector point, usually in the basin of its
        pose; a hole's nearest mapped pose ends about where the workspace comes closest.
        """
        if self._workspace_map is None:
            tree = self._tree
            poses = np.random.default_rng(_RESTART_SEED + 2).uniform(
                *self._seed_box, size=(_MAP_SAMPLES, len(self._lower))).tolist()
            points = np.array([[state.points[effector.point] for effector in tree.effectors]
                               for state in (tree.sweep(q, _ORIGIN) for q in poses)])
            self._workspace_map = poses, points, np.einsum('ijk,ijk->ij', points, points)
        poses, points, squares = self._workspace_map
        # |p - g|^2 = |p|^2 - 2 p.g + |g|^2, the last the same for all.
        return poses[int(np.argmin(squares[:, index] - 2.0 * (points[:, index] @ goal)))]

    def _missing_branches(self, solve: _Solve, seed: list[float], patience: float
                          ) -> list[float]:
        """Return the best pose with the joints of effectors missing by > patience from seed."""
        moves = self.chain.moves_effector
        missing = [index for index, distance in enumerate(solve.best_fit.distances[:len(moves)])
                   if distance > patience]
        return [s if moves[missing, j].any() else b
                for j, (s, b) in enumerate(zip(seed, solve.best.q))]

    def _nudged(self, q: list[float]) -> list[float]:
        """Return q with every joint turned by _NUDGE radians (back, where a limit is near)."""
        return [a + _NUDGE if a + _NUDGE <= hi else max(a - _NUDGE, lo)
                for a, lo, hi in zip(q, self._lower, self._upper)]

    def _released(self, q: list[float]) -> list[float]:
        """Return q with every joint that sits at a limit moved to the middle of its range."""
        return [(lo + hi) / 2.0 if a in (lo, hi) else a
                for a, lo, hi in zip(q, self._lower, self._upper)]

    def _limit_steering(self, q: list[float], rows: list[list[float]],
                        residual: list[float], steer: bool
                        ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """
        Return a closing step's column weights and null-space push, as (joint, value) pairs.

        Joints near a limit move toward it less and leave the motion to the others
        (weighted least norm, Chan & Dubey 1995), and with `steer` the redundancy the
        targets leave pushes them back toward mid-range (a null-space step, Liegeois 1977):
        tracking does not drift into a limit, stall there and jump to another branch on a
        restart. (Out of reach, limits are where the stretched chain belongs: callers skip
        this.) rows, residual: the weighted Jacobian and residual of the step. Only joints
        near a limit have a pair (weight below 1, push in radians or metres): the others
        cost nothing, however long the chain. A joint at a limit that the error draws past
        it gets weight 0: it stays there.
        """
        inner_lower, inner_upper = self._inner_lower, self._inner_upper
        if all(map(le, inner_lower, q)) and all(map(le, q, inner_upper)):
            return [], []
        # The joints outside [lower + margin, upper - margin], found at C speed.
        near = compress(range(len(q)), map(not_, map(
            and_, map(le, inner_lower, q), map(le, q, inner_upper))))
        lower, upper, margins = self._lower, self._upper, self._margins
        weights, push = [], []
        for j in near:
            a = q[j]
            margin = margins[j]
            low, high = a - lower[j], upper[j] - a
            room, sign = (low, -1.0) if low < high else (high, 1.0)
            if steer:
                push.append((j, -sign * _LIMIT_PUSH * (margin - room)))
            # The error's gradient J^T r says which way the joint is drawn: away from its
            # limit it is free. Drawn past a limit it sits at, it is held there: its step
            # would be clamped and the others' solved again (the demo arm's holes: 4.7 such
            # solves each, of 19).
            drawn = 0.0
            for row, r in zip(rows, residual):
                drawn += row[j] * r
            if sign * drawn > 0.0:
                weights.append((j, max(room / margin, _LIMIT_WEIGHT_MIN) if room else 0.0))
        return weights, push

    def _limited_step(self, q: list[float], rows: list[list[float]], aim: list[float],
                      weights: list[tuple[int, float]], push: list[tuple[int, float]],
                      mu: float) -> tuple[list[float], list[float]]:
        """
        Return the joints after one damped step from q, within the limits, and the step.

        weights, push: see _limit_steering. Joints the step would push past a limit are held
        at it and the step is re-solved without them (the rest of the aim spent on the
        others). The step's tail beyond q's length is the free root's motion.
        """
        lower, upper = self._lower, self._upper
        step = _weighted_step(rows, aim, weights, mu)
        for j, change in push:
            step[j] += change
        moved, held = _clamped(q, step, lower, upper)
        if not held:
            return moved, step
        # Move those joints to their limit, then spend the rest on the others.
        rest = list(aim)
        pushed = dict(push)
        for j in held:
            change = moved[j] - q[j] - pushed.get(j, 0.0)
            for index, row in enumerate(rows):
                rest[index] -= row[j] * change
        stopped = set(held)
        step = _weighted_step(rows, rest, [(j, weight) for j, weight in weights
                                           if j not in stopped] + [(j, 0.0) for j in held], mu)
        for j, change in push:
            step[j] += change
        for j in held:
            step[j] = moved[j] - q[j]
        return _clamped(q, step, lower, upper)[0], step

    def _result(self, state: _State, tree: _Tree, targets: list, rotations: list | None,
                steps: _Steps, orientations: _Orientations | None = None) -> IkResult:
        """
        Package a final state; errors are measured from its forward kinematics.

        orientations: the solve's, whose errors of the state are reused where it has them.
        """
        if state.base == _ORIGIN:   # a free root moved: a seed's state is not this one
            self._last = (tree, state)
        positions = list(map(state.points.__getitem__, tree.tool_points))
        if len(positions) == 1:     # one effector: it has the target
            error = math.dist(targets[0], positions[0])
            errors = [error]
        else:
            errors = [math.dist(goal, position) if goal is not None else math.nan
                      for goal, position in zip(targets, positions)]
            error = max([e for e in errors if e == e])  # NaN != NaN: effectors without one
        reached = error <= self.tolerance
        angles = [math.nan] * len(positions)
        orientation_error = math.nan
        if rotations is not None:   # position-only solves skip the orientation bookkeeping
            # The errors sought (measured already, most likely of this state) decide reached;
            # those of effectors in 'position' mode are reported only.
            found = []
            if orientations is not None:
                found = orientations.errors(state)
                for item, (angle, _, _) in zip(orientations.items, found):
                    angles[item[0]] = angle
                    reached = reached and angle <= self.orientation_tolerance
            if len(found) < len(rotations) - rotations.count(None):
                for index, (effector, rotation) in enumerate(zip(tree.effectors, rotations)):
                    if rotation is not None and angles[index] != angles[index]:
                        tool = _product(state.frames[effector.parent][:9], effector.tool)
                        angles[index] = _rotation_error(tool, rotation)[0]
            orientation_error = max([a for a in angles if a == a], default=math.nan)
        return IkResult(
            q=np.array(state.q), error=error, errors=np.array(errors),
            iterations=steps.fabrik_iterations + steps.closing_steps, reached=reached,
            base_position=np.array(state.base),
            effector_positions=np.array(positions), fabrik_iterations=steps.fabrik_iterations,
            closing_steps=steps.closing_steps, restarts=steps.restarts,
            initial_error=steps.initial_error, fabrik_error=steps.fabrik_error,
            history=steps.history, trace=steps.trace, timed_out=steps.timed_out,
            orientation_error=orientation_error, orientation_errors=np.array(angles))


def _one_effector_fit(state: _State, goal: tuple[float, float, float], point: int,
                      orientations: _Orientations | None) -> tuple[float, float]:
    """Return one effector's objective and error at weight 1, as _Solve.score does."""
    distance = math.dist(goal, state.points[point])
    if orientations is None:
        return distance * distance, distance
    (angle, _, _), = orientations.errors(state)
    turned = orientations.scale * angle     # metres, see _Orientations
    return distance * distance + turned * turned, max(distance, turned)


def _free_system(q: list[float], joints: Sequence[int], descent: list[float],
                 full: list[list[float]], lower: list[float], upper: list[float]
                 ) -> tuple[list[int], list[list[float]], list[float], float] | None:
    """
    Return Newton's system over the joints a limit leaves free, or None if none is.

    descent, full: minus half the objective's gradient and half its Hessian's lower
    triangle by rows, per coordinate (_Tree.hessian). Free: the given joints but those at a
    limit the descent pushes them past. Returns the free joints, the triangle and the
    descent over them, and the triangle's largest diagonal entry (at least _DAMPING_FLOOR).
    """
    free = [j for j in joints if not ((q[j] <= lower[j] and descent[j] < 0.0)
                                      or (q[j] >= upper[j] and descent[j] > 0.0))]
    if not free:
        return None
    if len(free) == len(q):     # every joint free: the whole triangle as it is
        hessian, gradient = full, descent
    else:
        hessian = _sub_triangle(full, free)
        gradient = [descent[j] for j in free]
    return free, hessian, gradient, max(max(row[-1] for row in hessian), _DAMPING_FLOOR)


def _sub_triangle(triangle: list[list[float]], indices: list[int]) -> list[list[float]]:
    """Return the lower triangle, by rows, of rows and columns `indices` (ascending) of one."""
    return [[triangle[i][k] for k in indices[:row + 1]] for row, i in enumerate(indices)]


def _held_newton_step(q: list[float], moved: list[float], held: list[int], free: list[int],
                      hessian: list[list[float]], descent: list[float], shift: float,
                      lower: list[float], upper: list[float]) -> list[float]:
    """
    Return a Newton step's joints with those `held` at their limit and the others solved again.

    hessian, descent: Newton's system over the `free` joints (see _free_system); moved: q
    plus the step, clamped; held: the joints it clamped. Their change d_h moves the others'
    right-hand side: (H_rr + shift I) d_r = descent_r - H_rh d_h.
    """
    held_set = set(held)
    rest = [row for row, j in enumerate(free) if j not in held_set]
    if not rest:
        return moved
    changes = [(row, moved[j] - q[j]) for row, j in enumerate(free) if j in held_set]
    aim = [descent[r] - sum((hessian[r][h] if h <= r else hessian[h][r]) * change
                            for h, change in changes) for r in rest]
    moved = list(moved)
    for r, change in zip(rest, _shifted_solve(_sub_triangle(hessian, rest), aim, shift)):
        j = free[r]
        moved[j] = min(max(q[j] + change, lower[j]), upper[j])
    return moved


def _is_mapping(value: object) -> bool:
    """Return whether value is a mapping; arrays, lists and tuples skip the slower ABC check."""
    return not isinstance(value, (np.ndarray, list, tuple)) and isinstance(value, Mapping)


def _checked_timeout(timeout: float | None) -> float | None:
    """Return a time budget in seconds (None: none); ValueError unless positive."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and timeout > 0.0):
        raise ValueError(f'timeout must be a positive number of seconds or None, got '
                         f'{timeout!r}')
    return float(timeout)


def _orientation_mode(value: object, what: str) -> str:
    """Return a valid orientation mode, or raise ValueError naming it."""
    if value not in ORIENTATION_MODES:
        raise ValueError(f'{what} must be one of {ORIENTATION_MODES}, got {value!r}')
    return value


def _unit_axis(value: object, what: str) -> tuple[float, float, float]:
    """Return a non-zero finite 3-vector normalised, or raise ValueError naming it."""
    x, y, z = _point(value, what)
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < 1e-9:
        raise ValueError(f'{what} is a zero vector')
    return x / norm, y / norm, z / norm


def _point(value: object, what: str) -> tuple[float, float, float]:
    """Return a finite 3-vector as floats, or raise ValueError naming it."""
    values = np.asarray(value, dtype=float).tolist()
    if not isinstance(values, list) or len(values) != 3 or isinstance(values[0], list):
        raise ValueError(f'{what} has shape {np.shape(value)}, expected (3,) metres')
    return _finite_point(values, what)


def _finite_point(values: list[float], what: str) -> tuple[float, float, float]:
    """Return three floats (metres) as a point, or raise ValueError if one is unusable."""
    x, y, z = values
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ValueError(f'{what} is not finite: {values}')
    if max(abs(x), abs(y), abs(z)) > MAX_COORDINATE_M:
        raise ValueError(f'{what} is farther than {MAX_COORDINATE_M:g} m from the base: '
                         f'{values}')
    return x, y, z


class _Score(NamedTuple):
    """How well a state meets the goals."""

    objective: float            # m^2, sum of w_i d_i^2: what the solver minimises
    error: float                # metres, the largest d_i
    excess: float               # metres, sqrt(sum w_i e_i^2), e_i = d_i above its floor
    distances: list[float]      # metres, d_i per effector
    miss: float                 # metres, the largest d_i in groups with no target beyond
    #                             reach (see _Group)
    shares: tuple[float, ...]   # m^2, each group's part of the objective (if several)


class _Group(NamedTuple):
    """Effectors that share joints, transitively; different groups share none."""

    effectors: tuple[int, ...]
    coordinates: tuple[int, ...]    # the independent joints that move them


class _Steps(NamedTuple):
    """What a solve did, for its IkResult (see there)."""

    fabrik_iterations: int
    closing_steps: int
    restarts: int
    initial_error: float
    fabrik_error: float
    history: list[float]
    trace: list[np.ndarray] | None
    timed_out: bool


class _Split:
    """
    A cold pose of an arm whose wrist gives it a closed form, or part of one.

    Subclasses find the joint angles (pose_angles); this answers with them, for cold solves
    only: a seed within the closing radius (tracking) is left to the closing steps, which
    move it on continuously where an exact wrist would swing about near its singularity
    (the wrist straight: only the sum of its outer angles is set there). Where pose_angles
    finds none, or its answer misses, the whole arm's solve takes over from the seed.
    """

    def __init__(self, solver: IkSolver) -> None:
        self.solver = solver
        self.lower, self.upper = solver._lower, solver._upper

    @staticmethod
    def of(solver: IkSolver, max_restarts: int) -> _Split | None:
        """Return the split for the solver's chain and mode, None if it has none."""
        return _Wrist.of(solver, max_restarts) or _OffsetWrist.of(solver)

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """
        Return joint angles for the pose (None if none), what they took and FABRIK's error.

        What they took: [FABRIK iterations, closing steps, restarts]; FABRIK's error: metres
        after its stage (NaN where there was none).
        """
        raise NotImplementedError

    def solve(self, tree: _Tree, start: _State, targets: list[tuple[float, float, float]],
              rotations: list[tuple[float, ...]], orientations: _Orientations,
              deadline: float, trace: bool) -> tuple[IkResult | None, _Steps | None]:
        """
        Return the answer and None, or None and what the attempt spent (None: nothing).

        The answer logs the seed and itself (history, trace).
        """
        solver = self.solver
        goal, rotation = targets[0], rotations[0]
        distance = math.dist(goal, start.points[tree.effectors[0].point])
        turned = orientations.squares(start)[0]
        initial = max(distance, math.sqrt(turned))
        if initial <= solver.closing_radius:
            return None, None
        q, counts, fabrik_error = self.pose_angles(tree, start, goal, rotation, deadline)
        # The whole arm's solve goes on with the iterations left, and its own restarts.
        spent = _Steps(counts[0], counts[1], 0, 0.0, math.nan, [], [] if trace else None,
                       solver.clock() >= deadline)
        if q is None:
            return None, spent
        state = tree.sweep(q, _ORIGIN)
        objective = math.dist(goal, state.points[tree.effectors[0].point]) ** 2 \
            + orientations.squares(state)[0]
        result = solver._result(state, tree, targets, rotations, _Steps(
            *counts, initial, fabrik_error,
            [math.sqrt(distance * distance + turned), math.sqrt(objective)],
            [np.array(start.q), np.array(state.q)] if trace else None, False), orientations)
        return (result, None) if result.reached else (None, spent)


class _Wrist(_Split):
    """
    A spherical wrist (fabrik_ros.wrist): the pose split at the wrist centre.

    The tool's target pose puts the wrist centre at one point: the arm above the wrist
    reaches it (a position solve of its own: FABRIK and closing steps on three joints of a
    six-joint arm), then the wrist turns the tool onto the target orientation in closed
    form, the solution nearest the seed ('full'), or points the tool axis along the
    target's with the last wrist joint at its seed ('axis': where the centre lies on the
    tool axis, which then fixes it). The tool's position error is then the centre's, its
    orientation error rounding. None where the centre lies beyond the arm's reach or is not
    reached within _WRIST_RESTARTS restarts, or the wrist's limits allow neither solution on
    the arm's branches tried (the attempts take at most half of max_iterations).
    """

    def __init__(self, solver: IkSolver, arm: IkSolver, centre: tuple[float, float, float],
                 axes: list[tuple[float, float, float]], zero: tuple[float, ...]) -> None:
        super().__init__(solver)
        self.arm = arm              # the joints above the wrist, tipped at its centre
        self.centre = centre        # metres, the wrist centre in the tool frame
        self.axes = axes            # the wrist's axes in the canonical frame of the joint
        #                             above it, wrist at zero
        self.zero = zero            # the tool frame in that frame, wrist at zero
        # A pointed tool ('axis'): its axis in the tool frame and in that frame.
        self.tool_axis = solver.tool_axes[0] if solver.orientation_modes[0] == 'axis' \
            else None
        self.along = _apply(zero, self.tool_axis) if self.tool_axis else None
        self.k = arm.chain.dof      # the wrist's first joint
        self.branches = arm._restart_seeds[:_WRIST_BRANCHES]  # seeds of other arm branches
        effector = arm._tree.effectors[0]
        # The arm's fixed point and its reach: a centre farther away is out of reach.
        self.anchor, self.reach = arm._tree.neutral.points[effector.anchor], effector.reach

    @classmethod
    def of(cls, solver: IkSolver, max_restarts: int) -> _Wrist | None:
        """Return the split for the solver's chain, None if it has no such wrist."""
        split = split_at_wrist(solver.chain, solver.tolerance,
                               solver.tool_axes[0] if solver.orientation_modes[0] == 'axis'
                               else None)
        if split is None:
            return None
        arm = IkSolver(split.arm, solver.tolerance, solver.max_iterations, fit=solver.fit,
                       fabrik_gain=solver.fabrik_gain,
                       max_restarts=min(max_restarts, _WRIST_RESTARTS), clock=solver.clock)
        # A joint's canonical frame is its parent's times its rotation at zero, turned about
        # its z axis; the product of the wrist's rotations at zero carries its axes.
        frame, axes = _IDENTITY, []
        for joint in solver._tree.joints[arm.chain.dof:]:
            frame = _product(frame, joint.rotation)
            axes.append((frame[2], frame[5], frame[8]))
        return cls(solver, arm, split.centre, axes,
                   _product(frame, solver._tree.effectors[0].tool))

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """Return the arm's angles to the centre and the wrist's; see _Split.pose_angles."""
        solver, k = self.solver, self.k
        counts = [0, 0, 0]
        # The centre lies on the tool axis when pointing, where any roll puts it alike.
        x, y, z = _apply(rotation, self.centre)
        centre = goal[0] + x, goal[1] + y, goal[2] + z
        if math.dist(centre, self.anchor) > self.reach + solver.tolerance:
            return None, counts, math.nan
        if self.tool_axis is None:
            turn = _turn(rotation, self.zero)
        else:
            toward = _apply(rotation, self.tool_axis)
        lower, upper = self.lower[k:], self.upper[k:]
        # From the seed's branch, then from others where the wrist's limits rule it out.
        for attempt, seed in enumerate([start.q[:k]] + self.branches):
            # At most half the iterations, so that the whole arm's solve keeps the rest.
            self.arm.max_iterations = solver.max_iterations // 2 - counts[0] - counts[1]
            budget = None
            if deadline < math.inf:
                budget = deadline - solver.clock()
            if self.arm.max_iterations < 1 or budget is not None and budget <= 0.0:
                break
            arm = self.arm.solve(centre, seed, timeout=budget)
            counts = [counts[0] + arm.fabrik_iterations, counts[1] + arm.closing_steps,
                      counts[2] + arm.restarts + (attempt > 0)]
            if not arm.reached:
                break
            q = arm.q.tolist()
            above = _transposed(tree.sweep(q + start.q[k:], _ORIGIN).frames[k - 1])
            #       (the frame of the joint above the wrist, which the wrist leaves put)
            angles = wrist_angles(self.axes, _product(above, turn), start.q[k:], lower,
                                  upper) if self.tool_axis is None else wrist_pointing(
                self.axes, self.along, _apply(above, toward), start.q[k:], lower, upper)
            if angles is not None:
                return q + angles, counts, arm.fabrik_error
        return None, counts, math.nan


class _OffsetWrist(_Split):
    """
    An arm of the UR family (fabrik_ros.wrist.offset_wrist): full poses in closed form.

    Its eight solutions (shoulder, wrist and elbow either way) are exact; the one nearest
    the seed within the limits is the answer, None where there is none (out of reach, or
    the sixth axis along the parallel ones: a singularity).
    """

    def __init__(self, solver: IkSolver, arm: OffsetWrist) -> None:
        super().__init__(solver)
        self.arm = arm

    @classmethod
    def of(cls, solver: IkSolver) -> _OffsetWrist | None:
        """Return the closed form for the solver's chain, None if it is not such an arm."""
        arm = offset_wrist(solver.chain, solver.tolerance) \
            if solver.orientation_modes[0] == 'full' else None
        return cls(solver, arm) if arm is not None else None

    def pose_angles(self, tree: _Tree, start: _State, goal: tuple[float, float, float],
                    rotation: tuple[float, ...], deadline: float
                    ) -> tuple[list[float] | None, list[int], float]:
        """Return the closed form's angles; see _Split.pose_angles."""
        return (offset_wrist_angles(self.arm, goal, rotation, start.q, self.lower, self.upper),
                [0, 0, 0], math.nan)


def _independent_groups(moves: np.ndarray) -> tuple[_Group, ...]:
    """
    Return the effectors in groups that share no joint: independent sub-problems.

    moves: (m, n) bool, which independent joints move each effector (Chain.moves_effector).
    """
    groups: list[tuple[set[int], set[int]]] = []
    for effector, row in enumerate(moves):
        effectors, coordinates = {effector}, set(np.flatnonzero(row).tolist())
        for other in [group for group in groups if group[1] & coordinates]:
            groups.remove(other)
            effectors |= other[0]
            coordinates |= other[1]
        groups.append((effectors, coordinates))
    return tuple(sorted(_Group(tuple(sorted(e)), tuple(sorted(c))) for e, c in groups))


@functools.lru_cache(maxsize=_KEPT_LAYOUTS)
def _pass_layout(groups: tuple[_Group, ...]
                 ) -> tuple[tuple[int, ...], tuple[_Group, ...], tuple[int, ...]]:
    """
    Return a pass's effectors (sorted), its groups in their numbering and its coordinates.

    The same few sets of groups come back solve after solve: each is laid out once.
    """
    effectors = tuple(sorted(effector for group in groups for effector in group.effectors))
    local = {effector: index for index, effector in enumerate(effectors)}
    return (effectors, tuple(_Group(tuple(map(local.__getitem__, group.effectors)),
                                    group.coordinates) for group in groups),
            tuple(sorted(c for group in groups for c in group.coordinates)))


class _Solve:
    """
    One pass of an IkSolver.solve call: the goals, the stages, the counters and the history.

    A pass solves some groups of effectors (see _Group); the others keep their joints.

    The solver minimises sum w_i d_i^2 over the goals (effectors with a target, and those
    holding their pose; d_i metres, w_i weights). `floors` are lower bounds of each d_i:
    the distance by which a target lies beyond its effector's reach. FABRIK's gain, the
    closing step's damping and its stall test are measured on the excess over them, per
    effector, so unreachable targets converge like reachable ones.

    goals, weights, floors: per effector of the chain; the pass takes its groups' share.
    rest: the pose of the joints the pass does not own (moving the other groups, or no
    effector) and the other groups' objective, for the history and the final pose.
    previous: the pass before (its counters, history and budget go on here), or what a
    split solve spent before it (see _Split). fits: per joint, the points FABRIK's passes
    fit it to (see _Tree.whole_fit); retry_fits: those of the restarts (default: fits).
    """

    def __init__(self, solver: IkSolver, groups: tuple[_Group, ...],
                 goals: list[tuple[float, float, float]],
                 weights: list[float], floors: list[float],
                 stretch: dict[int, tuple[float, float, float]],
                 fits: list[_Fit], free_root: bool, rest: tuple[list[float], float],
                 trace: bool, deadline: float, previous: _Solve | _Steps | None = None,
                 orientations: _Orientations | None = None,
                 retry_fits: list[_Fit] | None = None) -> None:
        self.solver = solver
        self.orientations = orientations
        self.tree = solver._tree if orientations is None else orientations.tree
        effectors, self.groups, self.owned = _pass_layout(groups)
        self.effectors = effectors
        self.goals = [goals[i] for i in effectors]
        self.weights = [weights[i] for i in effectors]
        self.goal_points = [self.tree.effectors[i].point for i in effectors]
        self.floors = [floors[i] for i in effectors]
        self.out_of_reach = any(self.floors)
        # One effector's position on a pinned root: restarts start from the workspace map
        # (IkSolver._mapped_seed), and Newton's steps (_newton_step) apply.
        self.mappable = len(effectors) == 1 and orientations is None and not free_root
        self.newton_able = self.mappable \
            and len(self.tree.effectors[effectors[0]].joints) <= _NEWTON_JOINTS
        self.stretch = stretch
        self.fits = fits
        self.retry_fits = fits if retry_fits is None else retry_fits
        self.free_root = free_root
        self.deadline = deadline
        # FABRIK's backward pass also pulls the tools' markers, weighing what their tools do.
        self.reach_points, self.reach_goals = self.goal_points, self.goals
        point_weights = self.weights
        if orientations is not None:
            markers = self.tree.effectors[self.tree.tools:]
            self.reach_points = self.goal_points + [marker.point for marker in markers]
            self.reach_goals = self.goals + orientations.goals
            point_weights = self.weights + [weights[owner] for owner in
                                            self.tree.marker_owners]
        self._reach_weights = point_weights
        self.rest_q, self.rest_objective = rest
        # Restarts are decided on the effectors whose group has no target out of reach.
        self.judged = [index for group in self.groups
                       if not any(self.floors[i] for i in group.effectors)
                       for index in group.effectors]
        self._best: _State | None = None
        self._best_q: list[float] = []
        self.hold = 0.0     # metres, see _accept
        self._best_base = (0.0, 0.0, 0.0)
        self.best_fit = _Score(math.inf, math.inf, math.inf, [], math.inf,
                               (math.inf,) * len(groups))
        self.initial_miss = math.nan   # metres, Score.miss at the pass's seed
        self._point_weights: list[float] | None = None
        self._system: tuple[_State | None, tuple | None] = (None, None)  # see _newton_system
        if previous is None:
            self.timed_out = False
            self.fabrik_iterations = self.closing_steps = self.restarts = 0
            self.initial_error = 0.0
            self.fabrik_error = math.nan
            self.history: list[float] = []
            self.trace: list[np.ndarray] | None = [] if trace else None
        else:
            for name in ('timed_out', 'fabrik_iterations', 'closing_steps', 'restarts',
                         'initial_error', 'fabrik_error', 'history', 'trace'):
                setattr(self, name, getattr(previous, name))

    def pose(self) -> list[float]:
        """Return the best pose: the pass's joints from its best, the others from rest."""
        q = list(self.rest_q)
        for coordinate in self.owned:
            q[coordinate] = self._best_q[coordinate]
        return q

    def final(self) -> _State:
        """Return the best pose of the whole solve, with its forward kinematics."""
        q = self.pose()
        return self.best if q == self._best_q else self.tree.sweep(q, self._best_base)

    @property
    def point_weights(self) -> list[float]:
        """Return per point the weight below it (FABRIK's passes only: tracking skips them)."""
        if self._point_weights is None:
            self._point_weights = self.tree.subtree_weights(self.reach_points,
                                                            self._reach_weights)
        return self._point_weights

    @property
    def best_error(self) -> float:
        """Return the best pose's largest goal distance, metres."""
        return self.best_fit.error

    def has_budget(self) -> bool:
        """Tell whether iterations and time are left; note when the time ran out."""
        if self.timed_out or \
                self.fabrik_iterations + self.closing_steps >= self.solver.max_iterations:
            return False
        if self.solver.clock() >= self.deadline:
            self.timed_out = True
        return not self.timed_out

    @property
    def best(self) -> _State:
        """Return the best pose (its forward kinematics computed once it is asked for)."""
        if self._best is None:
            self._best = self.tree.sweep(self._best_q, self._best_base)
        return self._best

    def measure(self, state: _State) -> _Score:
        """Return how well the state meets the goals."""
        points = state.points
        goals = self.goals
        distances = [math.dist(goals[0], points[self.goal_points[0]])] if len(goals) == 1 \
            else [math.dist(goal, points[p]) for goal, p in zip(goals, self.goal_points)]
        return self.score(distances,
                          self.orientations.squares(state) if self.orientations else ())

    def score(self, distances: list[float], turned: Sequence[float] = ()) -> _Score:
        """
        Return how well a pose whose effectors are `distances` from their goals does.

        turned: the squared orientation errors as metres^2 (see _Orientations); they count
        in the objective, the error and the excess with weight 1.
        """
        if len(distances) == 1:     # one effector (most solves, every iteration): the same
            (distance,), (weight,), (floor,) = distances, self.weights, self.floors
            objective = weight * (distance * distance) + sum(turned)
            error = distance if not turned else max(distance, math.sqrt(max(turned)))
            if floor:
                excess = math.sqrt(weight * max(distance - floor, 0.0) ** 2 + sum(turned))
                return _Score(objective, error, max(excess, 1e-15), distances, 0.0, ())
            return _Score(objective, error, max(math.sqrt(objective), 1e-15), distances, error,
                          ())
        terms = list(map(mul, self.weights, map(mul, distances, distances)))
        objective = sum(terms) + sum(turned)
        shares = ()
        if len(self.groups) > 1:
            shares = tuple(sum(terms[i] for i in group.effectors) for group in self.groups)
        error = max(distances)
        if turned:
            error = max(error, math.sqrt(max(turned)))
        if self.out_of_reach:
            excess = math.sqrt(sum(w * max(d - f, 0.0) ** 2 for w, d, f
                                   in zip(self.weights, distances, self.floors)) + sum(turned))
            miss = max((distances[i] for i in self.judged), default=0.0)
        else:
            excess, miss = math.sqrt(objective), error
        return _Score(objective, error, max(excess, 1e-15), distances, miss, shares)

    def _accept(self, state: _State, fit: _Score) -> None:
        """
        Keep the state if it is the best so far; log the best error (and pose).

        Groups of effectors that share no joint are independent: where the state is better
        for some groups only, their joints are taken into the best pose, the others kept.
        A hold (metres, see IkSolver._restart) keeps the best pose of one group against
        states that neither reach the targets nor come closer by more than it.
        """
        best = self.best_fit
        better = [group for group, share, best_share in zip(self.groups, fit.shares, best.shares)
                  if share < best_share] if len(self.groups) > 1 else ()
        if 0 < len(better) < len(self.groups):
            q, distances = list(self._best_q), list(best.distances)
            for group in better:
                for coordinate in group.coordinates:
                    q[coordinate] = state.q[coordinate]
                for effector in group.effectors:
                    distances[effector] = fit.distances[effector]
            self._best_q, self._best, self.best_fit = q, None, self.score(distances)
        elif fit.objective < best.objective and (not self.hold or fit.miss < best.miss - self.hold
                                                 or fit.error <= self.solver.tolerance):
            self._best_q, self._best_base, self._best, self.best_fit = \
                state.q, state.base, state, fit
        self.history.append(math.sqrt(self.best_fit.objective + self.rest_objective))
        if self.trace is not None:
            self.trace.append(np.array(self.pose()))

    def attempt(self, state: _State, polish: bool = False, band: float = 0.0,
                confirms: bool = False) -> float:
        """
        Run FABRIK, then closing steps, from one seed state, within the solve's budget.

        polish: closing steps only, until they stall strictly (see _EXPLORE_STALL); Newton
        steps where they apply (see _newton_step). band: metres, given to restarts; below it
        the attempt has come back to the best residual: closing steps that creep
        (_CONFIRM_STALL) end it. confirms: the restart counts toward unreachable_after; then
        within reach a FABRIK stage that ends below the band without improving on the best
        pose ends it too. Returns _Score.miss (metres) where the attempt ended.
        """
        solver = self.solver
        tolerance = solver.tolerance
        fit = self.measure(state)
        if math.isnan(self.initial_miss):
            self.initial_miss = fit.miss
            self.initial_error = max(self.initial_error, fit.error)
        if not polish:      # a polish starts from the best pose, logged already
            self._accept(state, fit)
        # Out of reach, FABRIK's fit to the straight line goes all the way itself.
        closing_radius = solver.closing_radius if not self.stretch else 0.0
        fits = self.retry_fits if self.restarts else self.fits
        if fit.excess > closing_radius and not polish:
            while self._open(fit) and self.has_budget():
                fixed = self.stretch
                if self.orientations is not None:   # the tools' rigid bodies, then stretch
                    fixed = {**self.orientations.placed(state, self.goals), **self.stretch}
                desired, base = self.tree.reach_back(state, self.reach_points, self.reach_goals,
                                                     fixed, self.free_root, self.point_weights)
                candidate = self.tree.sweep(state.q, base, desired, state, fits)
                new_fit = self.measure(candidate)
                if new_fit.objective >= fit.objective:
                    break
                gain = new_fit.excess / fit.excess
                state, fit = candidate, new_fit
                self.fabrik_iterations += 1
                self._accept(state, fit)
                if gain > solver.fabrik_gain or fit.excess <= closing_radius:
                    break
        if math.isnan(self.fabrik_error):
            self.fabrik_error = fit.error
        if confirms and not self.stretch and self.best_fit.miss < fit.miss < band:
            # A restart back at the best residual confirms it as it is: its closing steps
            # would creep down to about the same floor (the demo arm's holes: 0.94x the
            # time). One that improved on the best goes on, to see how far; so do the
            # restarts of a solve that runs them all (they confirm nothing, and a floor a
            # little below the best pose's is worth their steps).
            return fit.miss
        # Trees keep Gauss-Newton: with held effectors the exact optimum of the weighted
        # objective trades held drift for the far effector's last micrometres.
        newton = polish and self.newton_able
        damping = _NEWTON_DAMPING_START if newton else _DAMPING_START
        closing = 0
        # Out of reach the first attempt stops early like an explored one: the nudged retry
        # (see IkSolver._explore) and the polish after it converge strictly (stopping them
        # early too left a worse basin for 6 % of far targets on offset_arm, up to 18 mm).
        explore = 0.0 if polish or (self.stretch and self.restarts) else _EXPLORE_STALL
        while self._open(fit) and self.has_budget():
            if newton:
                step = self._newton_step(state, fit, damping)
            else:
                # The first attempt's first closing step also steers the redundancy away
                # from limits; once restarts run, none does: they start from elsewhere, and
                # in the demo arm's holes 3 in 4 of their pushes cost more than the step
                # gained, a try in vain each.
                step = self._closing_step(state, fit, damping,
                                          steer=closing == 0 and not self.restarts)
            if step is None:
                break
            previous, (state, new_fit, used) = state, step
            # Out of reach the damping a step needed suits the next one too (the residual
            # changes little): dropping it tenfold would cost a rejected step every time.
            # For one effector Gauss-Newton's model is poor there (it drops the residual's
            # curvature): after a step at the damping it started with, the damping only
            # halves. (Effectors sharing joints keep the tenfold drop: converging further,
            # the weighted compromise let held tools drift 4x as far.)
            if self.stretch and used > damping:
                damping = used
            elif self.stretch and not newton and len(self.effectors) == 1:
                damping = max(used * _STRETCH_DAMPING_DROP, _DAMPING_MIN)
            else:
                damping = max(used * 0.1, _NEWTON_DAMPING_MIN if newton else _DAMPING_MIN)
            gained = fit.excess - new_fit.excess
            excess, error = fit.excess, fit.error
            fit = new_fit
            closing += 1
            self.closing_steps += 1
            self._accept(state, fit)
            if explore and fit.miss < band:
                explore = _CONFIRM_STALL
            stall = explore
            if self.orientations is not None and explore and closing > 1 \
                    and fit.error > solver.restart_error:
                stall = max(explore, _POSE_STALL)
            saddle = self.stretch and fit.excess > _SADDLE_EXCESS * solver.reach
            if saddle:
                stall = 0.0     # maybe a saddle: the nudged retry must start from it
            # Out of reach Gauss-Newton creeps (each step gains a small fraction of the
            # excess: the residual term it drops): a strict attempt goes on with Newton's
            # steps where they go the same way, quadratic where the creep could spend the
            # iteration cap before the polish (a long two-axis chain stopped 0.8 mm short).
            if not (explore or newton or saddle) and self.newton_able and self.stretch \
                    and gained < _CREEP * excess and self._newton_continues(
                        state, list(map(sub, state.q, previous.q))):
                newton, damping = True, _NEWTON_DAMPING_START
                continue
            if gained < _STALL * tolerance + _STALL_RELATIVE * error + stall * excess:
                break
        return fit.miss

    def _open(self, fit: _Score) -> bool:
        """Tell whether a target is missed by more than the tolerance and can be neared."""
        return fit.error > self.solver.tolerance and fit.excess > _STALL * self.solver.tolerance

    def _newton_step(self, state: _State, fit: _Score, damping: float
                     ) -> tuple[_State, _Score, float] | None:
        """
        Take one damped Newton step on the objective, with its exact Hessian, within limits.

        Gauss-Newton (_closing_step) drops the Hessian's residual term (see _Tree.hessian),
        which out of reach is as large as the term it keeps: its steps then shrink
        geometrically, a linear creep down the residual. With that term the steps converge
        quadratically to the closest pose the joints allow. Joints at a limit that the
        descent pushes outward stay there; the damping, a multiple of the Hessian's largest
        diagonal entry, also keeps an indefinite Hessian (a saddle) positive definite.
        Returns as _closing_step does; None also when the step would change no more than the
        objective's last digits (_NEWTON_STALL). One effector's position target on a pinned
        root (see attempt).
        """
        system = self._newton_system(state)
        if system is None:
            return None
        free, hessian, gradient, scale = system
        tree, q = self.tree, state.q
        lower, upper = self.solver._lower, self.solver._upper
        least = _NEWTON_STALL * fit.objective
        while damping <= _DAMPING_MAX:
            try:
                step = _shifted_solve(hessian, gradient, damping * scale)
            except _NOT_POSITIVE_DEFINITE:
                damping *= 10.0
                continue
            if sum(map(mul, step, gradient)) < least:  # about the model's gain: converged
                return None
            full_step = [0.0] * len(q)
            for j, change in zip(free, step):
                full_step[j] = change
            moved, held = _clamped(q, full_step, lower, upper)
            if held:
                # Those joints stop at their limit and the others' step is solved again
                # without them (as for closing steps, IkSolver._limited_step): clamped alone,
                # the step left Newton's direction, the damping rose until no joint reached
                # the limit, and the polish crept (a random chain's stopped 5 um short).
                moved = _held_newton_step(q, moved, held, free, hessian, gradient,
                                          damping * scale, lower, upper)
            candidate = tree.sweep(moved, state.base)
            new_fit = self.measure(candidate)
            if new_fit.objective < fit.objective:
                return candidate, new_fit, damping
            damping *= 10.0
        return None

    def _newton_system(self, state: _State
                       ) -> tuple[list[int], list[list[float]], list[float], float] | None:
        """
        Return Newton's system at a state, or None when no joint is free (see _newton_step).

        The free joints (the pass's, but those at a limit the descent pushes them past), over
        them half the objective's Hessian and minus half its gradient (_Tree.hessian: the
        lower triangle by rows, and J^T W r), and the Hessian's largest diagonal entry.
        The last state's system is kept: the basin tests (_basin_step) ask for the system
        of the state Newton's next step starts from.
        """
        if self._system[0] is state:
            return self._system[1]
        (index,), (goal,), (weight,) = self.effectors, self.goals, self.weights
        descent, full = self.tree.hessian(state, index, weight, goal)
        system = _free_system(state.q, self.owned, descent, full, self.solver._lower,
                              self.solver._upper)
        self._system = (state, system)
        return system

    def _newton_continues(self, state: _State, last: list[float]) -> bool:
        """
        Tell whether Newton's steps would go on the way the last step went (`last`, radians).

        The state must be in a basin (_basin_step), and Newton's step must not turn back:
        on a flat ridge (an arm's wrist roll out of reach) Newton's model heads for the
        stationary point behind, where Gauss-Newton's creep went on to a closer pose.
        """
        basin = self._basin_step(state)
        return basin is not None and sum(change * last[j] for j, change in zip(*basin)) > 0.0

    def at_floor(self) -> bool:
        """
        Tell whether the best pose out of reach lies in a basin, not on a possible saddle.

        Within _SADDLE_EXCESS of the reach above its floor, with the objective curving up in
        every free direction (_basin_step): a retry nudged off it came back to it (far
        targets: the polish from it alone took 0.6-0.85x the time, on the demo arm 3 of 600
        ended up to 0.44 mm farther, none farther on the UR5 or the tentacle).
        """
        return self.newton_able and self.best_fit.excess <= _SADDLE_EXCESS * self.solver.reach \
            and self._basin_step(self.best) is not None

    def settles_in_basin(self) -> bool:
        """
        Tell whether the best pose out of reach lies in a basin, polishing it first if it may.

        The first attempt stops early, where the objective may still curve down although
        Newton's steps from there lead to a basin's floor: the best pose is polished now and
        at_floor asked again (the demo arm's far targets: 0.77x the time, 9 of 900 closer
        and 4 farther, by up to 1 mm). Also where it curves down clearly: a chain fitted
        whole stops on the slope into its basin, not on a saddle (the UR5's far targets: 83 %
        of them took the nudged retry without this polish, none with it, the same answers).
        On a saddle itself the polish stays put and the retry follows.
        """
        if not self.newton_able or self.best_fit.excess > _SADDLE_EXCESS * self.solver.reach:
            return False    # (at_floor's conditions too)
        if self._basin_step(self.best) is not None:
            return True
        self.attempt(self.best, polish=True)
        return self.at_floor()

    def _basin_step(self, state: _State) -> tuple[list[int], list[float]] | None:
        """
        Return the free joints and Newton's step at a state, or None if it is no basin.

        A basin: the objective curves up in every free direction (no curvature below minus
        _CONVEX_SHIFT of the Hessian's largest diagonal entry), so Newton's steps lead down
        to its floor.
        """
        system = self._newton_system(state)
        if system is None:
            return None
        free, hessian, gradient, scale = system
        try:
            return free, _shifted_solve(hessian, gradient, _CONVEX_SHIFT * scale)
        except _NOT_POSITIVE_DEFINITE:
            return None

    def _closing_step(self, state: _State, fit: _Score, damping: float, steer: bool
                      ) -> tuple[_State, _Score, float] | None:
        """
        Take one Levenberg-Marquardt step on the true kinematics, within the limits.

        Joints the step would push past a limit are held at it and the step is re-solved
        without them. steer: also push joints near a limit back toward mid-range where the
        targets leave the freedom (the null space of the position Jacobian). Returns
        (state, its fit, the damping that lowered the objective), or None if no damping up to
        _DAMPING_MAX lowers it. Each effector's rows and residual are scaled by the root of
        its weight.
        """
        tree = self.tree
        rows = tree.jacobian(state, self.free_root, self.effectors)
        # Aim each effector at most its excess over its floor toward its target: for a
        # target out of reach the linear model is only good for that far, not for the
        # whole distance (and the others' residuals are not shrunk with it).
        residual = []
        for index, (goal, point, weight, distance, floor) in enumerate(zip(
                self.goals, self.goal_points, self.weights, fit.distances, self.floors)):
            shrink = math.sqrt(weight)
            if floor:
                shrink *= max(distance - floor, 0.0) / distance
            if weight != 1.0:
                for row in rows[3 * index:3 * index + 3]:
                    row[:] = [value * math.sqrt(weight) for value in row]
            (gx, gy, gz), (x, y, z) = goal, state.points[point]
            residual += (shrink * (gx - x), shrink * (gy - y), shrink * (gz - z))
        if self.orientations is not None:
            self.orientations.extend(state, rows, residual)
        n = len(state.q)
        scale = fit.excess ** 2
        # No redundancy (a full pose for six joints): limit steering would only slow the
        # step down (weights) and cost error (the push). Position-only solves keep theirs.
        square = self.orientations is not None and len(rows) >= len(rows[0])
        weights, push = ([], []) if self.out_of_reach or square else \
            self.solver._limit_steering(state.q, rows, residual, steer)
        # The push is added to the step and taken out of what the step must achieve.
        aim = _pushed(rows, residual, push) if push else residual
        floor = _DAMPING_FLOOR if self.orientations is None else _POSE_DAMPING_FLOOR
        while damping <= _DAMPING_MAX:
            mu = max(damping * scale, floor)
            q, step = self.solver._limited_step(state.q, rows, aim, weights, push, mu)
            base = state.base
            if self.free_root:
                base = (base[0] + step[n], base[1] + step[n + 1], base[2] + step[n + 2])
            candidate = tree.sweep(q, base)
            new_fit = self.measure(candidate)
            if new_fit.objective < fit.objective:
                return candidate, new_fit, damping
            if push:  # the push cost more than the step gained: once more without it
                push, aim = [], residual
                continue
            damping *= 10.0
        return None
