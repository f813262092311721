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
The tree's forward-kinematics sweep compiled to straight-line code, plain or fitting.

The fitting sweep is FABRIK's root-to-tip pass: each deciding joint's angle (or slide) is
fitted in closed form to the desired points, clamped into its limits, and the frame
composed, so angles and positions stay consistent with forward kinematics.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
import math
from typing import TYPE_CHECKING

from .kernels import (_fit_source, _hessian_source, _moment_sums, _pose_rows_source,
                      _pose_step_source, _position_step_source, _rows_source,
                      _steered_step_source, _turns_source)
from .limits import _fitted_slide, _limited_angle
from .moves import _position_move_source
from .points import _Fit, _Joint, _State
from .rotations import _IDENTITY, _TWO_PI
from .tuning import COMPILED_PAIRS, COMPILED_PRODUCTS, MOMENT_POINTS, ON_AXIS
from .writer import _source, _SweepWriter, _times

if TYPE_CHECKING:
    from .model import _Tree

# Two kernels of one effector: a full pose's rows and step, a position's step plain and
# steered (None where there is none).
_Pair = tuple[Callable | None, Callable | None]


def _moved(writer: _SweepWriter, h: list[float | str], origin: list[float | str],
           angle: float | str, prismatic: bool) -> tuple[list[float | str], list[float | str]]:
    """
    Return a joint's rotation and origin at `angle` (or slide), from its frame at zero.

    h: the joint's canonical rotation at zero (row-major 9); the angle turns its x and y
    columns, a slide moves the origin along its z column.
    """
    if prismatic:
        return h, [writer.value([(1.0, origin[r])] + ([(angle, h[3 * r + 2])]
                                                      if isinstance(angle, float) else
                                                      [_times(angle, h[3 * r + 2])]))
                   for r in range(3)]
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
    return frame, origin


def _kernel_lines(tree: _Tree, frames: list[list[float | str]], oriented: bool,
                  forward: list[str]) -> list[str]:
    """
    Return the source of the kernels beside plain FK: rows, Hessians, turns (see below).

    forward: plain FK's lines after its unpacking of q (into q0, q1, ...), to its return.
    """
    lines: list[str] = []
    for index, effector in enumerate(tree.effectors):
        lines += _rows_source(tree, index, effector, frames)
        if not oriented and len(effector.joints) * (len(effector.joints) + 1) // 2 \
                <= COMPILED_PAIRS:
            lines += _hessian_source(tree, index, effector, frames)
        if not oriented and len(tree.effectors) == 1 and 6 * len(tree.lower) \
                <= COMPILED_PRODUCTS:   # a single effector's lean steps, as linalg solves
            lines += _position_step_source(tree, index, effector, frames)
            lines += _steered_step_source(tree, index, effector, frames)
            lines += _position_move_source(tree, index, effector, frames, forward)
        if oriented and index < tree.tools:
            lines += _turns_source(tree, index, effector, frames)
            lines += _pose_rows_source(tree, index, effector, frames)
            if 21 * len(tree.lower) <= COMPILED_PRODUCTS:   # as linalg's compiled solve
                lines += _pose_step_source(tree, index, effector, frames)
    return lines


def _compiled_sweep(tree: _Tree, fits: list[_Fit] | None = None, old: _State | None = None
                    ) -> tuple[Callable[..., tuple[list, list, list]], list[Callable],
                               list[Callable], list[Callable], list[_Pair], list[_Pair],
                               list[Callable | None]]:
    """
    Return the tree's sweep compiled to a function (see _SweepWriter and _Tree.sweep).

    Plain FK comes with per effector its Jacobian's rows (_rows_source) and its objective's
    Hessian (_hessian_source; None beyond COMPILED_PAIRS and in trees with marker points),
    and in trees with marker points (orientation solves) per tool its orientation rows
    (_turns_source) and its full pose's kernels: its six rows (_pose_rows_source) and its
    damped step (_pose_step_source, None where linalg solves that size with numpy), and
    in a tree of one effector without them its position rows' damped step, plain and
    steered ((_position_step_source, _steered_step_source), else (None, None)), and the
    FK of that step added to the joints in their limits (_position_move_source, or None).

    Without fits: forward(q, base) -> (q, frames, points), plain FK; the frames are per
    joint (canonical rotation, row-major 9, origin 3), the base's last. With fits:
    fitting(q, base, old_frames, old_points, desired), where each deciding joint's angle
    (or slide) is first fitted to the desired points (FABRIK's root-to-tip pass): point by
    point for short runs of fit points, from moment sums for long ones (_fit_source), with
    none of the kernels ([], [], [], [], [], []); old: the one state it is for, its own terms
    constants (see _fit_source), or None for any.
    """
    n_q = len(tree.lower)
    fitting = fits is not None
    writer = _SweepWriter('def fitting(q, base, old_frames, old_points, desired):' if fitting
                          else 'def forward(q, base):')
    coordinates = [f'q{c}' for c in range(n_q)]
    writer.lines += [f'    [{", ".join(coordinates)}] = q', '    bx, by, bz = base']
    moments, twins, kept = _fitting_head(tree, fits, old, writer.lines) if fitting \
        else ({}, {}, {})
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
            writer.lines += _decided(j, joint, angle, h, origin, fits[j], moments.get(j), held,
                                     old, twins, kept.get(j), _turned(tree, j, fits[j], old))
            angle = position(joint)
        frame, origin = _moved(writer, h, origin, angle, joint.prismatic)
        frames.append(frame + origin)
        points[joint.point] = origin
    for parent, point, offset in tree.effector_links:
        points[point] = placed(parent, offset)
    writer.lines.append(f'    return [{", ".join(coordinates)}], '
                        f'[{", ".join(map(_source, frames + [base_frame]))}], '
                        f'[{", ".join(map(_source, points))}]')
    oriented = any(tree.markers)  # orientation solves take no Newton steps
    if not fitting:
        writer.lines += _kernel_lines(tree, frames, oriented, writer.lines[2:])
    namespace = {'chain': chain, 'cos': math.cos, 'sin': math.sin, 'atan2': math.atan2,
                 'sqrt': math.sqrt, 'remainder': math.remainder, 'inf': math.inf,
                 'limited_angle': _limited_angle, 'fitted_slide': _fitted_slide,
                 'lower': tree.lower, 'upper': tree.upper}
    kind = 'forward' if not fitting else 'fitting' if old is None else 'neutral fitting'
    name = f'<fabrik_ros {kind} sweep, {len(tree.joints)} joints>'
    exec(compile('\n'.join(writer.lines), name, 'exec'), namespace)
    if fitting:
        return namespace['fitting'], [], [], [], [], [], []
    return (namespace['forward'],) + _kernels(namespace, tree, oriented)


def _decided(j: int, joint: _Joint, angle: float | str, h: list[float | str],
             origin: list[float | str], fit: _Fit, sums: list[str] | None,
             held: dict[str, tuple[str, int]], old: _State | None, twins: dict[int, int],
             bound: float | None, turned: _State | None = None) -> list[str]:
    """
    Return the lines that fit a deciding joint (_fit_source) and set its coordinate.

    bound: where the joint is kept (see _fitting_head), the fit runs only where `far`
    exceeds it; the locals it computes are then not held for the joints after it.
    turned: for a kept joint, the state whose points stand for its child's bending
    direction (see _turned): the joint is fitted to them instead, modulo a half turn.
    """
    lines = _fit_source(j, joint, angle, h, origin, fit, sums,
                        held if bound is None else dict(held), old, twins)
    keep = [f'    fitted = {_source([angle])[1:-1]}']
    if turned is not None and bound is not None:   # `inside`: see _fitting_head
        keep = ['    if inside:'] + ['    ' + line.replace(f', {_TWO_PI!r})', f', {math.pi!r})')
                                     for line in _fit_source(j, joint, angle, h, origin, fit,
                                                             None, dict(held), turned)] \
            + ['    else:', '    ' + keep[0]]
    if bound == math.inf:   # exactly on the axis
        lines = keep
    elif bound is not None:
        lines = [f'    if far <= {bound!r}:'] + ['    ' + line for line in keep] \
            + ['    else:'] + ['    ' + line for line in lines]
    c, m, o = joint.coordinate, joint.multiplier, joint.shift
    return lines + [f'    q{c} = fitted' if m == 1.0 and o == 0.0 else
                    f'    q{c} = min(max((fitted - {o!r}) / {m!r}, lower[{c}]), upper[{c}])']


def _turned(tree: _Tree, j: int, fit: _Fit, old: _State | None) -> _State | None:
    """
    Return `old` with every point moved to the joint's origin plus its child's bending direction.

    From a straight pose (the neutral seed) a root joint whose fit points lie on its axis
    cannot be fitted (the fit says nothing), nor can its child bend the chain out of the
    plane it starts in, and the first pass ends far off (a second one needed). Turned to
    carry its child's bending direction (child axis x its axis) toward the desired points
    (either way: modulo a half turn), the child bends toward the target in the first pass.
    None: no `old`, not the root joint, more than one effector, no revolute child off its
    axis, or runs long enough for moment sums.
    """
    joint = tree.joints[j]
    child = next((k for k, other in enumerate(tree.joints) if other.parent == j), None)
    if old is None or child is None or len(tree.effectors) > 1 or joint.parent >= 0 \
            or joint.prismatic \
            or tree.joints[child].prismatic \
            or any(stop - first >= MOMENT_POINTS for first, stop, _ in fit):
        return None
    frame, below = old.frames[j], old.frames[child]
    ax, ay, az = frame[2], frame[5], frame[8]
    cx, cy, cz = below[2], below[5], below[8]
    bend = (cy * az - cz * ay, cz * ax - cx * az, cx * ay - cy * ax)
    if math.hypot(*bend) < 0.5:
        return None
    point = tuple(o + b for o, b in zip(frame[9:], bend))
    return old._replace(points=[point] * len(old.points))


def _fitting_head(tree: _Tree, fits: list[_Fit], old: _State | None, lines: list[str]
                  ) -> tuple[dict[int, list[str]], dict[int, int], dict[int, float]]:
    """
    Append a fitting's lines before its joints'; return its moment sums, twins and kept joints.

    The moment sums: see _moment_sums. The twins: point -> the point it sits on (an
    effector on its joint's origin, the same old point in every state the sweeps make), and
    per twin twin<point>: whether their desired points are the same floats, none of them 0
    (whose sign could differ), for _fit_source. Kept: from `old` (none without it), the
    joints whose fit keeps their angle while `far` (the largest coordinate of the desired
    points plus the base's, metres) is at most a bound (see _kept_at); where every joint that
    sums moments is kept, the sums are taken only when one of them may not be.
    """
    # Every point's old and desired coordinates, unpacked once (px<k>..., pdx<k>...).
    for name, sequence in (('', 'old_points'), ('d', 'desired'))[old is not None:]:
        names = (f'(p{name}x{k}, p{name}y{k}, p{name}z{k})' for k in range(tree.n_points))
        lines.append(f'    {", ".join(names)}, = {sequence}')
    twins = {point: tree.joints[parent].point for parent, point, offset
             in tree.effector_links if parent >= 0 and offset == (0.0, 0.0, 0.0)}
    kept = _kept_at(tree, fits, old) if old is not None else {}
    # Telling `far` costs about two points' fits: worth it only for more of them.
    tested = [j for j, bound in kept.items() if bound < math.inf]
    if sum(stop - first for j in tested for first, stop, _ in fits[j]) < _TESTED_POINTS:
        kept = {j: bound for j, bound in kept.items() if bound == math.inf}
    elif tested:
        lines.append('    far = max(map(abs, chain(*desired))) + max(map(abs, base))')
    if any(_turned(tree, j, fits[j], old) for j in kept):
        # A target within reach (not laid on FABRIK's straight line out of reach, whose
        # effector point it puts at the reach): the kept joints turn (see _turned).
        (effector,) = tree.effectors
        lines.append(f'    inside = {_distance_source(effector.point, effector.anchor)} < '
                     f'{(effector.reach * (1.0 - 1e-9)) ** 2!r}')
    summed = [j for j, fit in enumerate(fits) if any(b - a >= MOMENT_POINTS for a, b, _ in fit)]
    sums: list[str] = []
    moments = _moment_sums(fits, sums)
    if sums and all(j in kept for j in summed):
        least = min(kept[j] for j in summed)
        sums = [f'    if far > {least!r}:'] + ['    ' + line for line in sums] \
            if least < math.inf else []
    lines += sums + [f'    twin{point} = desired[{point}] == desired[{twin}] and 0.0 not in '
                     f'desired[{twin}]' for point, twin in twins.items()]
    return moments, twins, kept


def _distance_source(point: int, other: int) -> str:
    """Return the source of the squared distance of two desired points (metres squared)."""
    return ' + '.join(f'(pd{c}{point} - pd{c}{other}) * (pd{c}{point} - pd{c}{other})'
                      for c in 'xyz')


# A bound of the rounding of differences of running moment sums, per metre of the summed
# points' coordinates and of the desired points' (64 units of the last place).
_SUMS_ROUNDING = 64.0 * 2.0 ** -52
_TESTED_POINTS = 4     # fit points of the kept joints below which `far` is not told
_ROOT3 = 1.0 + 3.0 ** 0.5    # |h . x| <= sqrt(3) |x|_inf for a unit h (and rounding: 1 more)


def _kept_at(tree: _Tree, fits: list[_Fit], old: _State) -> dict[int, float]:
    """
    Return the revolute joints whose fit from `old` keeps their angle, and up to which `far`.

    Fit points on or next to a joint's axis: its fit's num and den are at most K times the
    largest coordinate of its desired points less its new origin (at most `far` plus the
    offsets and slides above the joint), K from the floats the fit multiplies: per point
    fitted point by point s w (|gx| + |gy|); per row r of the old frame, for the moment
    sums, s (|a_r0| + |a_r1|) (sum w |v_r| + |o_r| sum w), which bound M's entries, and
    their running sums' rounding (_SUMS_ROUNDING); s = 1 + sqrt(3) (_ROOT3) as H's
    columns are unit vectors. Where both are at most 0.7 ON_AXIS (below ON_AXIS / sqrt(2),
    rounding included), the fit keeps the angle: the same floats without computing them.
    Joints with a bound of at least 0 m are kept (infinite: exactly on the axis).
    """
    kept, lever = {}, [0.0] * len(tree.joints)
    for j, (joint, fit) in enumerate(zip(tree.joints, fits)):
        above = lever[joint.parent] if joint.parent >= 0 else 0.0
        slide = max(abs(joint.lower), abs(joint.upper)) if joint.prismatic else 0.0
        lever[j] = above + math.hypot(*joint.offset) + slide
        frame = old.frames[j]
        rows = [_ROOT3 * (abs(frame[3 * r]) + abs(frame[3 * r + 1])) for r in range(3)]
        k = 0.0
        for first, stop, w in fit:
            if stop - first >= MOMENT_POINTS:   # and the running sums' rounding
                k += sum(rows) * _SUMS_ROUNDING * sum(map(abs, chain(*old.points)))
            for point in range(first, stop):
                v = old.points[point]
                if stop - first >= MOMENT_POINTS:
                    k += sum(row * w * (abs(v[r]) + abs(frame[9 + r]))
                             for r, row in enumerate(rows))
                    continue
                rx, ry, rz = (p - o for p, o in zip(v, frame[9:]))
                k += _ROOT3 * w * sum(abs(a * rx + b * ry + c * rz) for a, b, c in zip(
                    frame[0:2], frame[3:5], frame[6:8]))
        bound = 0.7 * ON_AXIS / k - lever[j] if k else math.inf
        if bound >= 0.0 and joint.decides and not joint.prismatic:
            kept[j] = bound
    return kept


def _kernels(namespace: dict, tree: _Tree, oriented: bool
             ) -> tuple[list[Callable], list[Callable], list[Callable], list[_Pair],
                        list[_Pair], list[Callable | None]]:
    """Return the compiled kernels beside plain FK, as _compiled_sweep returns them."""
    effectors, tools = range(len(tree.effectors)), range(tree.tools if oriented else 0)
    return [namespace[f'rows{index}'] for index in effectors], \
        [namespace.get(f'hessian{index}') for index in effectors], \
        [namespace[f'turns{index}'] for index in tools], \
        [(namespace[f'pose_rows{index}'], namespace.get(f'pose_step{index}'))
         for index in tools], [(namespace.get(f'position_step{index}'),
                                namespace.get(f'steered_step{index}')) for index in effectors], \
        [namespace.get(f'position_move{index}') for index in effectors]
