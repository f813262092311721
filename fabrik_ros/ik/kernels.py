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
Source of the compiled kernels beside the sweep: rows, turns, Hessians, fits.

Per effector its Jacobian's rows and its objective's Hessian, per tool its orientation
rows (turns), and per joint its closed-form fit (point by point, or by moment sums).
"""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import TYPE_CHECKING

from .limits import JointLimits
from .linalg import _cholesky_source
from .points import _Effector, _Fit, _Joint, _State
from .rotations import _TWO_PI
from .tuning import LIMIT_PUSH, LIMIT_WEIGHT_MIN, MOMENT_POINTS, ON_AXIS
from .writer import _negated

if TYPE_CHECKING:
    from .model import _Tree


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
        for row, term in _axis_terms(frames[j], joint.multiplier,
                                     lambda i: f'frames[{j}][{i}]'):
            terms[joint.coordinate][row].append(term)
    rows = ['[' + ', '.join(f's * ({" + ".join(per_row[row])})' if per_row[row] else '0.0'
                            for per_row in terms) + ']' for row in range(3)]
    return [f'def turns{index}(frames, s):', f'    return {", ".join(rows)}']


def _axis_terms(frame: list[float | str], m: float, name: Callable[[int], str]
                ) -> list[tuple[int, str]]:
    """Return (row, term) of a revolute joint's axis (frame entries 2, 5, 8) times m."""
    terms = []
    for row, i in enumerate((2, 5, 8)):
        value = frame[i]
        if isinstance(value, str):
            terms.append((row, name(i) if m == 1.0 else f'{m!r} * {name(i)}'))
        elif value != 0.0:
            terms.append((row, repr(m * value)))
    return terms


def _pose_entries(tree: _Tree, effector: _Effector, frames: list[list[float | str]]
                  ) -> tuple[list[str], list[list[str]]]:
    """
    Return the source lines and entries of a tool's full-pose Jacobian, six rows by coordinate.

    The entries of rows<index> then those of turns<index> times s (the same terms, so the
    same floats); '0.0' where a row has no term in a coordinate.
    """
    lines, columns = _column_source(tree, effector, frames)
    terms: list[list[list[str]]] = [[[], [], [], [], [], []] for _ in tree.lower]
    for j, (joint, _, column) in zip(effector.joints, columns):
        m = joint.multiplier
        for row, name in enumerate(column):
            if name != '0.0':
                terms[joint.coordinate][row].append(name if m == 1.0 else f'{m!r} * {name}')
        if joint.prismatic:
            continue
        for row, term in _axis_terms(frames[j], m, lambda i: f'f{j}_{i}'):  # _column_source's
            terms[joint.coordinate][row + 3].append(term)
    entries = [[(' + '.join(per_row[row]) if row < 3 else f's * ({" + ".join(per_row[row])})')
                if per_row[row] else '0.0' for per_row in terms] for row in range(6)]
    return lines, entries


def _pose_rows_source(tree: _Tree, index: int, effector: _Effector,
                      frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of pose_rows<index>(frames, ex, ey, ez, s): a full pose's six rows.

    The rows of rows<index> then those of turns<index> (see _pose_entries), in one call: a
    full pose's closing step needs both, and the frames are read once. Returns a list of
    six lists of floats.
    """
    lines, entries = _pose_entries(tree, effector, frames)
    rows = ', '.join(f'[{", ".join(row)}]' for row in entries)
    return [f'def pose_rows{index}(frames, ex, ey, ez, s):'] + lines + [f'    return [{rows}]']


def _pose_step_source(tree: _Tree, index: int, effector: _Effector,
                      frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of pose_step<index>(frames, ex, ey, ez, s, residual, damping).

    The damped least-squares step J^T (J J^T + damping I)^-1 r of a full pose's six rows
    (_pose_entries), computed as linalg's compiled damped solve computes it from the rows,
    but for the products with an entry that is always 0, which it leaves out (they add
    nothing): the same floats, without the rows' lists (_damped_step_lines). Raises as
    that solve does (_NOT_POSITIVE_DEFINITE).
    """
    lines, entries = _pose_entries(tree, effector, frames)
    return [f'def pose_step{index}(frames, ex, ey, ez, s, residual, damping):'] + lines \
        + _damped_step_lines(entries, len(tree.lower))


def _position_entries(tree: _Tree, effector: _Effector, frames: list[list[float | str]]
                      ) -> tuple[list[str], list[list[str]]]:
    """Return the source lines and entries of an effector's three position rows (rows<index>)."""
    lines, columns = _column_source(tree, effector, frames)
    terms: list[list[list[str]]] = [[[], [], []] for _ in tree.lower]
    for joint, _, column in columns:
        for row, name in enumerate(column):
            if name != '0.0':
                terms[joint.coordinate][row].append(
                    name if joint.multiplier == 1.0 else f'{joint.multiplier!r} * {name}')
    return lines, [[' + '.join(per_row[row]) or '0.0' for per_row in terms] for row in range(3)]


def _position_step_source(tree: _Tree, index: int, effector: _Effector,
                          frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of position_step<index>(frames, ex, ey, ez, s, residual, damping).

    As pose_step<index> (_pose_step_source) for the effector's three position rows: the
    step of rows<index>'s rows by linalg's compiled damped solve, the same floats (s, unused,
    keeps the pose step's signature).
    """
    lines, entries = _position_entries(tree, effector, frames)
    return [f'def position_step{index}(frames, ex, ey, ez, s, residual, damping):'] + lines \
        + _damped_step_lines(entries, len(tree.lower))


def _steered_step_source(tree: _Tree, index: int, effector: _Effector,
                         frames: list[list[float | str]]) -> list[str]:
    """
    Return the source of steered_step<index>(frames, ex, ey, ez, q, residual, damping, steer).

    The closing step of the rows' path where joints are near a limit (JointLimits.steering
    then limited_step, on the tree's limits, which are the solver's: both the chain's):
    each joint near a limit that the residual draws toward it is weighted, with `steer`
    each joint near a limit is pushed toward mid-range, then the weighted damped step of
    the aim (residual less the rows times the push) plus the push: the same floats, as
    position_step<index>'s are the rows' solve's. Returns (step, whether it pushed), or
    (None, True) for pushes of two joints or more (the rows' path sums those). Raises as
    the damped solve does (_NOT_POSITIVE_DEFINITE).
    """
    lines, entries = _position_entries(tree, effector, frames)
    names, unpacked = _entry_lines(entries)
    n = len(tree.lower)
    lines = [f'def steered_step{index}(frames, ex, ey, ez, q, residual, damping, steer):'] \
        + lines + unpacked + ['    r0, r1, r2, = residual',
                              f'    {", ".join(f"q{c}" for c in range(n))}, = q',
                              '    weighted, pushed = [], []']
    limits = JointLimits.of(tree.lower, tree.upper)
    for c, (lo, hi, margin, inner_lo, inner_hi) in enumerate(zip(*limits)):
        if inner_lo == -math.inf and inner_hi == math.inf:
            continue    # never near a limit
        column = [names[row][c] or '0.0' for row in range(3)]
        kept = [name for name in column if name != '0.0']
        lines += [f'    if not {inner_lo!r} <= q{c} <= {inner_hi!r}:',
                  f'        low, high = q{c} - {lo!r}, {hi!r} - q{c}',
                  '        room, sign = (low, -1.0) if low < high else (high, 1.0)',
                  '        if steer:',
                  f'            change = -sign * {LIMIT_PUSH!r} * ({margin!r} - room)',
                  f'            pushed.append(({c}, change))',
                  f'            t0, t1, t2 = {", ".join(f"{name} * change" for name in column)}',
                  f'        if sign * (0.0 + {column[0]} * r0 + {column[1]} * r1 + '
                  f'{column[2]} * r2) > 0.0:',
                  f'            weight = max(room / {margin!r}, {LIMIT_WEIGHT_MIN!r}) '
                  'if room else 0.0',
                  f'            weighted.append(({c}, weight))']
        if kept:
            lines.append(f'            {", ".join(kept)} = '
                         f'{", ".join(f"{name} * weight" for name in kept)}')
    lines += ['    if pushed:',
              '        if len(pushed) > 1:',
              '            return None, True',
              '        r0, r1, r2 = r0 - (0.0 + t0), r1 - (0.0 + t1), r2 - (0.0 + t2)']
    solve = _solve_lines(names, n)
    return lines + solve[:-1] + [solve[-1].replace('return', 'step =', 1),
                                 '    for j, weight in weighted:', '        step[j] *= weight',
                                 '    for j, change in pushed:', '        step[j] += change',
                                 '    return step, pushed']


def _damped_step_lines(entries: list[list[str]], width: int) -> list[str]:
    """
    Return the lines of J^T (J J^T + damping I)^-1 r from J's entries (sources, '0.0').

    As linalg's _compiled_damped_solve, term by term, but for the products with a '0.0'
    entry (always 0: they add nothing to the sums they are in).
    """
    names, lines = _entry_lines(entries)
    lines.append(f'    {", ".join(f"r{i}" for i in range(len(entries)))}, = residual')
    return lines + _solve_lines(names, width)


def _entry_lines(entries: list[list[str]]) -> tuple[list[list[str | None]], list[str]]:
    """
    Return J's entries' names and the lines that set them.

    An entry that is a local's name (a column's, in no other entry) is its own name, one
    of a sum or a product is set to jI_C; None for '0.0'.
    """
    names = [[None if entry == '0.0' else entry if entry.isidentifier() else f'j{i}_{c}'
              for c, entry in enumerate(row)] for i, row in enumerate(entries)]
    lines = []
    for row_names, row in zip(names, entries):
        kept = [(name, entry) for name, entry in zip(row_names, row) if name and name != entry]
        if kept:
            lines.append(f'    {", ".join(name for name, _ in kept)}, = '
                         f'{", ".join(entry for _, entry in kept)},')
    return names, lines


def _solve_lines(names: list[list[str | None]], width: int) -> list[str]:
    """
    Return the lines of _damped_step_lines from the entries (names) and rI on.

    The Gram matrix's lower triangle, the Cholesky solve, and a last line that returns
    the step.
    """
    size = range(len(names))
    lines = []
    for i in size:
        for k in range(i + 1):
            gram = ' + '.join(f'{a} * {b}' for a, b in zip(names[i], names[k]) if a and b)
            lines.append(f'    a{i}_{k} = {gram or "0.0"}' + (' + damping' if i == k else ''))
    lines += _cholesky_source(len(names))
    return lines + [f'    return [{", ".join(_step_entries(names, width))}]']


def _step_entries(names: list[list[str | None]], width: int) -> list[str]:
    """Return the sources of the step's entries, J^T y, after _solve_lines' solve."""
    return [' + '.join(f'{row[c]} * y{i}' for i, row in enumerate(names) if row[c]) or '0.0'
            for c in range(width)]


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


_MOMENTS = ('W', 'V0', 'V1', 'V2', 'D0', 'D1', 'D2', 'S00', 'S01', 'S02', 'S10', 'S11', 'S12',
            'S20', 'S21', 'S22')


def _fit_source(joint: int, model: _Joint, current: float | str, h: list[float | str],
                origin: list[float | str], fit: _Fit, sums: list[str] | None,
                held: dict[str, tuple[str, int]], old: _State | None = None,
                twins: dict[int, int] | None = None) -> list[str]:
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
    old: the state the points come from when it is always the same one (the neutral pose's,
    see _Tree.sweep): what depends on it alone (g, a . (v - o)) is computed here, by the
    lines' operations in their order, and written as constants.
    twins: point -> the point it always sits on (an effector on its joint's origin). Where
    the sweep's twin<point> says their desired points are the same floats (and no zero
    whose sign could differ), a revolute joint adds the twin's terms again, not computing
    them anew: the same floats.
    """
    frame = old.frames[joint] if old is not None else ()
    lines = ['    a0, a1, a2, a3, a4, a5, a6, a7, a8, ox, oy, oz = '
             + (f'{frame!r}' if old is not None else f'old_frames[{joint}]')]
    lines += _moment_source(model, h, origin, sums, held) if sums else ['    num = den = 0.0']
    listed = [(k, w) for first, stop, w in fit if stop - first < MOMENT_POINTS
              for k in range(first, stop)]
    order = {point: index for index, (point, _) in enumerate(listed)}
    twins = {point: twin for point, twin in (twins or {}).items() if not model.prismatic
             and order.get(twin, math.inf) < order.get(point, -1)}
    kept = set(twins.values())
    for point, weight in listed:
        scale = '' if weight == 1.0 else f'{weight!r} * '
        if point not in twins:
            lines += _point_lines(point, weight, model, h, origin, held, frame, old,
                                  point in kept)
            continue
        twin = twins[point]
        lines += [f'    if twin{point}:', f'        num += {scale}tn{twin}',
                  f'        den += {scale}td{twin}', '    else:'] + [
            '    ' + line for line in _point_lines(point, weight, model, h, origin, {}, frame,
                                                   old, False)]
    return lines + _fitted_lines(model, current)


def _point_lines(point: int, weight: float, model: _Joint, h: list[float | str],
                 origin: list[float | str], held: dict[str, tuple[str, int]],
                 frame: tuple[float, ...], old: _State | None, keep: bool) -> list[str]:
    """
    Return the lines that add one point's terms to num and den (see _fit_source).

    held: as there (a fresh dict: the point's locals computed anew, not kept); keep: the
    terms also go to locals tn<point>, td<point> (revolute) for its twin.
    """
    def dot(column: tuple[float | str, ...], names: tuple[str, str, str]) -> str:
        terms = [name if value == 1.0 else f'-{name}' if value == -1.0    # the same floats
                 else f'{value!r} * {name}' if isinstance(value, float)
                 else f'{value} * {name}' for value, name in zip(column, names) if value != 0.0]
        return ' + '.join(terms) or '0.0'

    def offset(name: str, value: float | str) -> str:
        return name if value == 0.0 else f'{name} - {value!r}' if isinstance(value, float) \
            else f'{name} + {value[1:]}' if value.startswith('-') else f'{name} - {value}'

    scale = '' if weight == 1.0 else f'{weight!r} * '
    x, y, z = f'x{point}', f'y{point}', f'z{point}'
    dx, dy, dz = f'dx{point}', f'dy{point}', f'dz{point}'
    relative = f'{x}, {y}, {z} = p{x} - ox, p{y} - oy, p{z} - oz'
    desired = f'{dx}, {dy}, {dz} = ' \
        f'{", ".join(map(offset, (f"p{dx}", f"p{dy}", f"p{dz}"), origin))}'
    lines = []
    if held.get(x) != (relative + desired, model.point):
        held[x] = (relative + desired, model.point)
        lines += [f'    {relative}'] if old is None else []
        lines += [f'    {desired}']
    if old is not None:     # the lines' operations below, in their order
        rx, ry, rz = (p - o for p, o in zip(old.points[point], frame[9:]))
        x, y, z = (f'({a * rx + b * ry + c * rz!r})'
                   for a, b, c in zip(frame[0:3], frame[3:6], frame[6:9]))
    if model.prismatic:
        return lines + [f'    num += {scale}({dot(h[2::3], (dx, dy, dz))} - '
                        + (z if old is not None else f'(a2 * {x} + a5 * {y} + a8 * {z})') + ')',
                        f'    den += {weight!r}']
    lines += [f'    gx, gy = {x}, {y}' if old is not None else
              f'    gx, gy = a0 * {x} + a3 * {y} + a6 * {z}, a1 * {x} + a4 * {y} + a7 * {z}',
              f'    ux, uy = {dot(h[0::3], (dx, dy, dz))}, {dot(h[1::3], (dx, dy, dz))}']
    if keep:
        return lines + [f'    tn{point}, td{point} = gx * uy - gy * ux, gx * ux + gy * uy',
                        f'    num += {scale}tn{point}', f'    den += {scale}td{point}']
    return lines + [f'    num += {scale}(gx * uy - gy * ux)',
                    f'    den += {scale}(gx * ux + gy * uy)']


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
    return [f'    if num * num + den * den <= {ON_AXIS * ON_AXIS!r}:',
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
    is quadratic. Returns per joint with runs of MOMENT_POINTS points or more the source of
    their 16 sums (_MOMENTS order); shorter runs (the next point of fit 'next') are cheaper
    point by point.
    """
    long_runs = {j: runs for j, runs in enumerate(
        [run for run in fit if run[1] - run[0] >= MOMENT_POINTS] for fit in fits) if runs}
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
