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
How the IK controller takes a new model without a jump, without ROS.

A function of the controller (fabrik_ros.controller, which hands itself in); the
comparisons of two models and the mapping of joint state are fabrik_ros.model_change's.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from typing import TYPE_CHECKING

from fabrik_ros.command import CommandStream, joint_order, measured_positions
from fabrik_ros.controller_types import Update
from fabrik_ros.model_change import carried_state, same_kinematics, same_model
from fabrik_ros.motion import MotionLimits
from fabrik_ros.settings import Settings
import numpy as np

if TYPE_CHECKING:  # the controller hands itself in: no import circle at run time
    from fabrik_ros.controller import IkController


def change_model(controller: IkController, settings: Settings, now: float,
                 command_joints: Sequence[str] = ()) -> Update:
    """
    Take a new model (robot_description published again) without a jump.

    The same robot (same kinematics and limits) changes nothing. The same kinematics
    with other limits is a limit change (configure): the targets stay. Otherwise
    every target is forgotten and the command brakes to a stop from where it is: each
    joint of both models keeps its command and speed, within the old limits until the
    new ones hold; a new joint starts at rest where it is measured (open loop: the
    neutral pose). Closed loop, without a measurement of every new joint the stream
    waits for one (as at start-up). ValueError (nothing changes) for a bad joint order.
    """
    old, chain = controller.settings.chain, settings.chain
    order = joint_order(chain.joint_names, list(command_joints) or chain.joint_names)
    if same_model(old, chain) and np.array_equal(order, controller.command_order):
        return Update()
    if same_kinematics(old, chain):
        controller.configure(settings, command_joints)
        return Update()
    controller._forget()
    controller.targets = [None] * len(chain.effectors)
    controller.command_order, controller.settings = order, settings
    controller._solver = controller._pinned = None
    controller.measured = _measured_of(controller, chain.joint_names)
    if controller.measured is None:
        controller._measured_time = -math.inf
    controller.stream = _carried_stream(controller, old.joint_names, settings)
    return Update(warnings=[('model', 'new robot model: targets forgotten, braking to a '
                             'stop')])


def _carried_stream(controller: IkController, old_names: Sequence[str],
                    settings: Settings) -> CommandStream:
    """Return the command stream of the new joints, carried over from the current one."""
    names, motion, stream = settings.chain.joint_names, settings.motion, controller.stream
    dt = stream.dt
    if stream.position is None or (controller.feedback and controller.measured is None):
        fresh = CommandStream(motion, dt)
        if not controller.feedback:
            fresh.start(settings.chain.neutral())
        return fresh
    start = controller.measured if controller.feedback else np.clip(
        settings.chain.neutral(), motion.lower, motion.upper)
    before = stream.limits_in_force()
    vectors = {name: carried_state(old_names, names, getattr(before, name),
                                   getattr(motion, name))
               for name in ('lower', 'upper', 'max_velocity', 'max_acceleration',
                            'max_step')}
    return CommandStream.resumed(
        MotionLimits(**vectors), motion, dt,
        carried_state(old_names, names, stream.position, start),
        carried_state(old_names, names, stream.velocity, np.zeros(len(names))),
        'new robot model')


def _measured_of(controller: IkController, joints: Sequence[str]) -> np.ndarray | None:
    """Return the last measurement of `joints` if it has them all, else None."""
    if controller._feedback is None:
        return None
    try:
        return measured_positions(*controller._feedback, joints)
    except ValueError:
        return None
