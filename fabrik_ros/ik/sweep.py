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
import math
from typing import TYPE_CHECKING

from .kernels import (_fit_source, _hessian_source, _moment_sums, _pose_rows_source,
                      _pose_step_source, _position_step_source, _rows_source,
                      _steered_step_source, _turns_source)
from .limits import _fitted_slide, _limited_angle
from .points import _Fit, _Joint, _State
from .rotations import _IDENTITY
from .tuning import COMPILED_PAIRS, COMPILED_PRODUCTS
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


def _kernel_lines(tree: _Tree, frames: list[list[float | str]], oriented: bool) -> list[str]:
    """Return the source of the kernels beside plain FK: rows, Hessians, turns (see below)."""
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
        if oriented and index < tree.tools:
            lines += _turns_source(tree, index, effector, frames)
            lines += _pose_rows_source(tree, index, effector, frames)
            if 21 * len(tree.lower) <= COMPILED_PRODUCTS:   # as linalg's compiled solve
                lines += _pose_step_source(tree, index, effector, frames)
    return lines


def _compiled_sweep(tree: _Tree, fits: list[_Fit] | None = None, old: _State | None = None
                    ) -> tuple[Callable[..., tuple[list, list, list]], list[Callable],
                               list[Callable], list[Callable], list[_Pair], list[_Pair]]:
    """
    Return the tree's sweep compiled to a function (see _SweepWriter and _Tree.sweep).

    Plain FK comes with per effector its Jacobian's rows (_rows_source) and its objective's
    Hessian (_hessian_source; None beyond COMPILED_PAIRS and in trees with marker points),
    and in trees with marker points (orientation solves) per tool its orientation rows
    (_turns_source) and its full pose's kernels: its six rows (_pose_rows_source) and its
    damped step (_pose_step_source, None where linalg solves that size with numpy), and
    in a tree of one effector without them its position rows' damped step, plain and
    steered ((_position_step_source, _steered_step_source), else (None, None)).

    Without fits: forward(q, base) -> (q, frames, points), plain FK; the frames are per
    joint (canonical rotation, row-major 9, origin 3), the base's last. With fits:
    fitting(q, base, old_frames, old_points, desired), where each deciding joint's angle
    (or slide) is first fitted to the desired points (FABRIK's root-to-tip pass): point by
    point for short runs of fit points, from moment sums for long ones (_fit_source), with
    none of the kernels ([], [], [], [], []); old: the one state it is for, its own terms
    constants (see _fit_source), or None for any.
    """
    n_q = len(tree.lower)
    fitting = fits is not None
    writer = _SweepWriter('def fitting(q, base, old_frames, old_points, desired):' if fitting
                          else 'def forward(q, base):')
    coordinates = [f'q{c}' for c in range(n_q)]
    writer.lines += [f'    [{", ".join(coordinates)}] = q', '    bx, by, bz = base']
    moments, twins = _fitting_head(tree, fits, writer.lines) if fitting else ({}, {})
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
                                        held, old, twins)
            c, m, o = joint.coordinate, joint.multiplier, joint.shift
            writer.lines.append(f'    q{c} = fitted' if m == 1.0 and o == 0.0 else
                                f'    q{c} = min(max((fitted - {o!r}) / {m!r}, '
                                f'lower[{c}]), upper[{c}])')
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
        writer.lines += _kernel_lines(tree, frames, oriented)
    namespace = {'cos': math.cos, 'sin': math.sin, 'atan2': math.atan2, 'sqrt': math.sqrt,
                 'remainder': math.remainder, 'inf': math.inf, 'limited_angle': _limited_angle,
                 'fitted_slide': _fitted_slide, 'lower': tree.lower, 'upper': tree.upper}
    kind = 'forward' if not fitting else 'fitting' if old is None else 'neutral fitting'
    name = f'<fabrik_ros {kind} sweep, {len(tree.joints)} joints>'
    exec(compile('\n'.join(writer.lines), name, 'exec'), namespace)
    if fitting:
        return namespace['fitting'], [], [], [], [], []
    return (namespace['forward'],) + _kernels(namespace, tree, oriented)


def _fitting_head(tree: _Tree, fits: list[_Fit], lines: list[str]
                  ) -> tuple[dict[int, list[str]], dict[int, int]]:
    """
    Append a fitting's lines before its joints'; return its moment sums and its twins.

    The moment sums: see _moment_sums. The twins: point -> the point it sits on (an
    effector on its joint's origin, the same old point in every state the sweeps make), and
    per twin twin<point>: whether their desired points are the same floats, none of them 0
    (whose sign could differ), for _fit_source.
    """
    twins = {point: tree.joints[parent].point for parent, point, offset
             in tree.effector_links if parent >= 0 and offset == (0.0, 0.0, 0.0)}
    moments = _moment_sums(fits, lines)
    lines += [f'    twin{point} = desired[{point}] == desired[{twin}] and 0.0 not in '
              f'desired[{twin}]' for point, twin in twins.items()]
    return moments, twins


def _kernels(namespace: dict, tree: _Tree, oriented: bool
             ) -> tuple[list[Callable], list[Callable], list[Callable], list[_Pair],
                        list[_Pair]]:
    """Return the compiled kernels beside plain FK, as _compiled_sweep returns them."""
    effectors, tools = range(len(tree.effectors)), range(tree.tools if oriented else 0)
    return [namespace[f'rows{index}'] for index in effectors], \
        [namespace.get(f'hessian{index}') for index in effectors], \
        [namespace[f'turns{index}'] for index in tools], \
        [(namespace[f'pose_rows{index}'], namespace.get(f'pose_step{index}'))
         for index in tools], [(namespace.get(f'position_step{index}'),
                                namespace.get(f'steered_step{index}')) for index in effectors]
