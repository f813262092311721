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

"""The IK node's command bookkeeping, without ROS: joint orders, feedback, the stream."""

from fabrik_ros.command import (CommandStream, joint_order, measured_positions,
                                stopping_point)
from fabrik_ros.motion import MotionLimits
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

NAMES = ['shoulder', 'elbow', 'wrist']
DT = 0.02  # seconds


def test_joint_order_maps_a_permutation():
    order = joint_order(NAMES, ['wrist', 'shoulder', 'elbow'])
    assert np.array_equal(np.array([10.0, 20.0, 30.0])[order], [30.0, 10.0, 20.0])


@pytest.mark.parametrize('wanted, problem', [
    (['wrist', 'shoulder'], "missing: ['elbow']"),
    (['wrist', 'shoulder', 'elbow', 'gripper'], "unknown: ['gripper']"),
    (['wrist', 'shoulder', 'elbow', 'elbow'], "repeated: ['elbow']"),
])
def test_joint_order_must_name_every_joint_once(wanted, problem):
    with pytest.raises(ValueError, match=problem.replace('[', r'\[').replace(']', r'\]')):
        joint_order(NAMES, wanted)


def test_measured_positions_pick_our_joints_out_of_a_bigger_state():
    measured = measured_positions(['gripper', 'wrist', 'elbow', 'shoulder'],
                                  [0.9, 0.3, 0.2, 0.1], NAMES)
    assert np.array_equal(measured, [0.1, 0.2, 0.3])


@pytest.mark.parametrize('names, values, problem', [
    (['shoulder', 'elbow'], [0.1, 0.2], 'not measured'),
    (NAMES, [0.1, float('nan'), 0.3], 'not finite'),
    (NAMES, [0.1, 0.2], '3 names but 2 positions'),
])
def test_unusable_feedback_is_refused(names, values, problem):
    with pytest.raises(ValueError, match=problem):
        measured_positions(names, values, NAMES)


limits_strategy = st.builds(
    lambda lower, span, velocity, acceleration, step: MotionLimits.create(
        np.full(3, lower), np.full(3, lower + span), velocity, acceleration, step),
    st.floats(-3.0, 0.0), st.floats(0.1, 4.0), st.floats(0.1, 5.0), st.floats(0.5, 50.0),
    st.floats(0.01, 1.0) | st.just(np.inf))
goals = st.lists(st.tuples(st.floats(-4.0, 4.0), st.floats(-4.0, 4.0), st.floats(-4.0, 4.0)),
                 min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(limits_strategy, goals, st.integers(5, 60))
def test_stream_stays_within_every_limit_and_holds_without_turning_back(limits, goals, hold_at):
    stream = CommandStream(limits, DT)
    stream.start(np.zeros(3))
    path, velocities = [stream.position.copy()], [np.zeros(3)]
    for index in range(150):
        if index % 10 == 0 and index // 10 < len(goals) and index < hold_at:
            stream.follow(np.array(goals[index // 10]))
        if index == hold_at:
            stream.hold('test')
            braking_from = stream.velocity.copy()
        path.append(stream.step().copy())
        velocities.append(stream.velocity.copy())
        if index > hold_at:  # braking: never faster, never the other way
            assert np.all(stream.velocity * np.sign(braking_from) >= -1e-9)  # rad/s
            assert np.all(np.abs(stream.velocity) <= np.abs(braking_from) + 1e-9)
    path, velocities = np.array(path), np.array(velocities)
    slack = 1 + 1e-6
    assert np.all(path >= limits.lower - 1e-12) and np.all(path <= limits.upper + 1e-12)
    steps = np.abs(np.diff(path, axis=0))
    assert np.all(steps <= np.minimum(limits.max_velocity * DT, limits.max_step) * slack)
    assert np.all(np.abs(np.diff(velocities, axis=0)) <= limits.max_acceleration * DT * slack)


slowdowns = st.lists(st.none() | st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0),
                                           st.floats(0.0, 1.0)), min_size=40, max_size=40)


@settings(max_examples=60, deadline=None)
@given(limits_strategy, goals, slowdowns)
def test_a_hold_slowed_down_on_the_way_still_only_brakes(limits, goals, scales):
    # A collision slowdown may cap a braking joint harder than the hold planned; the hold
    # then brakes from where that left it, never speeding the joint up again.
    stream = CommandStream(limits, DT)
    stream.start(np.zeros(3))
    stream.follow(np.array(goals[0]))
    for _ in range(20):
        stream.step()
    stream.hold('test')
    for scale in scales:
        before = stream.velocity.copy()
        stream.slowdown = None if scale is None else (np.array(scale), np.full(3, np.inf))
        stream.step()
        stream.slowdown = None
        assert np.all(stream.velocity * np.sign(before) >= -1e-9)  # rad/s
        assert np.all(np.abs(stream.velocity) <= np.abs(before) + 1e-9)


@settings(max_examples=40, deadline=None)
@given(limits_strategy, st.tuples(st.floats(-4.0, 4.0), st.floats(-4.0, 4.0),
                                  st.floats(-4.0, 4.0)))
def test_without_a_command_rate_each_step_jumps_at_most_the_max_step(limits, goal):
    stream = CommandStream(limits, None)
    stream.start(np.zeros(3))
    stream.follow(np.array(goal))
    previous = stream.position.copy()
    for _ in range(500):
        position = stream.step().copy()
        assert np.all(np.abs(position - previous) <= limits.max_step * (1 + 1e-9))
        previous = position
    assert np.allclose(previous, np.clip(goal, limits.lower, limits.upper))


def test_stopping_point_is_ahead_by_the_braking_distance():
    limits = MotionLimits.create(np.full(2, -10.0), np.full(2, 10.0), 5.0, 2.0)
    point = stopping_point(np.zeros(2), np.array([1.0, -2.0]), limits, DT)
    assert np.allclose(point, [0.25 + 0.01, -1.0 - 0.02])
    unlimited = MotionLimits.create(np.full(2, -10.0), np.full(2, 10.0))
    assert np.array_equal(stopping_point(np.ones(2), np.ones(2), unlimited, DT), np.ones(2))
