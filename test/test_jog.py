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
Velocity jogging: what the joint command stream promises whatever the stick does.

On the project's 6-DOF arm (config/arm.yaml) and a 7-DOF Franka Panda (example-robot-data,
in requirements.txt; its tests skip when it is missing): limits held over random
interleavings of twists, joint jogs, silence and limit changes; rest after silence; the
tool following the twist where the arm is well conditioned; motion kept along the
directions a stretched arm still has; the posture of a redundant arm reached without
moving the tool; a joint at its limit stopping only itself; bad commands refused.
"""

from importlib import metadata
from pathlib import Path

from fabrik_ros.chain import Chain
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.jog import Jogger, JogSettings, JogStatus
from fabrik_ros.jog_step import DirectionFilter
from fabrik_ros.motion import MotionLimits
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

SHARE = Path(__file__).resolve().parents[1]
DT = 0.01  # s, the command period of every test
ACCELERATION = 8.0  # rad/s^2
ARM_START = np.array([0.0, 0.5, 1.0, 0.0, 0.8, 0.0])
PANDA_START = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])


def _arm() -> Chain:
    return chain_from_parameters(load_config(SHARE / 'config' / 'arm.yaml'), SHARE)


def _panda() -> Chain:
    try:
        share = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
    except metadata.PackageNotFoundError:
        pytest.skip('example-robot-data is not installed (pip install -r requirements.txt)')
    urdf = (Path(share) / 'panda_description/urdf/panda.urdf').read_text()
    return Chain.from_urdf(urdf, 'panda_link0', 'panda_link8')


ROBOTS = {'arm': (_arm, ARM_START), 'panda': (_panda, PANDA_START)}


def _limits(chain: Chain, velocity_share: float = 1.0,
            acceleration_share: float = 1.0) -> MotionLimits:
    velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity, 2.0)
    return MotionLimits.create(chain.lower, chain.upper, velocity * velocity_share,
                               ACCELERATION * acceleration_share)


def _jogger(robot: str, **options) -> tuple[Chain, Jogger]:
    make, start = ROBOTS[robot]
    chain = make()
    return chain, Jogger(chain, _limits(chain), start, JogSettings(command_period=DT,
                                                                   **options))


def _tool_twist(chain: Chain, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Return the tool's (6,) base-frame twist between two joint vectors one tick apart."""
    a, b = chain.tip_pose(before), chain.tip_pose(after)
    turn = b[:3, :3] @ a[:3, :3].T
    angle = np.arccos(np.clip((np.trace(turn) - 1.0) / 2.0, -1.0, 1.0))
    skew = np.array([turn[2, 1] - turn[1, 2], turn[0, 2] - turn[2, 0], turn[1, 0] - turn[0, 1]])
    axis_times_sine = skew / 2.0  # small turns only: one tick of a jog
    rotation = axis_times_sine * (angle / np.sin(angle) if angle > 1e-12 else 1.0)
    return np.concatenate([b[:3, 3] - a[:3, 3], rotation]) / DT


def _without_singular_directions(chain: Chain, q: np.ndarray, twist: np.ndarray,
                                 condition: float = 17.0) -> np.ndarray:
    """
    Return ``twist`` less its parts along directions conditioned worse than ``condition``.

    The Jacobian is written here from the chain's joint axes (unit length scale).
    """
    kinematics = chain.forward(q)
    tip = chain.tip_position(q)
    linear = np.cross(kinematics.axes, tip - kinematics.positions).T
    u, sigma, _ = np.linalg.svd(np.vstack([linear, kinematics.axes.T]))
    weak = u[:, sigma * condition < sigma[0]]
    return twist - weak @ (weak.T @ twist)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    cosine = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))))


twists = st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6).map(
    lambda v: np.array(v) * np.array([0.3, 0.3, 0.3, 1.0, 1.0, 1.0]))
events = st.one_of(
    st.tuples(st.just('twist'), twists, st.sampled_from(['base', 'tool']),
              st.integers(1, 40)),
    st.tuples(st.just('joint'), st.lists(st.floats(-3.0, 3.0), min_size=7, max_size=7),
              st.just(''), st.integers(1, 40)),
    st.tuples(st.just('silence'), st.none(), st.just(''), st.integers(1, 30)),
    st.tuples(st.just('limits'), st.tuples(st.floats(0.2, 1.0), st.floats(0.5, 1.0)),
              st.just(''), st.just(1)))


class TestLimitsHold:
    """Whatever the commands, every joint stays within its limits, finite."""

    @pytest.mark.parametrize('robot', ROBOTS)
    @settings(max_examples=25, deadline=None)
    @given(sequence=st.lists(events, min_size=1, max_size=8))
    def test_random_interleavings_keep_every_limit(self, robot, sequence):
        chain, jogger = _jogger(robot)
        now, velocity = 0.0, np.zeros(chain.dof)
        for kind, payload, frame, ticks in sequence:
            if kind == 'limits':
                jogger.set_limits(_limits(chain, *payload))
            for _ in range(ticks):
                if kind == 'twist':
                    jogger.on_twist(payload, now, frame)
                elif kind == 'joint':
                    jogger.on_joint_jog(dict(zip(chain.joint_names, payload)), now)
                command = jogger.tick(now)
                limits = jogger.limits
                assert np.isfinite(command.position).all()
                assert np.isfinite(command.velocity).all()
                assert (command.position >= limits.lower).all()
                assert (command.position <= limits.upper).all()
                # A velocity limit that narrowed is reached at the acceleration limit.
                speed = np.abs(command.velocity)
                assert (speed <= np.maximum(limits.max_velocity, np.abs(velocity))
                        + 1e-9).all()
                # Position limits come first: a joint that can no longer stop before its
                # bound at an acceleration limit that just narrowed stops on the bound.
                on_bound = (command.position == limits.lower) | \
                    (command.position == limits.upper)
                assert (on_bound | (np.abs(command.velocity - velocity)
                                    <= limits.max_acceleration * DT * (1 + 1e-6) + 1e-9)).all()
                velocity = command.velocity
                now += DT

    @pytest.mark.parametrize('robot', ROBOTS)
    @settings(max_examples=15, deadline=None)
    @given(twist=twists, ticks=st.integers(5, 60))
    def test_silence_brings_the_arm_to_rest_within_timeout_plus_braking(
            self, robot, twist, ticks):
        chain, jogger = _jogger(robot)
        now = 0.0
        for _ in range(ticks):
            jogger.on_twist(twist, now)
            jogger.tick(now)
            now += DT
        last_command, braking = now - DT, None
        while not jogger.at_rest:
            if braking is None and now - last_command > 0.1:
                braking = float(np.max(np.abs(jogger.velocity) / ACCELERATION))
            jogger.tick(now)
            now += DT
            assert now - last_command <= 0.1 + (braking or 0.0) + 2 * DT
        assert jogger.tick(now).status == JogStatus.NO_WARNING


class TestTracking:
    """Where the arm is well conditioned the tool moves as commanded."""

    @pytest.mark.parametrize('robot', ROBOTS)
    @settings(max_examples=20, deadline=None)
    @given(twist=twists.map(lambda t: t * 0.3))
    def test_tool_velocity_within_five_percent_and_three_degrees(self, robot, twist):
        chain, jogger = _jogger(robot)
        now, before = 0.0, jogger.position.copy()
        for tick in range(40):
            jogger.on_twist(twist, now)
            command = jogger.tick(now)
            now += DT
            if tick >= 20 and command.status == JogStatus.NO_WARNING:
                achieved = _tool_twist(chain, before, command.position)
                for part in (slice(0, 3), slice(3, 6)):
                    wanted = twist[part]
                    if np.linalg.norm(wanted) > 1e-3:
                        error = np.linalg.norm(achieved[part] - wanted)
                        assert error <= 0.05 * np.linalg.norm(wanted)
                        assert _angle_deg(achieved[part], wanted) <= 3.0
            before = command.position.copy()

    def test_tool_frame_twist_moves_along_the_tool_axes(self):
        chain, jogger = _jogger('arm')
        tool = chain.tip_pose(jogger.position)[:3, :3]
        for tick in range(30):
            jogger.on_twist([0.0, 0.0, 0.05, 0.0, 0.0, 0.0], tick * DT, 'tool')
            before = jogger.position.copy()
            jogger.tick(tick * DT)
        achieved = _tool_twist(chain, before, jogger.position)
        np.testing.assert_allclose(achieved[:3], tool @ [0.0, 0.0, 0.05], atol=2e-3)

    def test_switching_from_a_moving_arm_never_jumps(self):
        chain, jogger = _jogger('arm')
        moving = np.array([0.3, -0.2, 0.4, 0.0, 0.1, 0.0])
        jogger.reset(ARM_START, moving)
        jogger.on_twist(np.zeros(6), 0.0)
        command = jogger.tick(0.0)
        assert (np.abs(command.velocity - moving) <= ACCELERATION * DT + 1e-9).all()


class TestSingularities:
    """Near a singularity only the vanishing directions slow down."""

    def test_push_past_full_stretch_keeps_the_speed_along_the_remaining_directions(self):
        chain, jogger = _jogger('arm')
        start = np.array([0.0, 0.4, 0.3, 0.0, 1.0, 0.0])
        jogger.reset(start)
        shoulder = chain.joint_positions(start)[1]
        outward = chain.tip_position(start) - shoulder
        outward /= np.linalg.norm(outward)
        twist = np.concatenate([0.2 * outward + [0.0, 0.05, 0.0], np.zeros(3)])
        now, statuses = 0.0, set()
        for tick in range(150):
            before = jogger.position.copy()
            jogger.on_twist(twist, now)
            command = jogger.tick(now)
            now += DT
            statuses.add(command.status)
            assert (np.abs(command.velocity) <= jogger.limits.max_velocity + 1e-9).all()
            if tick >= 20:  # past the start-up ramp at the acceleration limits
                remaining = _without_singular_directions(chain, before, twist)
                achieved = _tool_twist(chain, before, command.position)
                along = np.dot(achieved, remaining) / np.linalg.norm(remaining)
                assert along >= 0.5 * np.linalg.norm(remaining)
        assert JogStatus.DECELERATE_FOR_APPROACHING_SINGULARITY in statuses
        assert abs(jogger.position[2]) < 0.05  # the elbow did straighten

    def test_direction_weights_fall_smoothly_to_zero_at_the_singularity(self):
        sigma = np.array([1.0, 1.0 / 10.0, 1.0 / 17.0, 1.0 / 50.0, 1.0 / 150.0, 0.0])
        weights = DirectionFilter(17.0).weights(sigma)
        assert weights[:3].tolist() == [1.0, 1.0, 1.0]
        assert 1.0 > weights[3] > weights[4] > weights[5] == 0.0
        # The joint speed a unit twist asks along a fading direction stays bounded.
        assert (weights[3:5] / sigma[3:5] <= 1.125 * 17.0).all()


class TestTrees:
    """Each effector of a tree takes its own twist; one without a twist holds still."""

    def test_one_effector_jogs_while_the_other_holds(self):
        chain = chain_from_parameters(load_config(SHARE / 'config' / 'dual_arm.yaml'), SHARE)
        start = np.full(chain.dof, 0.3)
        start[[chain.joint_names.index('left_elbow_pitch'),
               chain.joint_names.index('right_elbow_pitch')]] = -1.5  # well bent
        # Five joints per arm: positions only, as config/dual_arm.yaml solves them.
        jogger = Jogger(chain, _limits(chain), start,
                        JogSettings(command_period=DT, track_orientation=False))
        held = chain.tip_position(start, 1)
        moved = chain.tip_position(start, 0)
        for tick in range(50):
            jogger.on_twist([0.0, 0.0, 0.05, 0.0, 0.0, 0.0], tick * DT, effector='left_tool')
            jogger.tick(tick * DT)
        # Within half a millimetre: the joints shared with the moving arm accelerate at
        # their own limits, and the drift that leaves is corrected at goal_gain.
        np.testing.assert_allclose(chain.tip_position(jogger.position, 1), held, atol=5e-4)
        assert chain.tip_position(jogger.position, 0)[2] - moved[2] > 0.015


class TestRedundancy:
    """A 7-DOF arm reaches its posture in the null space without moving the tool."""

    def test_posture_drift_leaves_the_tool_in_place(self):
        chain, jogger = _jogger('panda', posture_gain=2.0)
        middle = (chain.lower + chain.upper) / 2.0
        tool = chain.tip_pose(PANDA_START)
        distance = np.linalg.norm(PANDA_START - middle)
        for tick in range(100):
            jogger.on_twist(np.zeros(6), tick * DT)
            jogger.tick(tick * DT)
        np.testing.assert_allclose(chain.tip_pose(jogger.position), tool, atol=1e-3)
        assert np.linalg.norm(jogger.position - middle) < distance - 0.005


class TestJointBounds:
    """A joint at its limit stops only the motion pushing into it."""

    def test_joint_jog_into_a_limit_stops_that_joint_only(self):
        chain, jogger = _jogger('arm')
        jog = {'elbow_pitch': 2.0, 'base_yaw': 0.5}
        statuses = []
        for tick in range(200):
            jogger.on_joint_jog(jog, tick * DT)
            statuses.append(jogger.tick(tick * DT).status)
        assert jogger.position[2] == pytest.approx(chain.upper[2])
        assert jogger.velocity[0] == pytest.approx(0.5)
        assert statuses[-1] == JogStatus.JOINT_BOUND

    def test_twist_with_a_joint_at_its_limit_follows_what_it_can(self):
        chain, jogger = _jogger('arm')
        start = ARM_START.copy()
        start[4] = chain.upper[4]
        jogger.reset(start)
        twist = np.array([0.0, 0.05, 0.0, 0.0, 0.3, 0.0])
        for tick in range(40):
            before = jogger.position.copy()
            jogger.on_twist(twist, tick * DT)
            command = jogger.tick(tick * DT)
        assert (command.position <= chain.upper).all()
        assert np.linalg.norm(_tool_twist(chain, before, command.position)) > 0.01


class TestRefusals:
    """Bad commands are refused with a reason naming the culprit; nothing moves."""

    @pytest.mark.parametrize('call, message', [
        (lambda j: j.on_twist([0.0, float('nan'), 0, 0, 0, 0], 0.0), 'twist'),
        (lambda j: j.on_twist([0.0] * 5, 0.0), 'twist'),
        (lambda j: j.on_twist([0.0] * 6, 0.0, 'world'), 'frame'),
        (lambda j: j.on_twist([0.0] * 6, 0.0, effector='hand'), 'hand'),
        (lambda j: j.on_twist([0.0] * 6, float('inf')), 'time'),
        (lambda j: j.on_joint_jog({'knee': 1.0}, 0.0), 'knee'),
        (lambda j: j.on_joint_jog({'base_yaw': float('inf')}, 0.0), 'base_yaw'),
    ])
    def test_bad_command_raises_naming_it(self, call, message):
        _, jogger = _jogger('arm')
        with pytest.raises(ValueError, match=message):
            call(jogger)
        assert jogger.tick(0.0).status == JogStatus.NO_WARNING
        assert jogger.at_rest
