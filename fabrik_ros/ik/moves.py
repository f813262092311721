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
Source of the lean tracking path's position move: a closing step's joints and their FK.

Tracking a position takes a closing step from a seed clear of its joints' limit margins,
mostly one or two per solve: the step, the joints it moves to, the test that they stay
within their limits and their forward kinematics come out of one compiled function, on
the limits as constants.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .kernels import _damped_step_lines, _entry_lines, _position_entries, _step_entries
from .limits import JointLimits
from .points import _Effector

if TYPE_CHECKING:
    from .model import _Tree


def _position_move_source(tree: _Tree, index: int, effector: _Effector,
                          frames: list[list[float | str]], forward: list[str]) -> list[str]:
    """
    Return the source of position_move<index>(frames, q, ex, ey, ez, residual, damping, base).

    What plain FK returns, (q, frames, points), from the root point base for the joints q
    plus position_step<index>'s step (the same floats as the step added to them); None
    where a joint of q lies in a limit's margin (the step would be steered) or the step
    carries a joint past its limit (the step would be solved again without it): as
    limits._clamped tells it, a joint below its lower or above its upper limit. The tree's
    limits are the solver's (both the chain's). Raises as the damped solve does
    (_NOT_POSITIVE_DEFINITE). forward: plain FK's lines after its unpacking of q into q0,
    q1, ... (assigned here, moved), to its return; its locals are new or assigned before
    they are read, so those of the step left behind do not matter.
    """
    lines, entries = _position_entries(tree, effector, frames)
    n = len(tree.lower)
    limits = JointLimits.of(tree.lower, tree.upper)
    clear = ' and '.join(f'{lo!r} <= q{c} <= {hi!r}' for c, (lo, hi) in enumerate(
        zip(limits.inner_lower, limits.inner_upper)) if lo != -math.inf or hi != math.inf)
    past = ' or '.join([f'q{c} < {lo!r}' for c, lo in enumerate(tree.lower) if lo != -math.inf]
                       + [f'q{c} > {hi!r}' for c, hi in enumerate(tree.upper) if hi != math.inf])
    steps = _step_entries(_entry_lines(entries)[0], n)
    joints = ', '.join(f'q{c}' for c in range(n))
    return [f'def position_move{index}(frames, q, ex, ey, ez, residual, damping, base):',
            f'    {joints}, = q'] \
        + ([f'    if not ({clear}):', '        return None'] if clear else []) \
        + lines + _damped_step_lines(entries, n)[:-1] \
        + [f'    {joints}, = {", ".join(f"q{c} + ({step})" for c, step in enumerate(steps))},'] \
        + ([f'    if {past}:', '        return None'] if past else []) + forward
