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

"""Specification of the joint motion limits (fabrik_ros.motion)."""

from fabrik_ros.chain import Chain
from fabrik_ros.motion import (braking_speed, limit_step, MotionLimiter, MotionLimits,
                               time_to_reach)
from hypothesis import assume, given, settings
from hypothesis import strategies as st
import numpy as np
import pytest

EPS = 1e-9
DTS = st.sampled_from([0.001, 0.004, 0.01, 0.02, 0.05])


@st.composite
def limited_joints(draw: st.DrawFn, size: int = 3) -> MotionLimits:
    """Draw finite position ranges with velocity and acceleration limits."""
    lower = np.array(draw(st.lists(st.floats(-3.0, 0.0), min_size=size, max_size=size)))
    span = np.array(draw(st.lists(st.floats(0.0, 4.0), min_size=size, max_size=size)))
    velocity = draw(st.lists(st.floats(0.2, 5.0), min_size=size, max_size=size))
    acceleration = draw(st.lists(st.floats(0.5, 50.0), min_size=size, max_size=size))
    return MotionLimits.create(lower, lower + span, velocity, acceleration)


def in_range(limits: MotionLimits, fractions: list[float]) -> np.ndarray:
    """Map fractions in [0, 1] to positions inside the joint ranges."""
    return limits.lower + np.array(fractions) * (limits.upper - limits.lower)


FRACTIONS = st.lists(st.floats(0.0, 1.0), min_size=3, max_size=3)


def run(limits: MotionLimits, start: np.ndarray, velocity: np.ndarray,
        targets: list[np.ndarray], dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Step through ``targets``; return positions (k+1, n) and velocities (k+1, n)."""
    positions, velocities = [start], [velocity]
    for target in targets:
        position, velocity = limit_step(positions[-1], velocities[-1], target, dt, limits)
        positions.append(position)
        velocities.append(velocity)
    return np.array(positions), np.array(velocities)


def assert_within_limits(limits: MotionLimits, positions: np.ndarray,
                         velocities: np.ndarray, dt: float) -> None:
    """Every step respects the position range, velocity and acceleration limits."""
    assert (positions >= limits.lower).all() and (positions <= limits.upper).all()
    assert (np.abs(velocities[1:]) <= limits.max_velocity * (1 + EPS) + EPS).all()
    accelerations = np.diff(velocities, axis=0) / dt
    assert (np.abs(accelerations) <= limits.max_acceleration * (1 + 1e-6) + 1e-6).all()
    assert np.allclose(np.diff(positions, axis=0) / dt, velocities[1:])


@settings(max_examples=150, deadline=None)
@given(limits=limited_joints(), start=FRACTIONS, goal=FRACTIONS, dt=DTS)
def test_reaches_in_limit_target_in_predicted_time_without_overshoot(
        limits: MotionLimits, start: list[float], goal: list[float], dt: float) -> None:
    """From rest, a step target is reached within the limits, on time, never passed."""
    start_q, goal_q = in_range(limits, start), in_range(limits, goal)
    predicted = time_to_reach(start_q, goal_q, limits)
    assume(predicted / dt < 3000)
    steps = int(np.ceil(predicted / dt)) + 3
    positions, velocities = run(limits, start_q, np.zeros(3), [goal_q] * steps, dt)
    assert_within_limits(limits, positions, velocities, dt)
    direction = np.sign(goal_q - start_q)
    assert ((goal_q - positions) * direction >= -1e-12).all(), 'overshoot'
    arrived = np.all(positions == goal_q, axis=1)
    assert arrived.any(), 'did not arrive within the predicted time + 3 steps'
    first = int(np.argmax(arrived))
    # Within a step or so of the continuous-time optimum, either way.
    assert abs(first * dt - predicted) <= 1.5 * dt, 'not near time-optimal'
    assert np.all(positions[first:] == goal_q) and np.all(velocities[-1] == 0.0)


@settings(max_examples=100, deadline=None)
@given(limits=limited_joints(), start=FRACTIONS, dt=DTS,
       speeds=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3),
       targets=st.lists(st.lists(st.floats(-10.0, 10.0), min_size=3, max_size=3),
                        min_size=1, max_size=60))
def test_any_target_stream_stays_within_every_limit(
        limits: MotionLimits, start: list[float], dt: float, speeds: list[float],
        targets: list[list[float]]) -> None:
    """
    Jumping targets, out of range too, never break position/velocity/acceleration limits.

    The start may be moving, at any speed from which it can still stop inside its range.
    """
    start_q = in_range(limits, start)
    room = np.where(np.array(speeds) > 0, limits.upper - start_q, start_q - limits.lower)
    stoppable = np.minimum(limits.max_velocity, braking_speed(room, limits.max_acceleration, dt))
    stream = [np.array(t) for t in targets for _ in range(5)]
    positions, velocities = run(limits, start_q, np.array(speeds) * stoppable, stream, dt)
    assert_within_limits(limits, positions, velocities, dt)


def test_trapezoid_time_matches_closed_form() -> None:
    """1 rad/s, 2 rad/s^2 over 2.5 rad: 0.5 s ramp up, 2 s cruise, 0.5 s ramp down."""
    limits = MotionLimits.create([-3.0], [3.0], 1.0, 2.0)
    assert time_to_reach([0.0], [2.5], limits) == pytest.approx(3.0)
    limiter = MotionLimiter(limits, np.zeros(1))
    steps = 0
    while limiter.position[0] != 2.5:
        limiter.step(np.array([2.5]), 0.01)
        steps += 1
    assert steps * 0.01 == pytest.approx(3.0, abs=0.02)


def test_triangle_time_and_braking_from_a_wrong_way_velocity() -> None:
    """Short moves never reach the velocity limit; moving away first costs the stop."""
    limits = MotionLimits.create([-5.0], [5.0], 10.0, 1.0)
    assert time_to_reach([0.0], [1.0], limits) == pytest.approx(2.0)
    # Moving at -1 rad/s: 1 s to stop 0.5 rad further away, then 1.5 rad from rest.
    assert time_to_reach([0.0], [1.0], limits, velocity=[-1.0]) == pytest.approx(
        1.0 + 2.0 * np.sqrt(1.5))


def test_slowest_joint_sets_the_time_and_targets_are_clipped() -> None:
    """time_to_reach is the max over joints, to the clipped target."""
    limits = MotionLimits.create([-1.0, -1.0], [1.0, 1.0], [1.0, 0.5], np.inf)
    assert time_to_reach([0.0, 0.0], [0.5, 9.0], limits) == pytest.approx(2.0)


def test_limits_for_a_chain_take_its_range_and_velocities() -> None:
    """Joints without a velocity limit in the model get the default one."""
    chain = Chain.from_parameters(2, 0.3, joint_limit=[1.0, 2.0], max_velocity=np.inf)
    limits = MotionLimits.for_chain(chain, max_acceleration=5.0, default_max_velocity=1.5)
    assert np.array_equal(limits.lower, [-1.0, -2.0]) and np.array_equal(limits.upper, [1, 2])
    assert np.array_equal(limits.max_velocity, [1.5, 1.5])
    assert np.array_equal(limits.max_acceleration, [5.0, 5.0])
    assert np.all(np.isinf(limits.max_step))


def test_max_step_guard_caps_each_step() -> None:
    """The per-step guard holds even with unlimited velocity and acceleration."""
    limits = MotionLimits.create([-1.0], [1.0], max_step=0.1)
    positions, _ = run(limits, np.zeros(1), np.zeros(1), [np.array([1.0])] * 12, 0.01)
    assert np.allclose(np.diff(positions[:, 0])[:10], 0.1)
    assert positions[-1, 0] == 1.0


def test_continuous_joint_moves_at_velocity_limit() -> None:
    """Without position limits or acceleration limit the joint moves at vmax."""
    limits = MotionLimits.create([-np.inf], [np.inf], 2.0)
    position, velocity = limit_step(np.zeros(1), np.zeros(1), np.array([100.0]), 0.5, limits)
    assert position[0] == 1.0 and velocity[0] == 2.0


def test_output_is_clipped_into_limits_even_from_outside() -> None:
    """A start outside the range still yields an in-range command."""
    limits = MotionLimits.create([-1.0], [1.0], 1.0, 1.0)
    position, _ = limit_step(np.array([3.0]), np.zeros(1), np.array([3.0]), 0.01, limits)
    assert position[0] == 1.0


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_raise(bad: float) -> None:
    """NaN/inf positions, velocities, targets and dt are refused with ValueError."""
    limits = MotionLimits.create([-1.0], [1.0], 1.0, 1.0)
    good = np.zeros(1)
    with pytest.raises(ValueError, match='finite'):
        limit_step(np.array([bad]), good, good, 0.01, limits)
    with pytest.raises(ValueError, match='finite'):
        limit_step(good, np.array([bad]), good, 0.01, limits)
    with pytest.raises(ValueError, match='finite'):
        limit_step(good, good, np.array([bad]), 0.01, limits)
    with pytest.raises(ValueError, match='dt'):
        limit_step(good, good, good, bad, limits)
    with pytest.raises(ValueError, match='finite'):
        time_to_reach(good, np.array([bad]), limits)


def test_bad_limits_and_shapes_raise() -> None:
    """Impossible limits and wrong lengths name the problem."""
    with pytest.raises(ValueError, match='lower limit'):
        MotionLimits.create([1.0], [0.0])
    with pytest.raises(ValueError, match='max_velocity must be positive'):
        MotionLimits.create([0.0], [1.0], max_velocity=0.0)
    with pytest.raises(ValueError, match='NaN'):
        MotionLimits.create([0.0], [1.0], max_acceleration=np.nan)
    with pytest.raises(ValueError, match='2 entries'):
        MotionLimits.create([0.0, 0.0], [1.0, 1.0], max_velocity=[1.0, 1.0, 1.0])
    limits = MotionLimits.create([0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match='shape'):
        limit_step(np.zeros(3), np.zeros(2), np.zeros(2), 0.01, limits)
