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
The IK controller's diagnostics, without ROS: what it reports and the solve statistics.

Only what is in force is reported: once every target is forgotten (hold, disable, a stale
target or feedback, a new model) the last solve's reach and error go with it, so a
forgotten target is never reported as reached; the solve times stay, they describe the
solver, not a target.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import TYPE_CHECKING

from fabrik_ros.ik import IkResult
from fabrik_ros.ik.collisions import described_self_collision
from fabrik_ros.jog import JogStatus

if TYPE_CHECKING:  # the controller hands itself in: no import circle at run time
    from fabrik_ros.controller import IkController


@dataclass(frozen=True)
class Status:
    """The controller's state for diagnostics."""

    level: str  # 'OK' or 'WARN'
    message: str
    values: dict[str, object]


@dataclass
class SolveStats:
    """How many solves, and how long they took, over the whole run and a window."""

    solves: int = 0
    window_solves: int = 0  # since the window began
    seconds: float = 0.0  # of the last solve
    window_max_seconds: float = 0.0

    def record(self, seconds: float) -> None:
        """Count one solve of `seconds`."""
        self.solves += 1
        self.window_solves += 1
        self.seconds = seconds
        self.window_max_seconds = max(self.window_max_seconds, seconds)

    def values(self, period: float) -> dict[str, object]:
        """Return the window's figures (over `period` seconds) and start a new window."""
        values: dict[str, object] = {'solve_rate_hz': f'{self.window_solves / period:.1f}'}
        if self.solves:
            values.update({'solve_time_ms': f'{1e3 * self.seconds:.3f}',
                           'solve_time_max_ms': f'{1e3 * self.window_max_seconds:.3f}'})
        self.window_solves = 0
        self.window_max_seconds = self.seconds if self.solves else 0.0
        return values


def angle_text(result: IkResult) -> str:
    """Return ', N.NN deg off in orientation' for a solve with orientations, else ''."""
    if not math.isfinite(result.orientation_error):
        return ''
    return f', {math.degrees(result.orientation_error):.2f} deg off in orientation'


def miss_text(result: IkResult, margin: float) -> str:
    """
    Say why an answer is not reached: out of reach, or held clear of a collision.

    An answer within twice the collision `margin` of its closest pair is the best clear
    compromise of a target reachable only in collision: the pair is named.
    """
    remaining = f'{result.error:.4f} m remaining' + angle_text(result)
    if result.clearance < 2.0 * margin:
        first, second = result.closest_pair
        return (f'target not reached: held {result.clearance:.3f} m clear of {first} and '
                f'{second}, {remaining}')
    return f'target out of reach: stretched toward it, {remaining}'


def _headline(controller: IkController, now: float) -> tuple[str, str]:
    """Return the level and message: what the controller does now."""
    result, holding = controller.result, controller.stream.hold_reason
    if controller.feedback_stale(now):
        return 'WARN', f'holding: no fresh feedback ({controller.feedback_age(now)})'
    if not controller.enabled:
        return 'OK', 'disabled: no commands are sent'
    if holding:
        return 'WARN', f'holding: {holding}'
    collision = controller.collision.describe()
    if controller.jog.active:
        status = controller.jog.status
        return ('OK' if status == JogStatus.NO_WARNING else 'WARN',
                f'jogging ({controller.jog.source}): {status.name.lower()}'
                + (f'; {collision}' if collision else ''))
    if collision:
        return 'WARN', f'stream {collision}'
    if result is None:
        return 'OK', 'waiting for a target'
    if result.reached:
        return 'OK', f'target reached, {result.error:.4f} m from it' + angle_text(result)
    return 'WARN', miss_text(result, controller.settings.collision_margin)


def _result_values(controller: IkController) -> dict[str, object]:
    """Return the figures of the solve in force (none once its targets are forgotten)."""
    result = controller.result
    if result is None:
        return {}
    values: dict[str, object] = {}
    if math.isfinite(result.orientation_error):
        values['orientation_error_rad'] = f'{result.orientation_error:.6f}'
    if math.isfinite(result.clearance):
        values['clearance_m'] = f'{result.clearance:.4f}'
        values['closest_pair'] = ' - '.join(result.closest_pair)
    values.update({'reached': result.reached, 'error_m': f'{result.error:.6f}',
                   'iterations': result.iterations, 'restarts': result.restarts,
                   'timed_out': result.timed_out})
    if len(result.errors) > 1:  # a tree: each effector's remaining distance
        values.update((f'error_m.{name}', 'no target' if math.isnan(error)
                       else f'{error:.6f}')
                      for name, error in zip(controller.settings.chain.effector_names,
                                             result.errors))
    return values


def status_of(controller: IkController, now: float, period: float) -> Status:
    """Return the controller's diagnostics of the last `period` seconds (a new window)."""
    level, message = _headline(controller, now)
    settings = controller.settings
    values: dict[str, object] = {
        'enabled': controller.enabled, 'targets_refused': controller.refused,
        'last_refusal': controller.last_refusal, 'reached': False,
        **controller.stats.values(period), **_result_values(controller)}
    off = described_self_collision(settings.chain)[1] if settings.self_collision else ''
    if off:   # asked for, but the description's geometry cannot be read
        values['self_collision'] = off
        if level == 'OK':
            level, message = 'WARN', f'{message}; self-collision off'
    if controller.collision.active:   # what the stream's own check saw at the last command
        collision = controller.collision
        values.update({'stream_collision': collision.state or 'clear',
                       'stream_clearance_m': ('' if collision.exact else 'at least ')
                       + f'{collision.clearance:.4f}',
                       'stream_closest_pair': ' - '.join(collision.pair) if collision.exact
                       else 'none nearer'})
    jog = controller.jog
    values.update({'jog_status': f'{int(jog.status)} {jog.status.name}',
                   'jog_source': jog.source or 'none', 'jog_refused': jog.refused})
    if controller.free:
        values['body_position_m'] = ', '.join(f'{x:.4f}' for x in controller.body)
    if controller.feedback:
        values['feedback_age_s'] = f'{controller.feedback_seconds(now):.3f}'
    values.update({'tolerance_m': settings.tolerance,
                   'orientation_mode': settings.orientation_mode,
                   'orientation_tolerance_rad': settings.orientation_tolerance,
                   'max_iterations': settings.max_iterations})
    return Status(level, message, values)
