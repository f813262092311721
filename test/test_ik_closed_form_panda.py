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
Specification of the Panda's closed form: seven joints, the last one given, every pose exact.

On the Franka Panda as published (example-robot-data) and on random chains of its kind: a
spherical shoulder, an elbow, a fifth and a sixth axis that meet, a seventh joint anywhere.
Poses are checked with numpy (Chain.tip_pose), independently of the closed form under test.
"""

import math

from fabrik_ros.chain import Chain, Effector, Joint, rotation_from_rpy
from fabrik_ros.ik import IkSolver
from fabrik_ros.ik.offset_elbow import offset_elbow, offset_elbow_angles, swept_angles
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from test_descriptions import _example_robot_data
from test_ik import assert_within_limits, demo_arm, hypothesis_draws, pose_in_limits, \
    random_pose, Real
from test_ik_orientation import offset_arm
from test_wrist import EXACT, reached, unit_vector, wrist_axes

NEAR_SINGULAR = math.radians(3.0)   # poses this close to a singularity lose digits


def panda() -> Chain:
    """Return the Franka Panda arm to its flange (panda_link8)."""
    return Chain.from_urdf(_example_robot_data('panda_description/urdf/panda.urdf'),
                           'panda_link0', 'panda_link8')


def panda_like_arm(real: Real) -> Chain:
    """
    Return a random arm of the Panda's kind: axes, offsets, frames and limits drawn.

    Laid out at q = 0 in the base frame, then given random joint frames: three shoulder
    axes through one point S (no two in a row within 10 degrees of parallel; the first two
    joints at S, the third on its own axis 0-0.3 m on), an elbow 0.2-0.4 m on, its axis
    across the line from S, the fifth joint 0.2-0.4 m on across the elbow's axis, the sixth
    on the fifth's axis 0-0.2 m on (not within 10 degrees of it), the seventh 0.05-0.15 m
    from there about any axis, a tool anywhere. Ranges of at least 2 rad.
    """
    def across(v: np.ndarray) -> np.ndarray:
        w = np.cross(v, unit_vector(real))
        if np.linalg.norm(w) < 0.1:
            w = np.cross(v, [1.0, 0.0, 0.0] if abs(v[0]) < 0.9 * np.linalg.norm(v)
                         else [0.0, 1.0, 0.0])
        return w / np.linalg.norm(w)

    def turn():
        return rotation_from_rpy([real(-math.pi, math.pi) for _ in range(3)])

    shoulder = np.array([0.0, 0.0, real(0.1, 0.3)])
    axes = wrist_axes(real)
    points = [shoulder, shoulder, shoulder + real(0.0, 0.3) * axes[2]]
    points.append(points[-1] + unit_vector(real) * real(0.2, 0.4))
    axes.append(across(points[3] - shoulder))
    points.append(points[3] + across(axes[3]) * real(0.2, 0.4))
    axes += wrist_axes(real)[:2]
    points.append(points[4] + real(0.0, 0.2) * axes[4])
    points.append(points[5] + unit_vector(real) * real(0.05, 0.15))
    axes.append(unit_vector(real))
    joints, frame, origin = [], np.eye(3), np.zeros(3)
    for index, (point, axis) in enumerate(zip(points, axes)):
        rotation = turn()
        joints.append(Joint(f'j{index}', index - 1, frame.T @ (point - origin), rotation,
                            (frame @ rotation).T @ axis, real(-math.pi, -1.0),
                            real(1.0, math.pi)))
        frame, origin = frame @ rotation, point
    tool = Effector('tool', 6, np.array([real(-0.1, 0.1) for _ in range(3)]), turn())
    return Chain('base', joints, [tool])


def singular(chain: Chain, q: np.ndarray) -> bool:
    """
    Return whether q lies within NEAR_SINGULAR of one of the closed form's singularities.

    The sixth or the fifth axis along the line from the shoulder's point S (the first
    joint's origin) to where the fifth and sixth axes meet (the sixth joint's origin), the
    first and third axes in line, the elbow where its turn leaves that line's length put.
    """
    kinematics = chain.forward(q)
    points, axes = kinematics.positions, kinematics.axes
    line = points[5] - points[0]
    line /= np.linalg.norm(line)
    lever = np.cross(axes[3], points[5] - points[3])   # the meeting point's velocity

    def near(a, b):
        return abs(a @ b) > math.cos(NEAR_SINGULAR)

    return near(axes[5], line) or near(axes[4], line) or near(axes[0], axes[2]) \
        or abs(line @ lever) < math.sin(NEAR_SINGULAR) * np.linalg.norm(lever)


def solved(chain: Chain, q: np.ndarray, seed: np.ndarray) -> list[float] | None:
    """Return the closed form's answer for FK(q)'s pose with the seventh angle at q's."""
    arm = offset_elbow(chain, 1e-4)
    assert arm is not None
    pose = chain.tip_pose(q)
    last = float(np.clip(q[6], chain.lower[6], chain.upper[6]))   # a bound's rounding
    found = offset_elbow_angles(arm, pose[:3, 3].tolist(), pose[:3, :3].ravel().tolist(),
                                last, seed.tolist(), chain.lower.tolist(),
                                chain.upper.tolist())
    return None if found is None else found[0]


def assert_same_pose(chain: Chain, q: np.ndarray, angles: list[float] | None) -> None:
    """Assert the angles are within the limits and put the tool where q does."""
    assert angles is not None
    assert_within_limits(chain, np.array(angles))
    np.testing.assert_allclose(chain.tip_pose(np.array(angles)), chain.tip_pose(q),
                               atol=EXACT)


class TestClosedForm:
    """The seventh angle given, every pose the arm takes within its limits, exactly."""

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_the_panda_takes_every_pose_exactly_within_its_limits(self, data):
        real, _ = hypothesis_draws(data.draw)
        chain = panda()
        q, seed = random_pose(chain, real), random_pose(chain, real)
        assume(not singular(chain, q))
        assert_same_pose(chain, q, solved(chain, q, seed))

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_arms_of_its_kind_take_every_pose_exactly_within_their_limits(self, data):
        real, _ = hypothesis_draws(data.draw)
        chain = panda_like_arm(real)
        q, seed = random_pose(chain, real), random_pose(chain, real)
        assume(not singular(chain, q))
        assert_same_pose(chain, q, solved(chain, q, seed))

    @settings(max_examples=100, deadline=None)
    @given(st.data(), st.booleans())
    def test_a_seed_that_is_a_solution_is_the_answer(self, data, real_panda):
        real, _ = hypothesis_draws(data.draw)
        chain = panda() if real_panda else panda_like_arm(real)
        q = random_pose(chain, real)
        assume(not singular(chain, q))
        np.testing.assert_allclose(solved(chain, q, q), q, atol=1e-7)

    def test_of_the_solutions_the_one_nearest_the_seed(self):
        chain = panda()
        q = np.array([0.4, 0.6, -0.5, -1.9, 0.7, 1.8, 0.3])
        rng = np.random.default_rng(5)
        seeds = [pose_in_limits(chain, rng.uniform(size=7)) for _ in range(40)]
        answers = [np.array(solved(chain, q, seed)) for seed in seeds]
        solutions = []
        for answer in answers:
            assert_same_pose(chain, q, answer)
            if all(np.max(np.abs(answer - known)) > 1e-6 for known in solutions):
                solutions.append(answer)
        assert len(solutions) >= 2
        for seed, answer in zip(seeds, answers):
            nearest = min(solutions, key=lambda known: np.sum((known - seed) ** 2))
            np.testing.assert_allclose(answer, nearest, atol=1e-6)


class TestSweep:
    """The seventh angle swept from its seed: the first angle tried that fits gives the answer."""

    @settings(max_examples=150, deadline=None)
    @given(st.data(), st.booleans(), st.integers(-6, 6))
    def test_a_pose_whose_seventh_angle_the_sweep_tries_is_taken_exactly(
            self, data, real_panda, steps):
        real, _ = hypothesis_draws(data.draw)
        chain = panda() if real_panda else panda_like_arm(real)
        q, seed = random_pose(chain, real), random_pose(chain, real)
        q[6] = seed[6] + 0.5 * steps
        assume(chain.lower[6] <= q[6] <= chain.upper[6] and not singular(chain, q))
        pose = chain.tip_pose(q)
        angles = swept_angles(offset_elbow(chain, 1e-4), pose[:3, 3].tolist(),
                              pose[:3, :3].ravel().tolist(), seed.tolist(),
                              chain.lower.tolist(), chain.upper.tolist(), 0.5, 6)
        assert_same_pose(chain, q, angles)
        # No angle nearer the seed on the way fits: the answer's is at most as far.
        assert abs(angles[6] - seed[6]) <= abs(q[6] - seed[6]) + 1e-12

    def test_the_seventh_joint_keeps_its_seed_angle_where_a_solution_fits_there(self):
        chain = panda()
        arm = offset_elbow(chain, 1e-4)
        q = np.array([0.4, 0.6, -0.5, -1.9, 0.7, 1.8, 0.3])
        pose = chain.tip_pose(q)
        seed = chain.neutral()
        seed[6] = 0.5
        angles = swept_angles(arm, pose[:3, 3].tolist(), pose[:3, :3].ravel().tolist(),
                              seed.tolist(), chain.lower.tolist(), chain.upper.tolist(),
                              0.5, 6)
        assert_same_pose(chain, q, angles)
        assert angles[6] == 0.5


class TestDetection:
    """Which arms have this closed form: found from the chain's geometry, not its name."""

    def test_the_panda_and_arms_of_its_kind_have_it(self):
        assert offset_elbow(panda(), 1e-4) is not None
        rng = np.random.default_rng(3)
        for _ in range(20):
            chain = panda_like_arm(lambda low, high: float(rng.uniform(low, high)))
            assert offset_elbow(chain, 1e-4) is not None

    def test_six_joint_arms_do_not(self):
        assert offset_elbow(demo_arm(), 1e-4) is None
        assert offset_elbow(offset_arm(), 1e-4) is None

    @pytest.mark.parametrize('joint', [2, 5])
    def test_axes_missing_each_other_by_more_than_rounding_do_not(self, joint):
        # The third axis off the shoulder's point, or the sixth off the fifth axis.
        chain = panda()
        joints = list(chain.joints)
        moved = joints[joint]
        joints[joint] = Joint(moved.name, moved.parent, moved.origin_xyz + [1e-6, 1e-6, 0.0],
                              moved.origin_rotation, moved.axis, moved.lower, moved.upper)
        assert offset_elbow(Chain(chain.base_link, joints, chain.effectors), 1e-4) is None


class TestSolve:
    """Cold full poses of the Panda through IkSolver: closed form, else the whole arm."""

    def test_cold_poses_are_reached_exactly_within_the_limits(self):
        chain = panda()
        solver = IkSolver(chain)
        rng = np.random.default_rng(8)
        exact = sum(reached(chain, solver, pose_in_limits(chain, rng.uniform(size=7)))
                    .orientation_error < EXACT for _ in range(60))
        assert exact >= 57

    def test_limits_that_fit_no_solution_leave_the_pose_to_the_whole_arm(self):
        # The sixth joint held at 1.8 rad, the target's at 1.8002 rad: the closed form's
        # angles are exact, so none fits the limits, and the closing steps take the pose.
        chain = panda()
        lower, upper = chain.lower.copy(), chain.upper.copy()
        lower[5] = upper[5] = 1.8
        held = chain.with_limits(lower, upper)
        q = np.array([0.4, 0.6, -0.5, -1.9, 0.7, 1.8002, 0.3])
        result = reached(held, IkSolver(held), q)
        assert result.iterations + result.closing_steps > 0
