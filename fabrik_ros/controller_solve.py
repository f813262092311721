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
How the IK controller takes and solves targets, and a free body follows them, without ROS.

Functions of the controller (fabrik_ros.controller, which hands itself in): when a target
can be taken, the solve of the targets in force, and a free root's body sliding toward
the solve's base with the joints that keep the targets from where it is.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from fabrik_ros.collision.shapes import Scene
from fabrik_ros.controller_status import miss_text
from fabrik_ros.controller_types import target_orientations, target_positions, Update
import numpy as np

if TYPE_CHECKING:  # the controller hands itself in: no import circle at run time
    from fabrik_ros.controller import IkController


def target_refusal(controller: IkController, now: float, age: float | None) -> str:
    """Return why a target cannot be taken now ('' if it can)."""
    if not controller.enabled or controller._disabling:
        return 'the node is disabled (call ~/enable)'
    if controller.feedback_stale(now):
        return f'no fresh feedback ({controller.feedback_age(now)})'
    timeout = controller.settings.target_timeout
    if timeout > 0.0 and age is not None:
        if age > timeout:
            return f'target stamped {age:.3f} s ago, older than target_timeout {timeout} s'
        if -age > timeout:
            return (f'target stamped {-age:.3f} s in the future, further than '
                    f'target_timeout {timeout} s (clocks out of sync?)')
    return ''


def move_body(controller: IkController, now: float) -> bool:
    """
    Move the body toward its goal, in a straight line at most max_body_velocity.

    Return whether it moved.
    """
    elapsed, controller._body_time = max(now - controller._body_time, 0.0), now
    if controller._disabling or not controller.enabled:  # no joint moves: nor the body
        controller.body_goal = controller.body.copy()
        return False
    offset = controller.body_goal - controller.body
    distance = float(np.linalg.norm(offset))
    if distance == 0.0:
        return False
    reach = controller.settings.max_body_velocity * elapsed
    controller.body = controller.body_goal.copy() if distance <= reach \
        else controller.body + offset * (reach / distance)
    return reach > 0.0


def solve(controller: IkController, now: float) -> Update:
    """Solve the current targets once and head for the solution (body: from now)."""
    controller._window_start = None
    settings, stream = controller.settings, controller.stream
    if controller._solver is None:
        controller._solver = settings.solver()
        if settings.root == 'pinned':   # a free root's obstacles would slide with its base
            controller._solver.set_obstacles(Scene(controller.obstacles,
                                                   controller.obstacle_names))
    targets = target_positions(controller.targets)
    orientations = None  # position-only: the solve exactly as without orientations
    if settings.orientation_mode != 'position' and any(
            target is not None and target.orientation is not None
            for target in controller.targets):
        orientations = target_orientations(controller.targets)
        if len(orientations) == 1:
            orientations = orientations[0]
    # Closed loop: start from where the arm is when it is measured; the body from
    # where it is (its pose is not measured) or, open loop, where it is heading.
    seed = controller.measured if controller.feedback else stream.goal
    if controller.free:  # up to now toward the goal in force: the new goal starts from here
        move_body(controller, now)
    origin = controller.body if controller.feedback or seed is None else controller.body_goal
    relative = targets - origin  # the solver's base starts at its origin
    start = time.perf_counter()
    try:
        result = controller._solver.solve(relative[0] if len(targets) == 1 else relative,
                                          seed=stream.position if seed is None else seed,
                                          orientation=orientations)
    except ValueError as error:
        controller._forget()  # refused targets must not block the next ones
        return controller.refuse('solver', str(error))
    seconds = time.perf_counter() - start
    if not (np.isfinite(result.q).all() and np.isfinite(result.base_position).all()):
        controller._forget()
        return controller.refuse('solver', f'solver returned non-finite joint angles '
                                 f'{result.q.tolist()} or base {result.base_position.tolist()}')
    controller.stats.record(seconds)
    controller.result = result
    controller.solved_targets = targets
    controller.jog.end()  # the latest source wins: from the jogger's state, no jump
    stream.follow(result.q)  # clipped into the limits
    if controller.free:
        controller.body_goal = origin + result.base_position
        controller._solved = (targets, orientations)
        if stream.dt is None:  # a command per solution: the body moves with it
            move_body(controller, now)
        follow_body(controller)
    update = Update()
    if stream.dt is None:
        update.command = controller._step()
    if not result.reached:
        update.warnings.append(('reach', miss_text(result, settings.collision_margin)))
    return update


def follow_body(controller: IkController) -> None:
    """
    Command the joints that keep the solved targets where the body is now (free root).

    A solve sends the body to body_goal with the joints for it there, but the body takes
    its time (max_body_velocity): until it arrives, the joints come from a pinned solve
    of the same targets from where it is, so feet stay on their targets (as far as they
    reach from there) while it slides instead of being carried along with it. At the
    goal, the solve's own joints.
    """
    if np.array_equal(controller.body, controller.body_goal):
        controller.stream.follow(controller.result.q)
        return
    targets, orientations = controller._solved
    relative = targets - controller.body
    if controller._pinned is None:  # from the last joints on, no other branch: no restarts
        controller._pinned = controller.settings.solver(root='pinned', max_restarts=0)
    seed = controller.stream.goal if controller.stream.goal is not None else controller.result.q
    # At most half a command period, so a body sliding at every tick leaves the node its
    # time (a leg out of reach from where the body is takes a stretched solve).
    budgets = [b for b in (controller.settings.solve_timeout,
                           (controller.stream.dt or 0.0) / 2.0) if b]
    try:
        result = controller._pinned.solve(relative[0] if len(targets) == 1 else relative,
                                          seed=seed, orientation=orientations,
                                          timeout=min(budgets, default=None))
    except ValueError:  # the free solve's joints stay
        return
    if np.isfinite(result.q).all():
        controller.stream.follow(result.q)
