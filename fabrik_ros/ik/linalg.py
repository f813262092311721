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
Small linear algebra of the closing and Newton steps: damped and shifted solves.

Systems up to a size are solved by straight-line Python compiled once per shape (a
Cholesky factorisation written out), larger ones with numpy.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
import math
from typing import Sequence

import numpy as np

from .tuning import COMPILED_PRODUCTS, DAMPING_FLOOR


def _damped_least_squares(rows: list[list[float]], residual: list[float],
                          damping: float) -> list[float]:
    """
    Return dx = J^T (J J^T + damping I)^-1 r for a short wide J given by its rows.

    damping > 0 keeps the system positive definite at singular poses (stretched arms).
    Small systems (one effector, with its orientation, or two; up to COMPILED_PRODUCTS)
    are solved by straight-line code on plain floats (_compiled_damped_solve), faster
    than numpy at these sizes; larger ones, and any that rounding leaves not
    positive definite, by numpy.
    """
    size, width = len(rows), len(rows[0])
    if size * (size + 1) // 2 * width <= COMPILED_PRODUCTS:
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
    whose factorisation takes at most COMPILED_PRODUCTS products run as straight-line
    code (_compiled_shifted_solve), larger ones with numpy (faster from about 15 unknowns).
    """
    size = len(lower)
    if size * (size + 1) * (size + 2) // 6 <= COMPILED_PRODUCTS:
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


def _free_system(q: list[float], joints: Sequence[int], descent: list[float],
                 full: list[list[float]], lower: list[float], upper: list[float]
                 ) -> tuple[list[int], list[list[float]], list[float], float] | None:
    """
    Return Newton's system over the joints a limit leaves free, or None if none is.

    descent, full: minus half the objective's gradient and half its Hessian's lower
    triangle by rows, per coordinate (_Tree.hessian). Free: the given joints but those at a
    limit the descent pushes them past. Returns the free joints, the triangle and the
    descent over them, and the triangle's largest diagonal entry (at least DAMPING_FLOOR).
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
    return free, hessian, gradient, max(max(row[-1] for row in hessian), DAMPING_FLOOR)


def _sub_triangle(triangle: list[list[float]], indices: list[int]) -> list[list[float]]:
    """Return the lower triangle, by rows, of rows and columns `indices` (ascending) of one."""
    return [[triangle[i][k] for k in indices[:row + 1]] for row, i in enumerate(indices)]
