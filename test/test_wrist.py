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
Specification of spherical wrists: a full pose splits into the wrist centre and the wrist.

Rotations are checked with numpy (chain.rotation_about_axis, Chain.tip_pose), independently
of the closed form under test.
"""

import math

from fabrik_ros.chain import (Chain, Effector, Joint, rotation_about_axis, rotation_from_rpy)
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.ik.branches import offset_wrist_solutions
from fabrik_ros.ik.offset_wrist import offset_wrist, offset_wrist_angles
from fabrik_ros.ik.wrist import (nearest_wrist_angles, shoulder_angles, spherical_shoulder,
                                 spherical_wrist, split_at_wrist, wrist_angles, wrist_pointing)
from hypothesis import assume, given, settings, strategies as st
import numpy as np
import pytest
from test_ik import (assert_within_limits, demo_arm, hypothesis_draws, plain_draws,
                     pose_in_limits, random_pose, random_serial_chain, Real)
from test_ik_orientation import (assert_errors_measured_by_forward_kinematics, offset_arm,
                                 pose_target)

EXACT = 1e-7    # radians: a closed-form orientation error is rounding (about the root of
#                 the float epsilon where the wrist is straight: a singularity)


def unit_vector(real: Real) -> np.ndarray:
    """Return a random unit 3-vector."""
    v = np.array([real(-1.0, 1.0) for _ in range(3)])
    return v / np.linalg.norm(v) if np.linalg.norm(v) > 0.1 else np.array([0.0, 0.0, 1.0])


def wrist_axes(real: Real) -> list[np.ndarray]:
    """Return three random unit axes, no two in a row closer than 10 degrees to parallel."""
    axes = [unit_vector(real)]
    while len(axes) < 3:
        axis = unit_vector(real)
        if abs(axis @ axes[-1]) > math.cos(math.radians(10.0)):
            axis = np.cross(axes[-1], [1.0, 0.0, 0.0] if abs(axes[-1][0]) < 0.9 else
                            [0.0, 1.0, 0.0])
            axis /= np.linalg.norm(axis)
        axes.append(axis)
    return axes


def turn_of(axes: list[np.ndarray], angles) -> np.ndarray:
    """Return exp(a1 t1) exp(a2 t2) exp(a3 t3)."""
    turn = np.eye(3)
    for axis, angle in zip(axes, angles):
        turn = turn @ rotation_about_axis(axis, angle)
    return turn


def with_spherical_wrist(arm: Chain, real: Real, continuous: bool = True) -> Chain:
    """
    Return the arm with a random spherical wrist in place of its tool, and a random tool.

    The second wrist joint sits on the first one's axis and the third has its axis through
    the second's origin: all three axes meet there. Each wrist joint turns freely
    (continuous) or over a random range of at least 2 rad.
    """
    joints = list(arm.joints)
    k = len(joints)
    axes = wrist_axes(real)
    rotations = [rotation_from_rpy([real(-math.pi, math.pi) for _ in range(3)])
                 for _ in range(3)]
    offsets = [arm.effectors[0].offset, real(0.0, 0.2) * axes[0],
               real(0.0, 0.2) * (rotations[2] @ axes[2])]
    for index, (offset, rotation, axis) in enumerate(zip(offsets, rotations, axes)):
        lower = -math.inf if continuous else real(-math.pi, -1.0)
        upper = math.inf if continuous else real(1.0, math.pi)
        joints.append(Joint(f'wrist_{index}', k + index - 1, offset, rotation, axis, lower,
                            upper))
    tool = Effector('tool', k + 2, np.array([real(-0.1, 0.1) for _ in range(3)]),
                    rotation_from_rpy([real(-math.pi, math.pi) for _ in range(3)]))
    return Chain(arm.base_link, joints, [tool])


def ur_like_arm(real: Real) -> Chain:
    """
    Return a random arm of the UR family: lengths, offsets, tilts and limits drawn.

    A first joint about z; three about their frames' y, each frame turned only about y from
    the one before (parallel axes), the elbow and the first wrist joint 0.2-0.5 m on; a
    fifth about z with its origin on the fourth axis; a sixth about y with its origin on the
    fifth axis; a tool anywhere. Every ranges covers at least 2 rad.
    """
    def limits():
        return real(-2 * math.pi, -1.0), real(1.0, 2 * math.pi)

    def y_turn():
        return rotation_from_rpy([0.0, real(-math.pi, math.pi), 0.0])

    z, y = [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]
    joints = [Joint('pan', -1, [0.0, 0.0, real(0.05, 0.2)], np.eye(3), z, *limits()),
              Joint('lift', 0, [real(-0.1, 0.1), real(0.05, 0.2), 0.0],
                    rotation_from_rpy([real(-0.3, 0.3), 0.0, 0.0]), y, *limits())]
    for index, name in enumerate(('elbow', 'wrist_1'), 1):
        joints.append(Joint(name, index, [real(-0.1, 0.1), real(-0.2, 0.2), real(0.2, 0.5)],
                            y_turn(), y, *limits()))
    joints.append(Joint('wrist_2', 3, [0.0, real(0.05, 0.2), 0.0], y_turn(), z, *limits()))
    joints.append(Joint('wrist_3', 4, [0.0, 0.0, real(0.05, 0.2)],
                        rotation_from_rpy([0.0, 0.0, real(-math.pi, math.pi)]), y, *limits()))
    tool = Effector('tool', 5, np.array([real(-0.1, 0.1) for _ in range(3)]),
                    rotation_from_rpy([real(-math.pi, math.pi) for _ in range(3)]))
    return Chain('base', joints, [tool])


def shoulder_arm(real: Real, redundant: bool) -> Chain:
    """
    Return a random arm with a spherical shoulder, an elbow and a spherical wrist.

    Two shoulder joints (three where redundant, like the KUKA iiwa's) about random axes,
    no two in a row near parallel, all through the first joint's origin (the second there,
    the third on its own axis 0-0.3 m on); an elbow 0.2-0.4 m on, its axis across that
    link; the wrist centre 0.2-0.4 m beyond, across the elbow's axis; then a random
    spherical wrist and tool (with_spherical_wrist). Limits of at least 1 rad either way.
    """
    def limits():
        return real(-math.pi, -1.0), real(1.0, math.pi)

    def across(v: np.ndarray) -> np.ndarray:
        w = np.cross(v, unit_vector(real))
        if np.linalg.norm(w) < 0.1:
            w = np.cross(v, [1.0, 0.0, 0.0] if abs(v[0]) < 0.9 else [0.0, 1.0, 0.0])
        return w / np.linalg.norm(w)

    axes = wrist_axes(real)[:3 if redundant else 2]
    offsets = [[0.0, 0.0, real(0.1, 0.3)], [0.0, 0.0, 0.0], real(0.0, 0.3) * axes[-1]]
    joints = [Joint(f'shoulder_{index}', index - 1, offset, np.eye(3), axis, *limits())
              for index, (offset, axis) in enumerate(zip(offsets, axes))]
    link = unit_vector(real)
    elbow = across(link)
    joints.append(Joint('elbow', len(joints) - 1, link * real(0.2, 0.4), np.eye(3), elbow,
                        *limits()))
    centre = Effector('centre', len(joints) - 1, across(elbow) * real(0.2, 0.4))
    return with_spherical_wrist(Chain('base', joints, [centre]), real, continuous=False)


class TestShoulder:
    """A spherical shoulder and an elbow above a spherical wrist: the arm in closed form."""

    @settings(max_examples=150, deadline=None)
    @given(st.data(), st.booleans())
    def test_the_shoulder_puts_the_centre_anywhere_it_reaches(self, data, redundant):
        real, _ = hypothesis_draws(data.draw)
        arm = split_at_wrist(shoulder_arm(real, redundant), 1e-4).arm
        shoulder = spherical_shoulder(arm, 1e-4)
        assert shoulder is not None
        q, seed = random_pose(arm, real), random_pose(arm, real)
        centre = arm.tip_position(q)
        # (An elbow folded back onto equal links puts the centre on the shoulder's own: every
        # shoulder angle holds it there, none is returned and the general solve takes it.)
        assume(math.dist(centre, shoulder.point) > 1e-9)
        found = shoulder_angles(shoulder, centre.tolist(), q[2] if redundant else None,
                                seed.tolist(), arm.lower.tolist(), arm.upper.tolist())
        # The pose drawn is one of the (up to four) solutions, each angle within a turn.
        assert any(np.allclose(np.remainder(np.array(angles) - q + math.pi, 2 * math.pi),
                               math.pi, atol=1e-6) for _, angles in found)
        for moved, angles in found:
            assert moved == pytest.approx(float(np.sum((np.array(angles) - seed) ** 2)))
            assert_within_limits(arm, np.array(angles))
            np.testing.assert_allclose(arm.tip_position(np.array(angles)), centre, atol=1e-9)

    def test_a_centre_on_the_first_axis_keeps_the_seeds_first_angle(self):
        """Every first angle puts such a centre there: the seed's is kept, not snapped to 0."""
        arm = Chain('base', [
            Joint('shoulder_0', -1, np.array([0.0, 0.0, 0.25]), np.eye(3),
                  np.array([0.0, 0.0, 1.0]), -2.0, 2.0),
            Joint('shoulder_1', 0, np.zeros(3), np.eye(3), np.array([0.0, 1.0, 0.0]), -2.0, 2.0),
            Joint('elbow', 1, np.array([0.0, 0.0, 0.3]), np.eye(3), np.array([0.0, 1.0, 0.0]),
                  -2.5, 2.5)], [Effector('centre', 2, np.array([0.0, 0.0, 0.3]))])
        shoulder = spherical_shoulder(arm, 1e-4)
        centre = arm.tip_position(np.array([0.0, 0.4, -0.8]))    # straight above the base
        for seed_first in (-1.2, 0.7):
            found = shoulder_angles(shoulder, centre.tolist(), None, [seed_first, 0.3, -0.6],
                                    arm.lower.tolist(), arm.upper.tolist())
            assert found and all(angles[0] == seed_first for _, angles in found)
            for _, angles in found:
                np.testing.assert_allclose(arm.tip_position(np.array(angles)), centre,
                                           atol=1e-12)

    def test_arms_whose_shoulder_axes_miss_each_other_have_none(self):
        arm = split_at_wrist(demo_arm(), 1e-4).arm
        assert spherical_shoulder(arm, 1e-4) is not None
        joints = list(arm.joints)
        shifted = joints[1]
        joints[1] = Joint(shifted.name, shifted.parent, shifted.origin_xyz + [1e-6, 0.0, 0.0],
                          shifted.origin_rotation, shifted.axis, shifted.lower, shifted.upper)
        assert spherical_shoulder(Chain(arm.base_link, joints, arm.effectors), 1e-4) is None

    def test_an_iiwa_like_arm_reaches_cold_poses_exactly_its_redundant_joint_kept(self):
        real, _ = plain_draws(29)
        arm = shoulder_arm(real, redundant=True)
        solver = IkSolver(arm)
        for _ in range(40):
            # The seed's redundant angle is the drawn pose's: a solution keeps it.
            q, seed = random_pose(arm, real), random_pose(arm, real)
            seed[2] = q[2]
            result = reached(arm, solver, q, seed)
            assert result.orientation_error < EXACT and result.error < 1e-9
            assert result.q[2] == seed[2]

    @settings(max_examples=100, deadline=None)
    @given(st.data())
    def test_an_iiwa_like_arm_reaches_cold_positions_in_closed_form_past_the_elbow_kept(
            self, data):
        # A position that the shoulder and elbow reach with the other joints at the seed's
        # angles: the answer keeps them, exact, nearest the seed, without FABRIK.
        real, _ = hypothesis_draws(data.draw)
        arm = shoulder_arm(real, redundant=True)
        solver = IkSolver(arm)
        q = random_pose(arm, real)
        seed = np.clip(random_pose(arm, real), arm.lower, arm.upper)  # as the solver clips it
        q[2], q[4:] = seed[2], seed[4:]
        target = arm.tip_position(q)
        assume(np.linalg.norm(arm.tip_position(seed) - target) > solver.closing_radius)
        result = solver.solve(target, seed)
        assert result.reached and result.error < 1e-9
        assert result.fabrik_iterations == result.closing_steps == result.restarts == 0
        assert result.q[2] == seed[2] and result.q[4:].tolist() == seed[4:].tolist()
        assert np.sum((result.q - seed) ** 2) <= np.sum((q - seed) ** 2) + 1e-9
        assert_within_limits(arm, result.q)
        assert result.history == [pytest.approx(result.initial_error), result.error]

    def test_an_iiwa_like_arm_stays_where_its_seed_is_within_the_tolerance(self):
        real, _ = plain_draws(31)
        arm = shoulder_arm(real, redundant=True)
        solver = IkSolver(arm, tolerance=0.2, closing_radius=0.0)
        for _ in range(10):
            seed = np.clip(random_pose(arm, real), arm.lower, arm.upper)
            result = solver.solve(arm.tip_position(seed) + [0.0, 0.0, 0.1], seed)
            assert result.reached and result.q.tolist() == seed.tolist()


class TestWristAngles:
    """The closed form turns the wrist onto any rotation it can make, within its limits."""

    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def test_the_angles_make_the_turn(self, data):
        real, _ = hypothesis_draws(data.draw)
        axes = wrist_axes(real)
        turn = turn_of(axes, [real(-math.pi, math.pi) for _ in range(3)])
        seed = [real(-3.0, 3.0) for _ in range(3)]
        lower, upper = [-math.inf] * 3, [math.inf] * 3
        angles = wrist_angles(spherical_wrist(axes), turn.ravel().tolist(), seed, lower, upper)
        np.testing.assert_allclose(turn_of(axes, angles), turn, atol=EXACT)

    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def test_pointing_carries_the_direction_and_keeps_the_last_angle(self, data):
        real, _ = hypothesis_draws(data.draw)
        axes = wrist_axes(real)
        along = unit_vector(real)
        angles = [real(-math.pi, math.pi) for _ in range(3)]
        toward = turn_of(axes, angles) @ along
        seed = [real(-3.0, 3.0), real(-3.0, 3.0), angles[2]]
        pointed = wrist_pointing(spherical_wrist(axes), tuple(along), tuple(toward), seed,
                                 [-math.inf] * 3, [math.inf] * 3)
        np.testing.assert_allclose(turn_of(axes, pointed) @ along, toward, atol=EXACT)
        assert pointed[2] == seed[2]

    def test_of_the_two_solutions_the_one_nearest_the_seed(self):
        # A z-y-z wrist makes every turn both ways: (a, b, c) and (a + pi, -b, c + pi).
        axes = [(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
        angles = [0.3, 0.8, -0.5]
        turn = turn_of([np.array(a) for a in axes], angles).ravel().tolist()
        wide = [-math.inf] * 3, [math.inf] * 3
        wrist = spherical_wrist(axes)
        assert wrist_angles(wrist, turn, angles, *wide) == pytest.approx(angles)
        flipped = [0.3 - math.pi, -0.8, -0.5 + math.pi]
        assert wrist_angles(wrist, turn, flipped, *wide) == pytest.approx(flipped)

    def test_limits_pick_the_solution_within_them_or_refuse(self):
        axes = [(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
        turn = turn_of([np.array(a) for a in axes], [0.3, 0.8, -0.5]).ravel().tolist()
        seed = [0.0, 0.0, 0.0]
        wrist = spherical_wrist(axes)
        bent_back = wrist_angles(wrist, turn, seed, [-4.0, -2.0, -4.0], [4.0, 0.0, 4.0])
        assert bent_back == pytest.approx([0.3 - math.pi, -0.8, -0.5 + math.pi])
        assert wrist_angles(wrist, turn, seed, [-4.0, -0.5, -4.0], [4.0, 0.5, 4.0]) is None

    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def test_a_bound_keeps_the_nearest_solution_below_it_and_refuses_the_rest(self, data):
        real, _ = hypothesis_draws(data.draw)
        axes = wrist_axes(real)
        turn = turn_of(axes, [real(-math.pi, math.pi) for _ in range(3)]).ravel().tolist()
        seed = [real(-3.0, 3.0) for _ in range(3)]
        lower, upper = [real(-4.0, 0.0) for _ in range(3)], [real(0.0, 4.0) for _ in range(3)]
        wrist = spherical_wrist(axes)
        nearest = wrist_angles(wrist, turn, seed, lower, upper)
        bound = real(0.0, 20.0)
        found = nearest_wrist_angles(wrist, turn, seed, lower, upper, bound)
        if nearest is None or sum((t - s) ** 2 for t, s in zip(nearest, seed)) >= bound:
            assert found is None
        else:
            assert found == (nearest, sum((t - s) ** 2 for t, s in zip(nearest, seed)))


class TestOffsetWrist:
    """Arms of the UR family: every pose they can take, in closed form."""

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_the_closed_form_reaches_every_pose_exactly_within_the_limits(self, data):
        real, _ = hypothesis_draws(data.draw)
        arm = ur_like_arm(real)
        constants = offset_wrist(arm, 1e-4)
        assert constants is not None
        q, seed = random_pose(arm, real), random_pose(arm, real)
        # Not at the wrist's singularity: the sixth axis along the parallel ones.
        kinematics = arm.forward(q)
        assume(abs(kinematics.axes[5] @ kinematics.axes[1]) < math.cos(math.radians(3.0)))
        pose = arm.tip_pose(q)
        angles = offset_wrist_angles(constants, pose[:3, 3].tolist(),
                                     pose[:3, :3].ravel().tolist(), seed.tolist(),
                                     arm.lower.tolist(), arm.upper.tolist())
        assert angles is not None
        assert_within_limits(arm, np.array(angles))
        np.testing.assert_allclose(arm.tip_pose(np.array(angles)), pose, atol=EXACT)

    def test_the_seed_picks_among_the_eight_solutions(self):
        arm = offset_arm()
        constants = offset_wrist(arm, 1e-4)
        q = np.array([0.3, -1.2, 1.4, -0.9, 1.1, 0.4])
        pose = arm.tip_pose(q)
        angles = offset_wrist_angles(constants, pose[:3, 3].tolist(),
                                     pose[:3, :3].ravel().tolist(), (q + 0.05).tolist(),
                                     arm.lower.tolist(), arm.upper.tolist())
        np.testing.assert_allclose(angles, q, atol=1e-9)

    def test_other_arms_have_no_such_closed_form(self):
        assert offset_wrist(demo_arm(), 1e-4) is None
        joints = list(offset_arm().joints)
        shifted = joints[4]
        joints[4] = Joint(shifted.name, shifted.parent, shifted.origin_xyz + [1e-6, 0.0, 0.0],
                          shifted.origin_rotation, shifted.axis, shifted.lower, shifted.upper)
        assert offset_wrist(Chain('base_link', joints, offset_arm().effectors), 1e-4) is None

    def test_the_ur5_like_arm_reaches_cold_poses_exactly(self):
        arm = offset_arm()
        solver = IkSolver(arm)
        rng = np.random.default_rng(8)
        for _ in range(60):
            result = reached(arm, solver, pose_in_limits(arm, rng.uniform(size=arm.dof)))
            assert result.orientation_error < EXACT and result.error < 1e-9


class TestOffsetReach:
    """
    A UR-family arm's cold position target: the exact solution of a pose, nearest the seed.

    The pose: the target position, and the seed's tool orientation turned about the first
    axis by the target's azimuth from the seed's tool (computed here with numpy).
    """

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_a_closed_form_answer_is_the_nearest_valid_solution_of_the_turned_pose(self, data):
        real, _ = hypothesis_draws(data.draw)
        arm = ur_like_arm(real)
        solver = IkSolver(arm)
        seed = random_pose(arm, real)
        target = arm.tip_position(random_pose(arm, real))
        assume(np.linalg.norm(target - arm.tip_position(seed)) > solver.closing_radius)
        result = solver.solve(target, seed)
        assert_within_limits(arm, result.q)
        if result.fabrik_iterations or result.closing_steps or result.restarts:
            return      # no solution of the pose fits: the iterative solve answered
        assert result.error <= solver.tolerance
        rotation = turned_seed_orientation(arm, seed, target)
        np.testing.assert_allclose(arm.tip_pose(result.q)[:3, :3], rotation, atol=EXACT)
        others = [q for q in offset_wrist_solutions(
            offset_wrist(arm, solver.tolerance), target.tolist(), rotation.ravel().tolist(),
            seed.tolist(), arm.lower.tolist(), arm.upper.tolist())
            if np.linalg.norm(arm.tip_position(np.array(q)) - target) <= solver.tolerance]
        moved = float(np.sum((result.q - seed) ** 2))
        assert all(moved <= float(np.sum((np.array(q) - seed) ** 2)) + 1e-9 for q in others)

    def test_the_ur5_like_arm_reaches_most_cold_positions_in_closed_form(self):
        arm = offset_arm()
        solver = IkSolver(arm)
        rng = np.random.default_rng(8)
        closed = 0
        for _ in range(60):
            target = arm.tip_position(pose_in_limits(arm, rng.uniform(size=arm.dof)))
            result = solver.solve(target)
            assert result.reached
            assert_within_limits(arm, result.q)
            closed += not (result.fabrik_iterations or result.closing_steps)
        assert closed >= 40


def turned_seed_orientation(arm: Chain, seed: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Return the seed's tool rotation turned about the first axis toward the target."""
    kinematics = arm.forward(np.zeros(arm.dof))
    axis, point = kinematics.axes[0], kinematics.positions[0]
    seed_pose = arm.tip_pose(seed)

    def across(v: np.ndarray) -> np.ndarray:
        return v - (v @ axis) * axis

    start, end = across(seed_pose[:3, 3] - point), across(target - point)
    azimuth = math.atan2(axis @ np.cross(start, end), start @ end)
    return rotation_about_axis(axis, azimuth) @ seed_pose[:3, :3]


class TestSplit:
    """Which arms split at a spherical wrist, and where its centre is."""

    def test_the_demo_arm_splits_at_its_wrist_centre(self):
        arm = demo_arm()
        split = split_at_wrist(arm, 1e-4)
        assert split is not None and split.arm.dof == 3
        rng = np.random.default_rng(1)
        for _ in range(20):
            q = arm.clip(rng.uniform(-3.0, 3.0, arm.dof))
            tool = arm.tip_pose(q)
            # The centre is where the arm above the wrist puts it, whatever the wrist does.
            np.testing.assert_allclose(tool[:3, :3] @ split.centre + tool[:3, 3],
                                       split.arm.tip_position(q[:3]), atol=1e-12)

    def test_a_pointed_tool_splits_where_the_centre_lies_on_its_axis(self):
        # The demo arm's tool sits on its roll axis, which passes through the centre.
        assert split_at_wrist(demo_arm(), 1e-4, (0.0, 0.0, 1.0)) is not None
        assert split_at_wrist(demo_arm(), 1e-4, (1.0, 0.0, 0.0)) is None

    def test_offset_wrists_do_not_split(self):
        assert split_at_wrist(offset_arm(), 1e-4) is None

    def test_axes_missing_each_other_by_more_than_rounding_do_not_split(self):
        real, integer = plain_draws(5)
        chain = with_spherical_wrist(random_serial_chain(real, integer, max_joints=3), real)
        joints = list(chain.joints)
        last = joints[-1]
        joints[-1] = Joint(last.name, last.parent, last.origin_xyz + [0.0, 1e-6, 1e-6],
                           last.origin_rotation, last.axis, last.lower, last.upper)
        assert split_at_wrist(chain, 1e-4) is not None
        assert split_at_wrist(Chain(chain.base_link, joints, chain.effectors), 1e-4) is None


def reached(chain: Chain, solver: IkSolver, q: np.ndarray, seed: np.ndarray | None = None,
            mode: str = 'full') -> IkResult:
    """Return the solve of FK(q)'s pose, checked reached, in limits and measured by FK."""
    position, xyzw, rotation = pose_target(chain, q)
    result = solver.solve(position, seed, orientation=xyzw)
    assert_within_limits(chain, result.q)
    assert_errors_measured_by_forward_kinematics(chain, result, position, rotation, mode)
    assert result.reached
    return result


class TestSplitSolve:
    """Full poses of spherical-wrist arms: the wrist sets the orientation exactly."""

    def test_random_spherical_wrist_arms_reach_poses_with_the_orientation_exact(self):
        # A rate on plain random samples: a centre the arm above the wrist misses within a
        # few restarts hands the pose to the whole arm's solve (within the tolerances, not
        # exact), which random arms of one to three joints need now and then.
        real, integer = plain_draws(2011)
        exact = 0
        for _ in range(100):
            chain = with_spherical_wrist(
                random_serial_chain(real, integer, max_joints=3, narrow=False), real)
            result = reached(chain, IkSolver(chain), random_pose(chain, real),
                             random_pose(chain, real))
            exact += result.orientation_error < EXACT
        assert exact >= 90

    def test_the_demo_arm_reaches_cold_poses_with_the_orientation_exact(self):
        # Where its wrist's limits allow neither solution on the arm's branches (pitch within
        # +-2.09 rad), the whole arm's solve takes the pose.
        arm = demo_arm()
        solver = IkSolver(arm)
        rng = np.random.default_rng(8)
        exact = sum(reached(arm, solver, pose_in_limits(arm, rng.uniform(size=arm.dof)))
                    .orientation_error < EXACT for _ in range(60))
        assert exact >= 55

    def test_the_demo_arm_points_its_tool_exactly_from_cold(self):
        arm = demo_arm()
        solver = IkSolver(arm, orientation_mode='axis')
        rng = np.random.default_rng(9)
        exact = sum(reached(arm, solver, pose_in_limits(arm, rng.uniform(size=arm.dof)),
                            mode='axis').orientation_error < EXACT for _ in range(60))
        assert exact >= 55

    def test_wrist_limits_that_fit_no_solution_leave_the_pose_to_the_whole_arm(self):
        # A wrist pitch held at 0.5 rad, the target's at 0.5002 rad: the closed form's
        # angles are exact, so none fits the limits.
        arm = demo_arm()
        lower, upper = arm.lower.copy(), arm.upper.copy()
        lower[4] = upper[4] = 0.5
        held = arm.with_limits(lower, upper)
        position, xyzw, rotation = pose_target(arm, np.array([0.4, 0.3, 1.0, 0.2, 0.5002, -0.7]))
        result = IkSolver(held).solve(position, orientation=xyzw)
        assert_within_limits(held, result.q)
        assert_errors_measured_by_forward_kinematics(held, result, position, rotation, 'full')
        assert result.reached
        assert result.orientation_error > EXACT     # within the tolerance, by closing steps

    def test_a_tight_iteration_cap_leaves_the_whole_arm_its_share(self):
        # A wrist pitch held at 0.5 rad sends every pose on to the whole arm's solve. Within
        # 20 iterations it reaches 10 of these 40 poses; were the split's attempts allowed
        # all 20, 3.
        arm = demo_arm()
        lower, upper = arm.lower.copy(), arm.upper.copy()
        lower[4] = upper[4] = 0.5
        held = arm.with_limits(lower, upper)
        solver = IkSolver(held, max_iterations=20)
        rng = np.random.default_rng(1)
        reached_poses = 0
        for _ in range(40):
            position, xyzw, _ = pose_target(held, pose_in_limits(held, rng.uniform(size=6)))
            result = solver.solve(position, orientation=xyzw)
            assert result.iterations <= 20
            reached_poses += result.reached
        assert reached_poses >= 8

    @pytest.mark.parametrize('seed, move', [
        ([-1.124, -0.849, -0.059, -1.816, -0.018, -1.602],
         [0.047, 0.002, 0.043, 0.04, 0.023, -0.047]),
        ([0.637, -0.82, -0.034, 0.963, 0.007, 0.893],
         [0.025, -0.035, 0.045, -0.011, 0.016, -0.026])])
    def test_a_pose_tracked_near_the_wrist_singularity_moves_the_joints_little(
            self, seed, move):
        # Wrist straight (pitch near 0), the closed form fixes little more than the sum of
        # the wrist roll and the tool roll, and swung them by up to 1.4 rad for these moves
        # of at most 0.05 rad a joint; the closing steps a tracking solve keeps to do not.
        arm = demo_arm()
        result = reached(arm, IkSolver(arm), np.add(seed, move), np.array(seed))
        assert np.max(np.abs(result.q - seed)) < 0.1
