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
Joint limits: angles and slides kept within them, and closing steps that respect them.

The closing steps slow joints near a limit (weighted least norm, Chan & Dubey 1995), push
them back toward mid-range in the targets' null space (Liegeois 1977), and hold a joint
that a step would carry past its limit at it, solving again for the others.
"""

from __future__ import annotations

from itertools import compress
import math
from operator import add, and_, le, not_
from typing import Iterable, NamedTuple

from .linalg import _shifted_solve, _sub_triangle, _weighted_step
from .rotations import _TWO_PI
from .tuning import (LIMIT_MARGIN, LIMIT_MARGIN_SHARE, LIMIT_PUSH, LIMIT_WEIGHT_MIN,
                     NUDGE)


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


def _clipped(values: Iterable[float], lower: list[float], upper: list[float]) -> list[float]:
    """
    Return min(max(v, lo), hi) per value and limit pair (lo <= hi), the same floats.

    Written as comparisons: builtin min and max take 0.1 µs a call.
    """
    return [lo if v < lo else hi if v > hi else v for v, lo, hi in zip(values, lower, upper)]


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


class JointLimits(NamedTuple):
    """
    A chain's joint limits on plain floats, and the margins inside them.

    lower, upper: per independent joint, radians (metres for a slide), +-inf where
    continuous. margins: how close to a limit a joint counts as near it (LIMIT_MARGIN, or
    LIMIT_MARGIN_SHARE of a narrow joint's range); inner_lower, inner_upper: the limits
    less the margins (inside them no joint is near a limit).
    """

    lower: list[float]
    upper: list[float]
    margins: list[float]
    inner_lower: list[float]
    inner_upper: list[float]

    @classmethod
    def of(cls, lower: list[float], upper: list[float]) -> JointLimits:
        """Return the limits with their margins."""
        margins = [min(LIMIT_MARGIN, LIMIT_MARGIN_SHARE * (hi - lo))
                   for lo, hi in zip(lower, upper)]
        return cls(lower, upper, margins,
                   [lo + margin for lo, margin in zip(lower, margins)],
                   [hi - margin for hi, margin in zip(upper, margins)])

    def nudged(self, q: list[float]) -> list[float]:
        """Return q with every joint turned by NUDGE radians (back, where a limit is near)."""
        return [a + NUDGE if a + NUDGE <= hi else max(a - NUDGE, lo)
                for a, lo, hi in zip(q, self.lower, self.upper)]

    def released(self, q: list[float]) -> list[float]:
        """Return q with every joint that sits at a limit moved to the middle of its range."""
        return [(lo + hi) / 2.0 if a in (lo, hi) else a
                for a, lo, hi in zip(q, self.lower, self.upper)]

    def steering(self, q: list[float], rows: list[list[float]], residual: list[float],
                 steer: bool) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
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
        inner_lower, inner_upper = self.inner_lower, self.inner_upper
        if all(map(le, inner_lower, q)) and all(map(le, q, inner_upper)):
            return [], []
        # The joints outside [lower + margin, upper - margin], found at C speed.
        near = compress(range(len(q)), map(not_, map(
            and_, map(le, inner_lower, q), map(le, q, inner_upper))))
        lower, upper, margins = self.lower, self.upper, self.margins
        weights, push = [], []
        for j in near:
            a = q[j]
            margin = margins[j]
            low, high = a - lower[j], upper[j] - a
            room, sign = (low, -1.0) if low < high else (high, 1.0)
            if steer:
                push.append((j, -sign * LIMIT_PUSH * (margin - room)))
            # The error's gradient J^T r says which way the joint is drawn: away from its
            # limit it is free. Drawn past a limit it sits at, it is held there: its step
            # would be clamped and the others' solved again (a second solve per step).
            drawn = 0.0
            for row, r in zip(rows, residual):
                drawn += row[j] * r
            if sign * drawn > 0.0:
                weights.append((j, max(room / margin, LIMIT_WEIGHT_MIN) if room else 0.0))
        return weights, push

    def limited_step(self, q: list[float], rows: list[list[float]], aim: list[float],
                     weights: list[tuple[int, float]], push: list[tuple[int, float]],
                     mu: float) -> tuple[list[float], list[float]]:
        """
        Return the joints after one damped step from q, within the limits, and the step.

        weights, push: see steering. Joints the step would push past a limit are held
        at it and the step is re-solved without them (the rest of the aim spent on the
        others). The step's tail beyond q's length is the free root's motion.
        """
        lower, upper = self.lower, self.upper
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
