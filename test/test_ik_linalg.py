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


"""The closing and Newton steps' linear algebra (fabrik_ros.ik.linalg, .limits) on its own."""

import math

from fabrik_ros.chain import Chain
from fabrik_ros.ik import IkSolver, linalg
from fabrik_ros.ik.limits import _held_newton_step
from fabrik_ros.ik.linalg import (_compiled_shifted_solve, _damped_least_squares,
                                  _NOT_POSITIVE_DEFINITE, _shifted_solve)
from fabrik_ros.ik.tuning import COMPILED_PRODUCTS
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest


class TestClosingStepSolve:
    """The steps' linear solves: J^T (J J^T + d I)^-1 r at every size and rank; Newton's."""

    @settings(max_examples=200, deadline=None)
    @given(st.integers(1, 10), st.integers(1, 40), st.floats(1e-6, 1.0),
           st.integers(0, 2 ** 32 - 1), st.booleans())
    def test_step_solves_the_damped_normal_equations(self, rows, columns, damping, seed,
                                                     dependent):
        rng = np.random.default_rng(seed)
        jacobian = rng.normal(size=(rows, columns))
        if dependent and rows > 1:     # a singular pose: J J^T is singular, damping is not
            jacobian[-1] = 0.5 * jacobian[0]
        residual = rng.normal(size=rows)
        damped = jacobian @ jacobian.T + damping * np.eye(rows)
        solved = np.linalg.solve(damped, residual)
        expected = jacobian.T @ solved
        step = _damped_least_squares(jacobian.tolist(), residual.tolist(), damping)
        assert len(step) == columns
        # Rounding error of a linear solve grows with the system's condition number, which
        # damping bounds (a singular pose reaches (|J|^2 + damping) / damping); the product
        # J^T y then errs on the scale of |J| |y|, not of the step (which may cancel).
        bound = 100.0 * np.finfo(float).eps * np.linalg.cond(damped)
        scale = np.linalg.norm(jacobian, 2) * np.linalg.norm(solved)
        assert np.linalg.norm(np.array(step) - expected) <= bound * scale

    @settings(max_examples=100, deadline=None)
    @given(st.integers(1, 24), st.floats(0.0, 1.0), st.integers(0, 2 ** 32 - 1))
    def test_newton_solve_solves_the_shifted_system(self, size, shift, seed):
        # Straight-line code up to 14 unknowns, numpy beyond.
        rng = np.random.default_rng(seed)
        root = rng.normal(size=(size, size))
        matrix = root @ root.T + 1e-3 * np.eye(size)    # positive definite
        residual = rng.normal(size=size)
        lower = [row[:index + 1] for index, row in enumerate(matrix.tolist())]
        solution = _shifted_solve(lower, residual.tolist(), shift)
        expected = np.linalg.solve(matrix + shift * np.eye(size), residual)
        assert np.linalg.norm(np.array(solution) - expected) <= 1e-6 * np.linalg.norm(expected)

    @settings(max_examples=100, deadline=None)
    @given(st.integers(2, 10), st.floats(1e-6, 1.0), st.integers(0, 2 ** 32 - 1))
    def test_newton_step_with_joints_held_at_limits_solves_for_the_others(self, size, shift,
                                                                          seed):
        # Held joints move to their limit; the others' step solves the shifted system with
        # that motion on the right-hand side, and is clamped into the limits.
        rng = np.random.default_rng(seed)
        root = rng.normal(size=(size, size))
        matrix = root @ root.T + 1e-3 * np.eye(size)
        descent = rng.normal(size=size)
        free = sorted(rng.choice(size + 2, size, replace=False).tolist())
        q = rng.uniform(-1.0, 1.0, size + 2).tolist()
        lower, upper = [-1.5] * (size + 2), [1.5] * (size + 2)
        held_rows = sorted(rng.choice(size, rng.integers(1, size), replace=False).tolist())
        moved = list(q)
        for row in held_rows:
            moved[free[row]] = rng.choice([-1.5, 1.5])
        triangle = [row[:index + 1] for index, row in enumerate(matrix.tolist())]
        result = _held_newton_step(q, moved, [free[row] for row in held_rows], free,
                                   triangle, descent.tolist(), shift, lower, upper)
        rest = [row for row in range(size) if row not in held_rows]
        change = np.array([moved[j] - q[j] for j in free])
        aim = descent[rest] - matrix[np.ix_(rest, held_rows)] @ change[held_rows]
        expected = np.linalg.solve(matrix[np.ix_(rest, rest)] + shift * np.eye(len(rest)), aim)
        for row in held_rows:
            assert result[free[row]] == moved[free[row]]
        for row, step in zip(rest, expected):
            assert result[free[row]] == pytest.approx(np.clip(q[free[row]] + step, -1.5, 1.5),
                                                      abs=1e-7 * (1.0 + abs(step)))
        for j in set(range(size + 2)) - set(free):
            assert result[j] == q[j]

    @pytest.mark.parametrize('size', [2, 20])
    def test_newton_solve_refuses_an_indefinite_system(self, size):
        matrix = np.eye(size)
        matrix[1, 0] = matrix[0, 1] = 2.0   # eigenvalues -1 and 3 among ones
        lower = [row[:index + 1] for index, row in enumerate(matrix.tolist())]
        with pytest.raises(_NOT_POSITIVE_DEFINITE):
            _shifted_solve(lower, [1.0] * size, 0.0)

    def test_long_chains_compile_no_linear_system_beyond_the_compiled_size(self, monkeypatch):
        # Straight-line code grows with the cube of the unknowns: a 200-joint chain out of
        # reach once spent 7.7 s compiling its first Newton step. A 40-joint chain's Newton
        # system and Hessian (820 pairs of joints) come from numpy, and it still lies straight.
        sizes = []

        def recorded(size):
            sizes.append(size)
            return _compiled_shifted_solve(size)

        monkeypatch.setattr(linalg, '_compiled_shifted_solve', recorded)
        chain = Chain.from_parameters(20, [0.05] * 20, joint_type='two_axis',
                                      joint_limit=math.pi)
        solver = IkSolver(chain)
        assert solver._tree._hessians[0] is None
        result = solver.solve([0.0, 0.6, 1.8], np.full(chain.dof, 0.3))
        assert result.error == pytest.approx(math.hypot(0.6, 1.8) - 1.0, abs=1e-6)
        assert all(size * (size + 1) * (size + 2) // 6 <= COMPILED_PRODUCTS for size in sizes)
