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
One jogging step's joint velocity from a wanted tool twist: the math, no state, no ROS.

The twist is mapped through the Jacobian's singular value decomposition. Each task
direction (left singular vector u_i, gain sigma_i) passes whole while its conditioning
``sigma_max / sigma_i`` is below ``pass_condition`` and fades out smoothly to nothing at
the singularity (see DirectionFilter.weights); so near a singularity only the vanishing
directions slow down and the others keep their full speed, and the joint velocity is
finite by construction (at most ``1.125 * |twist| * pass_condition / sigma_max``). Angular rows
are scaled by ``length_scale`` (metres) so that both halves of the twist have one unit.

Joint bounds come in as per-joint velocity intervals (the velocity limit, narrowed by what
a joint can still brake from before its position limit). A joint whose interval cuts the
motion pushing into its position limit is locked at its bound and the task is re-solved on
the others (saturation in the null space), so the tool follows what it can. Velocity
limits then scale the well-conditioned part uniformly (its direction is kept), the fading
part and the posture motion fill what is left of each joint's interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Singular values below this share of the largest are numerically zero.
_RANK_TOLERANCE = 1e-9


@dataclass(frozen=True)
class DirectionFilter:
    """The conditioning (dimensionless, > 1) from which a singular direction fades."""

    pass_condition: float = 17.0

    def __post_init__(self) -> None:
        """Refuse a bound that is not a finite number above 1."""
        if not (np.isfinite(self.pass_condition) and self.pass_condition > 1.0):
            raise ValueError(f'pass_condition must be finite and > 1, got '
                             f'{self.pass_condition}')

    def weights(self, singular_values: np.ndarray) -> np.ndarray:
        """
        Return each direction's weight in [0, 1]: 1 up to pass_condition, 0 when singular.

        With x = sigma / (sigma_max / pass_condition) the weight is smoothstep(x): C1, and
        the joint speed it asks along the direction (weight / sigma per unit twist) peaks
        at 1.125 / sigma_pass and falls linearly to 0 at the singularity, so the arm brakes
        into it instead of being flung through.
        """
        largest = singular_values[0] if singular_values.size else 0.0
        if largest <= 0.0:
            return np.zeros_like(singular_values)
        x = np.clip(singular_values * (self.pass_condition / largest), 0.0, 1.0)
        return x * x * (3.0 - 2.0 * x)


@dataclass(frozen=True)
class StepResult:
    """A step's joint velocity (rad/s, m/s prismatic) and what shaped it."""

    velocity: np.ndarray
    weakest_weight: float   # the smallest weight of a direction the twist has a part along
    strongest_weight: float  # the largest such weight (0: nothing asked can move)
    smallest_singular: float
    locked: np.ndarray      # bool per joint: held at a bound its position limit sets


def fit_scale(base: np.ndarray, extra: np.ndarray, low: np.ndarray,
              high: np.ndarray) -> float:
    """
    Return the largest s in [0, 1] with low <= base + s * extra <= high per entry.

    ``base`` must lie within [low, high]; entries where it does not only shrink s to 0.
    """
    scale = 1.0
    moving = np.abs(extra) > 0.0
    if not moving.any():
        return scale
    with np.errstate(over='ignore'):
        room = np.where(extra > 0.0, high - base, low - base)[moving] / extra[moving]
    return float(np.clip(np.min(room, initial=1.0), 0.0, 1.0))


def _solve_task(jacobian: np.ndarray, twist: np.ndarray, free: np.ndarray,
                directions: DirectionFilter
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float], float]:
    """Return (whole part, fading part, null basis, (weakest, strongest) weight, sigma_min)."""
    size = jacobian.shape[1]
    strong, fading = np.zeros(size), np.zeros(size)
    columns = np.flatnonzero(free)
    if columns.size == 0:
        return strong, fading, np.zeros((size, 0)), (0.0, 0.0), 0.0
    u, sigma, vt = np.linalg.svd(jacobian[:, columns], full_matrices=True)
    rank = sigma.size
    weights = directions.weights(sigma)
    parts = u[:, :rank].T @ twist
    usable = weights > 0.0
    gains = np.zeros(rank)
    gains[usable] = parts[usable] / sigma[usable]
    whole = weights >= 1.0
    strong[columns] = vt[:rank][whole].T @ gains[whole]
    partial = usable & ~whole
    fading[columns] = vt[:rank][partial].T @ (gains[partial] * weights[partial])
    null = np.zeros((size, columns.size - min(rank, columns.size)))
    null[columns] = vt[rank:].T
    asked = np.abs(parts) > 1e-12 * max(1.0, float(np.linalg.norm(twist)))
    extremes = (float(np.min(weights[asked], initial=1.0)),
                float(np.max(weights[asked], initial=1.0)))
    return strong, fading, null, extremes, float(sigma[-1]) if rank else 0.0


def joint_step(jacobian: np.ndarray, twist: np.ndarray, low: np.ndarray, high: np.ndarray,
               bounded: np.ndarray, posture: np.ndarray | None = None,
               directions: DirectionFilter = DirectionFilter()) -> StepResult:
    """
    Return the joint velocity that best makes ``twist`` within [low, high] per joint.

    jacobian: (k, n) task Jacobian (rows in the twist's units); twist: (k,) the wanted task
    velocity; low/high: (n,) per-joint velocity bounds (low <= 0 <= high); bounded: (n,)
    True where a bound is set by the position limit rather than the velocity limit, so
    that the joint may be locked there; posture: (n,) wanted joint velocity for the null
    space (ignored where the task uses every freedom). The result lies within [low, high].
    """
    size = jacobian.shape[1]
    free = np.ones(size, dtype=bool)
    locked = np.zeros(size)
    for _ in range(size + 1):
        remaining = twist - jacobian @ locked
        strong, fading, null, extremes, sigma_min = _solve_task(
            jacobian, remaining, free, directions)
        wanted = strong + fading + locked
        pushing = free & bounded & ((wanted > high) | (wanted < low))
        if not pushing.any():
            break
        locked[pushing] = np.clip(wanted[pushing], low[pushing], high[pushing])
        free &= ~pushing
    velocity = locked.copy()
    velocity += fit_scale(velocity, strong, low, high) * strong
    velocity += fit_scale(velocity, fading, low, high) * fading
    if posture is not None and null.shape[1]:
        drift = null @ (null.T @ posture)
        velocity += fit_scale(velocity, drift, low, high) * drift
    return StepResult(np.clip(velocity, low, high), *extremes, sigma_min, ~free)
