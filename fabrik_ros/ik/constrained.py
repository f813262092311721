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
A damped least-squares step under linearised distance constraints: the collision search's.

The search for a clear answer (fabrik_ros.ik.collisions) steps toward the target while
every pair near the margin keeps its linearised distance above it. Imports numpy only.
"""

from __future__ import annotations

import numpy as np


def constrained_step(jacobian: np.ndarray, residual: np.ndarray, damping: float,
                     distances: np.ndarray, gradients: np.ndarray, goal: float
                     ) -> np.ndarray:
    """
    Return the damped least-squares step with every pair's linearised distance >= goal.

    Minimises |J dq - r|^2 + damping |dq|^2 subject to d + G dq >= goal, by active sets
    on the dual (a handful of rows: each pass solves the active rows' small system).
    """
    hessian = jacobian.T @ jacobian + damping * np.eye(jacobian.shape[1])
    free = np.linalg.solve(hessian, jacobian.T @ residual)
    if not len(distances):
        return free
    spread = np.linalg.solve(hessian, gradients.T)                  # (n, k)
    coupling = gradients @ spread                                   # (k, k)
    needed = goal - distances - gradients @ free                    # > 0: violated
    active = needed > 0.0
    multipliers = np.zeros(len(distances))
    for _ in range(2 * len(distances) + 1):
        if not np.any(active):
            break
        rows = np.flatnonzero(active)
        block = coupling[np.ix_(rows, rows)] + 1e-9 * np.eye(len(rows))
        try:
            values = np.linalg.solve(block, needed[rows])
        except np.linalg.LinAlgError:
            values = np.linalg.lstsq(block, needed[rows], rcond=None)[0]
        if np.any(values < 0.0):
            active[rows[int(np.argmin(values))]] = False
            continue
        multipliers[:] = 0.0
        multipliers[rows] = values
        slack = coupling @ multipliers - needed
        slack[active] = np.inf
        worst = int(np.argmin(slack))
        if slack[worst] >= -1e-12:
            break
        active[worst] = True
    return free + spread @ multipliers
