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
Velocity commands through the IK controller: what the node's jog topics promise.

On the 6-DOF demo arm streaming at 100 Hz: a twist moves the tool as commanded, the arm is
at rest within the jog timeout plus its braking time once the stream stops, a pose target
and a twist take over from each other without a jump, hold, disable and stale feedback
brake a jog like a target, the diagnostics carry the jog status, and commands the
controller cannot take are refused with a reason. Random interleavings with everything
else are the safety contract's (test_controller.py).
"""

from pathlib import Path

from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.controller import IkController, Settings, Target
from fabrik_ros.jog import achieved_twist, JogSettings, JogStatus
import numpy as np
import pytest
from test_controller import BASE

REPO = Path(__file__).resolve().parents[1]
DT = 0.01  # s
ACCELERATION = 20.0  # rad/s^2, every joint
START = np.array([0.0, 0.5, 1.0, 0.0, 0.8, 0.0])  # well conditioned, inside the limits
TWIST = np.array([0.03, -0.04, 0.02, 0.1, 0.0, -0.2])  # m/s, rad/s, base frame


@pytest.fixture(name='arm', scope='module')
def arm_fixture():
    """Return the 6-DOF demo arm."""
    return chain_from_parameters(load_config(REPO / 'config' / 'arm.yaml'), REPO)


def streaming(arm, feedback: bool = False, **values) -> IkController:
    """Return a controller at 100 Hz, measured (or started) at START."""
    settings = Settings.from_parameters(arm, {**BASE, 'default_max_acceleration': ACCELERATION,
                                              **values})
    controller = IkController(settings, 0.0, command_period=DT, feedback=feedback)
    if feedback:
        controller.on_feedback(arm.joint_names, START.tolist(), 0.0)
    else:
        controller.stream.start(START)
    return controller


def jog(controller, twist, start: float, seconds: float, frame='base') -> list:
    """Send `twist` before every tick for `seconds` from `start`; return the commands."""
    commands = []
    for k in range(int(round(seconds / DT))):
        now = start + DT * (k + 1)
        assert controller.jog.on_twist(0, twist, now, frame).refusal is None
        commands.append(controller.tick(now).command)
    return commands


def ticks(controller, start: float, seconds: float) -> list:
    """Tick without commands for `seconds` from `start`; return the commands."""
    return [controller.tick(start + DT * (k + 1)).command
            for k in range(int(round(seconds / DT)))]


def largest_acceleration(commands) -> float:
    velocities = np.array([command.velocity for command in commands])
    return float(np.abs(np.diff(velocities, axis=0)).max() / DT)


def test_a_twist_moves_the_tool_at_the_commanded_velocity(arm):
    controller = streaming(arm)
    commands = jog(controller, TWIST, 0.0, 0.6)
    for before, after in zip(commands[30:], commands[31:]):  # past the start-up ramp
        achieved = achieved_twist(arm, before.position, after.position, DT)
        for part in (slice(0, 3), slice(3, 6)):
            wanted = TWIST[part]
            assert np.linalg.norm(achieved[part] - wanted) <= 0.05 * np.linalg.norm(wanted)
            cosine = achieved[part] @ wanted / np.linalg.norm(achieved[part]) \
                / np.linalg.norm(wanted)
            assert np.degrees(np.arccos(min(cosine, 1.0))) <= 3.0
    assert controller.jog.status == JogStatus.NO_WARNING
    assert controller.status(0.6, 1.0).message == 'jogging (twist): no_warning'


def test_when_the_stream_stops_the_arm_rests_within_the_timeout_plus_its_braking_time(arm):
    controller = streaming(arm)
    moving = jog(controller, TWIST, 0.0, 0.5)[-1]
    braking = float(np.max(np.abs(moving.velocity)) / ACCELERATION)
    after = ticks(controller, 0.5, 1.0)
    still = next(k for k, command in enumerate(after) if not np.any(command.velocity))
    assert (still + 1) * DT <= JogSettings().timeout + braking + 2 * DT
    assert largest_acceleration([moving] + after) <= ACCELERATION * (1 + 1e-6)
    assert not controller.jog.active and controller.stream.at_rest
    assert all(np.array_equal(c.position, after[still].position) for c in after[still:])
    assert controller.status(1.5, 1.0).message == 'waiting for a target'


def test_a_pose_target_takes_over_from_a_moving_jog_without_a_jump(arm):
    controller = streaming(arm)
    commands = jog(controller, TWIST * 3.0, 0.0, 0.3)
    assert np.any(commands[-1].velocity)
    goal = arm.tip_position(START + 0.3)
    assert controller.on_target(0, Target(goal), 0.3).refusal is None
    assert not controller.jog.active
    commands += ticks(controller, 0.3, 2.0)
    assert largest_acceleration(commands) <= ACCELERATION * (1 + 1e-6)
    assert np.linalg.norm(arm.tip_position(commands[-1].position) - goal) < 1e-3


def test_a_twist_takes_over_from_a_moving_target_without_a_jump_and_forgets_it(arm):
    controller = streaming(arm)
    controller.on_target(0, Target(arm.tip_position(START + 0.5)), 0.0)
    commands = ticks(controller, 0.0, 0.2)
    assert np.any(commands[-1].velocity)
    commands += jog(controller, np.zeros(6), 0.2, 0.3)  # a stick at rest: stop here
    assert controller.targets == [None] and controller.stream.goal is None
    assert largest_acceleration(commands) <= ACCELERATION * (1 + 1e-6)
    commands += ticks(controller, 0.5, 1.0)
    assert not np.any(commands[-1].velocity)
    assert np.linalg.norm(arm.tip_position(commands[-1].position)
                          - arm.tip_position(START + 0.5)) > 0.01, 'the target came back'


def test_a_joint_jog_moves_the_named_joints_and_holds_the_others(arm):
    controller = streaming(arm)
    commands = []
    for k in range(50):
        now = DT * (k + 1)
        assert controller.jog.on_joint_jog({'base_yaw': 0.4}, now).refusal is None
        commands.append(controller.tick(now).command)
    assert commands[-1].velocity[0] == pytest.approx(0.4)
    assert not np.any(commands[-1].velocity[1:])
    assert controller.status(0.5, 1.0).values['jog_source'] == 'joint'


@pytest.mark.parametrize('stop', ['hold', 'disable', 'stale feedback'])
def test_hold_disable_and_stale_feedback_brake_a_jog_within_the_limits(arm, stop):
    controller = streaming(arm, feedback=True)
    commands = []
    for k in range(40):
        now = DT * (k + 1)
        controller.on_feedback(arm.joint_names, controller.stream.position.tolist(), now)
        controller.jog.on_twist(0, TWIST * 3.0, now, 'base')
        commands.append(controller.tick(now).command)
    if stop == 'hold':
        controller.hold(0.4)
    elif stop == 'disable':
        controller.disable(0.4)
    after, refused = [], 0
    for k in range(1, 100):
        now = 0.4 + DT * k
        if stop == 'stale feedback':  # the stick stays on, the measurements stopped
            refused += controller.jog.on_twist(0, TWIST * 3.0, now, 'base').refusal is not None
        command = controller.tick(now).command
        if command is not None:
            after.append(command)
    assert not controller.jog.active
    assert stop != 'stale feedback' or refused > 50
    assert largest_acceleration(commands + after) <= ACCELERATION * (1 + 1e-6)
    assert not np.any(after[-1].velocity)


@pytest.mark.parametrize('case, message', [
    ('no command rate', 'command rate'),
    ('disabled', 'disabled'),
    ('stale feedback', 'no fresh feedback'),
    ('stamped too long ago', 'stamped 0.500 s in the past'),
    ('a bad frame', 'frame'),
    ('an unknown effector', 'unknown effector'),
    ('not finite', 'twist must be 6 finite numbers'),
])
def test_commands_the_controller_cannot_take_are_refused_with_a_reason(arm, case, message):
    settings = Settings.from_parameters(arm, BASE)
    controller = IkController(settings, 0.0, command_period=None if case == 'no command rate'
                              else DT, feedback=case == 'stale feedback')
    if case == 'disabled':
        controller.disable(0.0)
    twist, frame, age, effector = TWIST, 'base', None, 0
    if case == 'stamped too long ago':
        age = 0.5
    elif case == 'a bad frame':
        frame = 'world'
    elif case == 'an unknown effector':
        effector = 1
    elif case == 'not finite':
        twist = [np.nan] * 6
    update = controller.jog.on_twist(effector, twist, 0.0, frame, age)
    assert update.refusal[0] == 'jog' and message in update.refusal[1]
    assert not controller.jog.active and controller.jog.refused == 1
    assert controller.status(0.0, 1.0).values['last_refusal'] == update.refusal[1]


def test_the_diagnostics_carry_the_jog_status(arm):
    controller = streaming(arm)
    values = controller.status(0.0, 1.0).values
    assert values['jog_status'] == '0 NO_WARNING' and values['jog_source'] == 'none'
    stretched = np.array([0.0, 0.0, 0.0, 0.0, 0.3, 0.0])  # the elbow straight
    controller.stream.start(stretched)
    out = arm.tip_position(stretched) - arm.joint_positions(stretched)[1]
    jog(controller, np.concatenate([0.1 * out / np.linalg.norm(out), np.zeros(3)]), 0.0, 0.2)
    status = controller.jog.status
    assert status != JogStatus.NO_WARNING
    values = controller.status(0.2, 1.0)
    assert values.level == 'WARN' and values.values['jog_status'].startswith(f'{int(status)} ')
