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
Specification of the tracking path: a seed already close is answered by a few closing steps.

A single-effector solve whose seed is within the closing radius of a reachable target takes
a lean path (no FABRIK, no passes, no restarts: what the full solve would do from there, at
most TRACK_STEPS closing steps) and falls back to the full solve from the same seed whenever
those steps are not enough.
Either way the answer is the full solve's, to the bit. A traced solve always runs the full
solve, which these tests use as the reference.
"""

import math
from pathlib import Path

from fabrik_ros.chain import Chain, quaternion_from_rotation
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.ik import limits as limits_module, model as model_module, \
    solver as solver_module, tracking as tracking_module
from fabrik_ros.ik.tuning import MOMENTUM, REDUNDANT_MOMENTUM, TRACK_STEPS
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from test_descriptions import _airo, _example_robot_data
from test_ik import (assert_within_limits, demo_arm, hypothesis_draws, plain_draws,
                     pose_in_limits, random_pose, random_serial_chain)

RESULT_FIELDS = ('error', 'iterations', 'reached', 'fabrik_iterations', 'closing_steps',
                 'restarts', 'initial_error', 'fabrik_error', 'history', 'timed_out')


def assert_same_answer(lean: IkResult, full: IkResult) -> None:
    """Assert two results are equal in every field but the trace (bit for bit)."""
    for name in RESULT_FIELDS:     # NaN equals NaN: a closed form's fabrik_error is NaN
        np.testing.assert_equal(getattr(lean, name), getattr(full, name), err_msg=name)
    for name in ('q', 'errors', 'base_position', 'effector_positions', 'orientation_errors'):
        np.testing.assert_array_equal(getattr(lean, name), getattr(full, name), err_msg=name)
    assert lean.orientation_error == full.orientation_error or (
        math.isnan(lean.orientation_error) and math.isnan(full.orientation_error))


@st.composite
def tracking_problems(draw, min_joints: int = 6):
    """Draw a chain (min_joints to 7 joints), a seed, and a target pose a small move away."""
    real, integer = hypothesis_draws(draw)
    chain = random_serial_chain(real, integer, min_joints=min_joints)
    seed = random_pose(chain, real)
    move = np.array([real(-1.0, 1.0) for _ in range(chain.dof)]) * draw(
        st.sampled_from([1e-3, 1e-2, 5e-2]))
    goal = np.clip(seed + move, chain.lower, chain.upper)
    return chain, seed, goal


class FullSolves:
    """Counts the full solves (their passes) a test's solves start."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = solver_module._Solve

        def counted(*args, **kwargs):
            self.count += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(solver_module, '_Solve', counted)


class TestAgreesWithTheFullSolve:
    """The tracking path answers exactly what the full solve answers."""

    @settings(max_examples=150, deadline=None)
    @given(tracking_problems(), st.sampled_from([None, 'full', 'axis', 'position']))
    def test_tracking_a_small_move_answers_as_the_full_solve(self, problem, mode):
        chain, seed, goal = problem
        pose = chain.tip_pose(goal)
        options = {} if mode is None else {
            'orientation': quaternion_from_rotation(pose[:3, :3])}
        solver = IkSolver(chain, orientation_mode=mode or 'full')
        lean = solver.solve(pose[:3, 3], seed, **options)
        full = solver.solve(pose[:3, 3], seed, trace=True, **options)
        assert_same_answer(lean, full)
        assert_within_limits(chain, lean.q)
        np.testing.assert_allclose(lean.effector_positions[0], chain.tip_position(lean.q),
                                   atol=1e-12)

    @pytest.mark.parametrize('seed, scale', [(174, 1e-3), (5071, 1e-2)])
    def test_a_full_pose_small_move_answers_as_the_full_solve_to_the_last_bit(
            self, seed, scale):
        # Found by hypothesis: the full solve squared the orientation error with ** 2, the
        # lean path with x * x, and their histories differed in the last bit.
        real, integer = plain_draws(seed)
        chain = random_serial_chain(real, integer, min_joints=6)
        start = random_pose(chain, real)
        move = np.array([real(-1.0, 1.0) for _ in range(chain.dof)]) * scale
        pose = chain.tip_pose(np.clip(start + move, chain.lower, chain.upper))
        solver = IkSolver(chain)
        orientation = quaternion_from_rotation(pose[:3, :3])
        assert_same_answer(solver.solve(pose[:3, 3], start, orientation=orientation),
                           solver.solve(pose[:3, 3], start, trace=True, orientation=orientation))

    def test_a_tracked_path_is_the_full_solves_path(self):
        arm = demo_arm()
        solver, reference = IkSolver(arm), IkSolver(arm)
        q = ref_q = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        for t in np.linspace(0.0, 2.0 * math.pi, 60):
            target = arm.tip_position(q) + 0.003 * np.array([math.cos(t), math.sin(t), 0.0])
            lean, full = solver.solve(target, q), reference.solve(target, ref_q, trace=True)
            assert_same_answer(lean, full)
            q, ref_q = lean.q, full.q

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def test_the_compiled_position_move_is_the_joints_plus_the_compiled_step(self, data):
        # The lean path's move: the forward kinematics of the seed plus the step the full
        # solve takes, to the bit; None where the full solve would steer the step (a joint
        # in a limit's margin) or clamp it (a joint carried past its limit).
        real, integer = hypothesis_draws(data.draw)
        chain = random_serial_chain(real, integer)
        solver = IkSolver(chain)
        tree, limits = solver._tree, solver.limits
        q = random_pose(chain, real).tolist()
        state = tree.sweep(q, (0.0, 0.0, 0.0))
        x, y, z = state.points[tree.effectors[0].point]
        residual = [real(-0.5, 0.5) for _ in range(3)]
        damping = real(1e-6, 1.0)
        step = tree.position_steps[0][0](state.frames, x, y, z, 0.0, residual, damping)
        moved, held = limits_module._clamped(q, step, limits.lower, limits.upper)
        clear = all(low <= value <= high for low, value, high in zip(
            limits.inner_lower, q, limits.inner_upper))
        base = (real(-1.0, 1.0), real(-1.0, 1.0), real(-1.0, 1.0))
        answer = tree.position_moves[0](state.frames, q, x, y, z, residual, damping, base)
        if clear and not held:
            swept = tree.sweep(moved, base)
            assert answer == (swept.q, swept.frames, swept.points)
        else:
            assert answer is None


class TestTakesTheLeanPath:
    """A close seed is answered without the full solve; otherwise the full solve runs."""

    def test_a_close_seed_is_answered_by_one_step_without_the_full_solve(self, monkeypatch):
        arm = demo_arm()
        seed = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        target = arm.tip_position(seed + 0.003)    # 4 mm away
        solver = IkSolver(arm)
        full = FullSolves(monkeypatch)
        result = solver.solve(target, seed)
        assert full.count == 0
        assert result.reached and result.closing_steps == 1 and result.fabrik_iterations == 0

    def test_a_full_pose_close_to_the_seed_is_answered_without_the_full_solve(
            self, monkeypatch):
        arm = demo_arm()
        seed = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        pose = arm.tip_pose(seed + 0.002)
        full = FullSolves(monkeypatch)
        result = IkSolver(arm).solve(pose[:3, 3], seed,
                                     orientation=quaternion_from_rotation(pose[:3, :3]))
        assert full.count == 0 and result.reached and result.closing_steps == 1

    def test_a_seed_a_few_steps_away_is_answered_without_the_full_solve(self, monkeypatch):
        arm = demo_arm()
        seed = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        target = arm.tip_position(seed + 0.05)     # 65 mm away: two steps
        reference = IkSolver(arm).solve(target, seed, trace=True)
        full = FullSolves(monkeypatch)
        result = IkSolver(arm).solve(target, seed)
        assert full.count == 0
        assert 2 <= result.closing_steps <= TRACK_STEPS and result.fabrik_iterations == 0
        assert_same_answer(result, reference)

    @pytest.mark.parametrize('case', ['two steps', 'far seed', 'out of reach', 'traced'])
    def test_the_full_solve_runs_from_the_same_seed_when_the_lean_steps_are_not_enough(
            self, monkeypatch, case):
        arm = demo_arm()
        seed = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        if case == 'two steps':     # more steps than the lean path takes
            monkeypatch.setattr(tracking_module, 'TRACK_STEPS', 1)
        target = {'two steps': arm.tip_position(seed + 0.05),
                  'far seed': arm.tip_position(pose_in_limits(arm, [0.1, 0.9, 0.2] * 2)),
                  'out of reach': arm.tip_position(seed) * 3.0,
                  'traced': arm.tip_position(seed + 0.003)}[case]
        reference = IkSolver(arm).solve(target, seed, trace=True)
        full = FullSolves(monkeypatch)
        result = IkSolver(arm).solve(target, seed, trace=case == 'traced')
        assert full.count >= 1
        if case == 'two steps':
            assert result.closing_steps >= 2 and result.fabrik_iterations == 0
        assert_same_answer(result, reference)

    def test_a_spent_time_budget_times_out_as_the_full_solve_does(self):
        arm = demo_arm()
        seed = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
        ticks = iter(range(0, 1000, 10))   # each reading 10 s later: the budget is spent
        result = IkSolver(arm, timeout=1.0, clock=lambda: next(ticks)).solve(
            arm.tip_position(seed + 0.003), seed)
        assert result.timed_out and result.iterations == 0
        np.testing.assert_array_equal(result.q, seed)


def fast_path(arm, steps: int = 40) -> list[np.ndarray]:
    """Return joint vectors of a fast swing: every joint 0.25 rad about mid-range."""
    middle = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
    return [middle + 0.25 * np.sin(2.0 * math.pi * k / 100.0 * np.arange(1, arm.dof + 1))
            for k in range(steps)]


def orientation_of(arm, q: np.ndarray) -> dict:
    """Return the solve options asking for the tool's full pose at q."""
    return {'orientation': quaternion_from_rotation(arm.tip_pose(q)[:3, :3])}


def assert_tracks_from_its_seeds(chain, seed: np.ndarray, goal: np.ndarray,
                                 oriented: bool) -> None:
    """Assert that tracking seed + k (goal - seed) answers as a fresh solve from each seed."""
    solver, reference = IkSolver(chain), IkSolver(chain)
    q = seed
    for k in range(1, 5):
        pose = np.clip(seed + k * (goal - seed), chain.lower, chain.upper)
        target, options = chain.tip_position(pose), orientation_of(chain, pose) if oriented \
            else {}
        result = solver.solve(target, q, **options)
        assert_same_answer(result, reference.solve(target, q.copy(), trace=True, **options))
        q = result.q


def answers_from_ahead(chain, result: IkResult, target: np.ndarray, options: dict,
                       q: np.ndarray, before: np.ndarray, share: float) -> bool:
    """
    Assert a tracked result is a fresh solve's from q or from share of the move on from q.

    Return whether it is the answer from ahead (and not the one from q).
    """
    reference = IkSolver(chain)
    start = np.clip(q + share * (q - before), chain.lower, chain.upper)
    from_start = reference.solve(target, start, trace=True, **options)
    from_seed = reference.solve(target, q, trace=True, **options)
    if np.array_equal(result.q, from_start.q) and not np.array_equal(result.q, from_seed.q):
        assert_same_answer(result, from_start)
        return True
    assert_same_answer(result, from_seed)
    return False


def steady_path(arm, steps: int = 30) -> list[np.ndarray]:
    """Return joint vectors of a steady move: every joint on at its own constant rate."""
    middle = pose_in_limits(arm, [0.4, 0.6, 0.3, 0.5, 0.6, 0.5])
    rates = np.array([1.0, -0.6, 0.8, 0.5, -0.7, 0.9])[:arm.dof]
    return [middle + 0.02 * k * rates for k in range(steps)]


class TestStartsAheadOnAFastTrack:
    """A full pose seeded with the answer of a fast-tracked move carries that move on."""

    def test_a_steady_move_without_redundancy_closes_in_one_forward_kinematics(
            self, monkeypatch):
        # The carried first step's second-order error is much the same from move to move.
        sweeps = []
        sweep = model_module._Tree.sweep
        monkeypatch.setattr(model_module._Tree, 'sweep', lambda tree, *args: (
            sweeps.append(1), sweep(tree, *args))[1])
        arm = demo_arm()
        solver = IkSolver(arm)
        path = steady_path(arm)
        q, single = path[0], 0
        for goal in path[1:]:
            target, options = arm.tip_position(goal), orientation_of(arm, goal)
            sweeps.clear()
            result = solver.solve(target, q, **options)
            assert result.reached
            assert_within_limits(arm, result.q)
            assert np.abs(result.q - q).max() < 0.3     # the seed's branch: no flip
            single += len(sweeps) == 1 and result.closing_steps == 1
            q = result.q
        assert single >= len(path) - 4     # all but the first moves

    def test_where_carried_steps_miss_each_solve_starts_ahead_by_a_share_of_the_last_move(
            self):
        # Joints swinging at their own frequencies: a move's curvature does not carry.
        arm = demo_arm()
        solver = IkSolver(arm)
        path = fast_path(arm)
        q = before = path[0]
        ahead = 0
        for goal in path[1:]:
            target, options = arm.tip_position(goal), orientation_of(arm, goal)
            result = solver.solve(target, q, **options)
            assert result.reached
            assert np.abs(result.q - q).max() < 0.3     # the seed's branch: no flip
            start = np.clip(q + MOMENTUM * (q - before), arm.lower, arm.upper)
            from_start = IkSolver(arm).solve(target, start, trace=True, **options)
            if np.array_equal(result.q, from_start.q):
                assert_same_answer(result, from_start)
                ahead += 1
            before, q = q, result.q
        assert ahead >= len(path) - 8   # all but the first moves and a carried try or five

    @settings(max_examples=25, deadline=None)
    @given(tracking_problems())
    def test_a_position_starts_at_its_seed(self, problem):
        assert_tracks_from_its_seeds(*problem, oriented=False)

    @settings(max_examples=25, deadline=None)
    @given(tracking_problems(min_joints=7))
    def test_a_full_pose_with_redundancy_starts_ahead_by_a_smaller_share(self, problem):
        # A move's share along the self-motion carries on from move to move: a smaller one.
        chain, seed, goal = problem
        solver = IkSolver(chain)
        q = before = seed
        for k in range(1, 5):
            pose = np.clip(seed + k * (goal - seed), chain.lower, chain.upper)
            target, options = chain.tip_position(pose), orientation_of(chain, pose)
            result = solver.solve(target, q, **options)
            assert_within_limits(chain, result.q)
            answers_from_ahead(chain, result, target, options, q, before, REDUNDANT_MOMENTUM)
            before, q = q, result.q

    def test_after_a_move_larger_than_the_most_a_solve_starts_at_its_seed(self, monkeypatch):
        # (Every move of the swing is larger than a bound of 1 mrad.)
        monkeypatch.setattr(tracking_module, 'MOMENTUM_MOST', 1e-3)
        arm = demo_arm()
        solver, reference = IkSolver(arm), IkSolver(arm)
        q = fast_path(arm)[0]
        for goal in fast_path(arm)[1:8]:
            target, options = arm.tip_position(goal), orientation_of(arm, goal)
            result = solver.solve(target, q, **options)
            assert_same_answer(result, reference.solve(target, q.copy(), trace=True, **options))
            q = result.q

    def test_with_redundancy_after_a_move_deeper_into_a_limits_margin_it_starts_at_its_seed(
            self):
        # Carried on, the move would go on against the limit steering: the arm would drift
        # along its self-motion into the limit, where its branch ends (a flip).
        chain = iiwa14()
        limits = IkSolver(chain).limits
        solver, reference = IkSolver(chain), IkSolver(chain)
        middle = pose_in_limits(chain, [0.92, 0.6, 0.4, 0.3, 0.6, 0.6, 0.5])
        path = [middle + np.array([0.04 * k] + [0.03 * math.sin(0.3 * k)] * 6)
                for k in range(12)]     # A1 on into its upper margin, the others swinging
        q = before = path[0]
        deeper = 0
        for goal in path[1:]:
            target, options = chain.tip_position(goal), orientation_of(chain, goal)
            result = solver.solve(target, q, **options)
            if any((a < low and a < b) or (a > high and a > b) for a, b, low, high in zip(
                    q, before, limits.inner_lower, limits.inner_upper)):
                deeper += 1
                assert_same_answer(result, reference.solve(target, q.copy(), trace=True,
                                                           **options))
            before, q = q, result.q
        assert deeper >= 3

    def test_a_seed_other_than_the_last_answer_starts_at_the_seed(self):
        arm = demo_arm()
        solver = IkSolver(arm)
        path = fast_path(arm)
        q = path[0]
        for goal in path[1:6]:
            q = solver.solve(arm.tip_position(goal), q, **orientation_of(arm, goal)).q
        other, goal = path[4], path[7]
        options = orientation_of(arm, goal)
        assert_same_answer(solver.solve(arm.tip_position(goal), other, **options),
                           IkSolver(arm).solve(arm.tip_position(goal), other, **options))


# The KUKA LBR iiwa 14 (bench/arm_references.py's published 7-DOF arm), and two paths of
# bench/solve_timing.py's kinds on it: joint paths in the limits, so every pose is reachable
# on some branch. The smooth one (smooth_poses, as the bench's full-pose tracking stage draws
# it) passes a double singularity near its step 908: A2 ~ 0.01 lines A1 up with A3 and A6 ~ 0
# lines A5 up with A7. The fast one (fast_poses, eight periods) passes the wrist's singularity
# again and again.
IIWA_URDF = Path(__file__).resolve().parent / 'data' / 'kuka_iiwa14.urdf'
SMOOTH_MIDDLE = [0.007196041493305216, 0.46665364400920106, -0.8213183871928846,
                 -0.35003380424844943, -0.9576591060881188, -0.3147045836751221,
                 0.31811872203529434]
SMOOTH_FREQUENCY = [1, 1, 2, 1, 2, 2, 1]
SMOOTH_PHASE = [3.8332494858300294, 4.747195906125594, 4.597317463117581, 4.47518614522032,
                0.39428651061703285, 1.7608565053233125, 2.9025826486107484]
# The answer at the smooth path's step 894 of a tracking run from its start.
SMOOTH_ANSWER_894 = [-1.8441538811556075, 0.06123141178970316, -1.975929730592539,
                     0.6742017225157967, 0.5308501170904204, -0.013173283992859596,
                     1.7281354037765329]
FAST_MIDDLE = [0.006589713836294031, 0.4109509683921835, -0.752115332453694,
               -0.30825159660183443, -0.8769681869835204, -0.2771394910958853,
               0.29208035038283997]
FAST_PHASE = [3.056905439298629, 1.0902015571721235, 3.171948386491237, 2.1414931018317485,
              3.8332494858300294, 4.747195906125594, 4.597317463117581]
FLIP_RAD = 1.0  # a joint turning this far between consecutive answers: another branch


def iiwa14():
    """Return the iiwa 14's chain from its base to its flange link."""
    return Chain.from_urdf(IIWA_URDF.read_text(), 'lbr_iiwa_link_0', 'lbr_iiwa_link_7')


def smooth_iiwa_path(chain, steps: range) -> np.ndarray:
    """Return the smooth path's joint poses at the steps (of 1001 over one period)."""
    lower, upper = np.maximum(chain.lower, -math.pi), np.minimum(chain.upper, math.pi)
    angle = np.linspace(0.0, 2.0 * math.pi, 1001)[list(steps)][:, None]
    return np.array(SMOOTH_MIDDLE) + (upper - lower) / 8.0 * np.sin(
        np.array(SMOOTH_FREQUENCY) * angle + np.array(SMOOTH_PHASE))


def fast_iiwa_path(steps: int) -> np.ndarray:
    """Return the fast path's first joint poses: joint j swings 0.25 rad, j + 1 cycles in 200."""
    angle = 2.0 * math.pi * np.arange(steps)[:, None] / 200.0
    return np.array(FAST_MIDDLE) + 0.25 * np.sin(np.arange(1, 8) * angle + np.array(FAST_PHASE))


def tracked(chain, poses: np.ndarray, seed: np.ndarray) -> tuple[list[IkResult], np.ndarray]:
    """Track the full poses of FK(poses) from the seed; return the answers and joint steps."""
    solver = IkSolver(chain)
    answers, steps = [], []
    for pose in poses:
        frame = chain.tip_pose(pose)
        answer = solver.solve(frame[:3, 3].copy(), seed,
                              orientation=quaternion_from_rotation(frame[:3, :3]))
        answers.append(answer)
        steps.append(np.max(np.abs(answer.q - seed)))
        seed = answer.q
    return answers, np.array(steps)


class TestKeepsTheBranchOfARedundantArm:
    """The published iiwa 14 tracked through its singularities: every pose, no flip."""

    def test_through_the_double_singularity_every_answer_is_reached_and_none_flips(self):
        chain = iiwa14()
        answers, steps = tracked(chain, smooth_iiwa_path(chain, range(895, 916)),
                                 np.array(SMOOTH_ANSWER_894))
        assert all(answer.reached for answer in answers)
        assert steps.max() < FLIP_RAD
        for answer in answers:
            assert_within_limits(chain, answer.q)

    def test_a_fast_stream_past_the_wrist_singularity_is_reached_without_flips(self):
        chain = iiwa14()
        poses = fast_iiwa_path(1601)
        answers, steps = tracked(chain, poses[1:], poses[0])
        assert all(answer.reached for answer in answers)
        assert steps.max() < FLIP_RAD


PUBLISHED_ARMS = {
    'ur5e': (lambda: _airo('arms/ur5e/ur5e.urdf'), 'base_link', 'tool0'),
    'panda': (lambda: _example_robot_data('panda_description/urdf/panda.urdf'),
              'panda_link0', 'panda_link8'),
    'iiwa14': (lambda: IIWA_URDF.read_text(), 'lbr_iiwa_link_0', 'lbr_iiwa_link_7'),
}


def outward_path(chain, rng: np.random.Generator, steps: int = 61, step: float = 0.01
                 ) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Return a reachable pose's joints, its tool moved radially outward step metres a step."""
    q = rng.uniform(chain.lower * 0.7, chain.upper * 0.7)
    frame = chain.tip_pose(q)
    start = frame[:3, 3]
    outward = start / np.linalg.norm(start)
    return q, start + step * np.arange(steps)[:, None] * outward, \
        quaternion_from_rotation(frame[:3, :3])


class TestTrackingOutOfReach:
    """A full pose dragged out of reach: the arm stretches on its branch, flips only to reach."""

    @pytest.mark.parametrize('arm', sorted(PUBLISHED_ARMS))
    def test_moving_out_of_reach_never_flips_to_a_pose_that_misses(self, arm):
        read, base, tip = PUBLISHED_ARMS[arm]
        chain = Chain.from_urdf(read(), base, tip)
        solver = IkSolver(chain)
        rng = np.random.default_rng(3)
        missed = 0
        for _ in range(3):
            seed, positions, orientation = outward_path(chain, rng)
            for position in positions:
                answer = solver.solve(position, seed, orientation=orientation)
                reached = answer.error <= solver.tolerance \
                    and answer.orientation_error <= solver.orientation_tolerance
                assert answer.reached == reached    # never an unreached pose reported reached
                if not reached:
                    missed += 1
                    # Out of reach the compromise goes on from the last answer.
                    assert np.max(np.abs(answer.q - seed)) < FLIP_RAD
                assert_within_limits(chain, answer.q)
                seed = answer.q
        assert missed > 60  # the paths do leave the workspace
