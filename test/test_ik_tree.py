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
Specification of the FABRIK solver on trees: several effectors, each with its own target.

Checked against the model's own forward kinematics (Chain.forward), as for serial chains.
"""

import math

from fabrik_ros.chain import Chain, Effector, Joint, Mimic, rotation_from_rpy
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.ik import HELD_WEIGHT, IkSolver
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from test_ik import (assert_within_limits, hypothesis_draws, Integer, plain_draws,
                     pose_in_limits, random_pose, REACH_MISSES_ALLOWED, REACH_SAMPLES, Real,
                     REPO, TOLERANCE, unit)


def robot(name: str) -> Chain:
    """Return the chain of config/<name>.yaml."""
    return chain_from_parameters(load_config(REPO / 'config' / f'{name}.yaml'), REPO)


def random_tree(real: Real, integer: Integer, narrow: bool = True) -> Chain:
    """
    Return a random tree of joints with random offsets, tilts, axes and limits.

    Each joint hangs from a random earlier joint (or the base); every leaf joint carries an
    effector, and sometimes an inner joint too. Without `narrow`, every limited joint has a
    range >= 2 rad (see test_ik.TestReaching for why reaching is tested on those).
    """
    count = integer(2, 9)
    joints = []
    for index in range(count):
        parent = integer(-1, index - 1) if index else -1
        xyz = [real(-0.3, 0.3) for _ in range(3)]
        if np.linalg.norm(xyz) < 0.02 and not (parent >= 0 and integer(0, 1)):
            xyz[2] = 0.1
        axis = [real(-1.0, 1.0) for _ in range(3)]
        if np.linalg.norm(axis) < 0.1:
            axis = [0.0, 0.0, 1.0]
        continuous = integer(0, 3) == 0
        lower = -math.inf if continuous else real(-math.pi, 0.0)
        upper = math.inf if continuous else lower + real(0.0 if narrow else 2.0, 2.0 * math.pi)
        rpy = [real(-math.pi, math.pi) for _ in range(3)]
        joints.append(Joint(f'j{index}', parent, xyz, rotation_from_rpy(rpy), axis,
                            lower, upper))
    parents = {joint.parent for joint in joints}
    holders = [index for index in range(count) if index not in parents]
    if integer(0, 1):
        holders.append(integer(0, count - 1))
    effectors = []
    for number, holder in enumerate(holders):
        offset = [real(-0.2, 0.2) for _ in range(3)]
        offset[0] += 0.05
        effectors.append(Effector(f'tip{number}', holder, offset))
    return Chain('base', joints, effectors)


def random_tree_problem(real: Real, integer: Integer, narrow: bool = True):
    """
    Return a random tree, a seed, and reachable targets for a random subset of effectors.

    The targets can be reached while the other effectors hold: only joints that move no
    untargeted effector change between the seed and the pose the targets come from.
    """
    chain = random_tree(real, integer, narrow)
    seed = random_pose(chain, real)
    targeted = np.array([bool(integer(0, 1)) for _ in chain.effectors])
    if not targeted.any():
        targeted[0] = True
    free = ~np.any(chain.moves_effector[~targeted], axis=0)
    pose = np.where(free, random_pose(chain, real), seed)
    targets = chain.effector_positions(pose)
    targets[~targeted] = math.nan
    return chain, seed, targets


@st.composite
def tree_problems(draw, narrow: bool = True):
    """Draw a random tree problem (see random_tree_problem) with hypothesis."""
    return random_tree_problem(*hypothesis_draws(draw), narrow)


class TestTrees:
    """Every effector gets its own target; the others hold their pose."""

    @settings(max_examples=120, deadline=None)
    @given(tree_problems())
    def test_answer_is_finite_in_limits_and_measured_by_forward_kinematics(self, problem):
        chain, seed, targets = problem
        result = IkSolver(chain).solve(targets, seed)
        assert_within_limits(chain, result.q)
        positions = chain.effector_positions(result.q)
        np.testing.assert_allclose(result.effector_positions, positions, atol=1e-12)
        has_target = ~np.isnan(targets[:, 0])
        distances = np.linalg.norm(positions - targets, axis=1)
        np.testing.assert_allclose(result.errors[has_target], distances[has_target],
                                   atol=1e-12)
        assert np.all(np.isnan(result.errors[~has_target]))
        assert result.error == pytest.approx(distances[has_target].max(), abs=1e-12)

    def test_targets_are_reached_and_effectors_without_targets_do_not_drift(self):
        # A rate on plain random samples, for the reason given in test_ik.TestReaching; held
        # effectors stay put in every sample, reached or not.
        real, integer = plain_draws(2011)
        misses = 0
        for _ in range(REACH_SAMPLES):
            chain, seed, targets = random_tree_problem(real, integer, narrow=False)
            result = IkSolver(chain).solve(targets, seed)
            assert_within_limits(chain, result.q)
            held = np.isnan(targets[:, 0])
            drift = np.linalg.norm(chain.effector_positions(result.q)[held]
                                   - chain.effector_positions(seed)[held], axis=1)
            assert np.all(drift <= TOLERANCE)
            misses += not result.reached
        assert misses <= REACH_MISSES_ALLOWED

    @settings(max_examples=60, deadline=None)
    @given(tree_problems(), st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3))
    def test_the_error_never_grows_across_iterations(self, problem, shift):
        chain, seed, targets = problem
        targets = targets + np.array(shift)        # often out of reach together
        result = IkSolver(chain).solve(targets, seed, trace=True)
        assert np.all(np.diff(result.history) <= 0.0)
        # The logged error is the weighted root-sum-square over targets and held poses
        # (held ones weigh HELD_WEIGHT by default), from FK.
        held = np.isnan(targets[:, 0])
        goals = np.where(np.isnan(targets), chain.effector_positions(chain.clip(seed)), targets)
        weights = np.where(held, HELD_WEIGHT, 1.0)
        for q, error in zip(result.trace, result.history):
            assert_within_limits(chain, q)
            squares = np.sum((chain.effector_positions(q) - goals) ** 2, axis=1)
            assert math.sqrt(weights @ squares) == pytest.approx(error, rel=1e-9, abs=1e-12)

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def test_the_closing_steps_jacobian_is_the_chains(self, data):
        # The solver's Jacobian rows are compiled per effector with the frames' constants
        # folded: they must equal the chain's Jacobian, slides and followers included, and
        # a free root adds an identity block.
        real, integer = hypothesis_draws(data.draw)
        tree = random_tree(real, integer)
        joints: list[Joint] = []
        for index, joint in enumerate(tree.joints):
            leaders = [other.name for other in joints if other.mimic is None]
            kind = ('revolute', 'prismatic', 'mimic')[integer(0, 2) if leaders else 0]
            mimic = Mimic(leaders[integer(0, len(leaders) - 1)], real(-2.0, 2.0),
                          real(-0.1, 0.1)) if kind == 'mimic' else None
            limits = {'revolute': (joint.lower, joint.upper), 'prismatic': (-0.2, 0.3),
                      'mimic': (-math.inf, math.inf)}[kind]
            joints.append(Joint(joint.name, joint.parent, joint.origin_xyz,
                                joint.origin_rotation, joint.axis, *limits,
                                kind='prismatic' if kind == 'prismatic' else 'revolute',
                                mimic=mimic))
        chain = Chain('base', joints, tree.effectors)
        q = random_pose(chain, real)
        solver = IkSolver(chain)
        state = solver._tree.sweep(q.tolist(), (0.0, 0.0, 0.0))
        effectors = list(range(len(chain.effectors)))
        expected = chain.position_jacobian(chain.forward(q)).reshape(-1, chain.dof)
        np.testing.assert_allclose(solver._tree.jacobian(state, False, effectors), expected,
                                   atol=1e-12)
        free = np.array(solver._tree.jacobian(state, True, effectors))
        np.testing.assert_allclose(free[:, :chain.dof], expected, atol=1e-12)
        np.testing.assert_array_equal(free[:, chain.dof:], np.tile(np.eye(3), (len(effectors), 1)))


class TestRobots:
    """The dual arm and the spider of config/ behave as their users expect."""

    def test_both_arms_reach_their_own_targets_at_once(self):
        dual = robot('dual_arm')
        rng = np.random.default_rng(4)
        solver = IkSolver(dual)
        for _ in range(30):
            targets = dual.effector_positions(pose_in_limits(dual, rng.uniform(size=dual.dof)))
            result = solver.solve(dict(zip(dual.effector_names, targets)))
            assert result.reached
            np.testing.assert_array_less(
                np.linalg.norm(dual.effector_positions(result.q) - targets, axis=1), TOLERANCE)
            assert_within_limits(dual, result.q)

    def test_reachable_targets_of_two_arms_on_a_torso_are_not_given_up(self):
        """
        Restarts agreeing on a residual take a target for a hole only after enough agree.

        With two confirmations, a single arm's default, two of these were given up 31 and
        52 mm short: the torso multiplies the basins.
        """
        dual = robot('dual_arm')
        rng = np.random.default_rng(2011)
        solver = IkSolver(dual)
        lower, upper = np.maximum(dual.lower, -math.pi), np.minimum(dual.upper, math.pi)
        missed = [index for index, q in enumerate(rng.uniform(lower, upper, (100, dual.dof)))
                  if not solver.solve(dual.effector_positions(q)).reached]
        assert missed == []

    def test_one_arm_moves_and_the_other_holds(self):
        dual = robot('dual_arm')
        seed = pose_in_limits(dual, np.full(dual.dof, 0.5))
        start = dual.effector_positions(seed)
        target = start[0] + [0.05, -0.1, 0.08]
        result = IkSolver(dual).solve({dual.effector_names[0]: target}, seed)
        assert result.reached
        np.testing.assert_allclose(dual.effector_positions(result.q)[1], start[1],
                                   atol=TOLERANCE)
        assert math.isnan(result.errors[1])

    def test_conflicting_targets_out_of_reach_give_a_compromise(self):
        dual = robot('dual_arm')
        ahead = dual.effector_positions(dual.neutral())
        targets = ahead + np.array([[0.0, 3.0, 0.0], [0.0, -3.0, 0.0]])
        result = IkSolver(dual).solve(targets)
        assert not result.reached
        assert np.all(np.isfinite(result.errors))
        assert_within_limits(dual, result.q)
        # Each arm stretches toward its own side.
        positions = dual.effector_positions(result.q)
        assert positions[0, 1] > ahead[0, 1] and positions[1, 1] < ahead[1, 1]

    def test_a_free_spider_body_shifts_toward_its_feet_targets(self):
        spider = robot('spider')
        feet = spider.effector_positions(spider.neutral())
        shift = np.array([0.3, 0.1, 0.0])
        pinned = IkSolver(spider).solve(feet + shift)
        free = IkSolver(spider, root='free').solve(feet + shift)
        assert free.reached and not pinned.reached
        assert free.base_position @ shift > 0.5 * shift @ shift
        np.testing.assert_allclose(
            free.effector_positions, spider.effector_positions(free.q) + free.base_position,
            atol=1e-12)
        assert_within_limits(spider, free.q)

    def test_a_free_spider_body_follows_its_feet_wherever_they_step(self):
        # A rate on plain random samples (see test_ik.TestReaching): every foot of a random
        # stance sent 0.2 to 0.5 m sideways; the body must carry the legs there, and the legs
        # that already reach must not be thrown away when another one restarts.
        spider = robot('spider')
        solver = IkSolver(spider, root='free')
        real, _ = plain_draws(2013)
        misses = 0
        for _ in range(REACH_SAMPLES):
            heading, distance = real(0.0, 2.0 * math.pi), real(0.2, 0.5)
            shift = distance * np.array([math.cos(heading), math.sin(heading), 0.0])
            feet = spider.effector_positions(random_pose(spider, real)) + shift
            result = solver.solve(feet)
            assert_within_limits(spider, result.q)
            misses += not result.reached
        assert misses <= REACH_MISSES_ALLOWED


# A flip to another IK branch moves some joint by a large fraction of a radian in one step;
# following a path 3 to 8 mm per step moves every joint a few hundredths.
LARGEST_TRACKING_STEP = 0.2  # radians


def track(chain: Chain, path: np.ndarray, seed: np.ndarray, in_turn: bool
          ) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
    """
    Follow path (steps, m, 3), warm-starting each solve from the last answer.

    in_turn: one effector's target changes per solve (as when every effector's target comes
    in its own message), else all at once. Returns per solve (targets, seed, largest joint
    step in radians, error in metres).
    """
    solver = IkSolver(chain)
    q, targets = seed, path[0].copy()
    solves = []
    for points in path[1:]:
        for changed in (range(len(points)) if in_turn else [slice(None)]):
            targets[changed] = points[changed]
            result = solver.solve(targets, q)
            solves.append((targets.copy(), q, float(np.max(np.abs(result.q - q))),
                           result.error))
            q = result.q
    return solves


class TestTracking:
    """Warm-started tracking stays on the seed's branch while that branch can follow."""

    @settings(max_examples=12, deadline=None)
    @given(st.sampled_from(['dual_arm', 'spider']), st.lists(unit, min_size=18, max_size=18),
           st.floats(0.02, 0.08), st.booleans())
    def test_a_jump_only_where_the_branch_cannot_follow(self, name, fractions, swing,
                                                        in_turn):
        """
        Targets made by FK of slow joint sinusoids: reachable, and every one is reached.

        Where the path passes a singularity (a leg straight) two branches meet and the
        solver may go on along the other one than the path's; once that branch can no
        longer follow (a limit), a jump to the path's branch is right, and only then:
        solving from the same seed without restarts misses by more than restart_error.
        """
        chain = robot(name)
        middle = pose_in_limits(chain, 0.2 + 0.6 * np.array(fractions[:chain.dof]))
        phases = 2.0 * math.pi * np.array(fractions[::-1][:chain.dof])
        angles = np.linspace(0.0, 2.0 * math.pi, 120)[:, np.newaxis]
        poses = np.clip(middle + swing * (chain.upper - chain.lower) * np.sin(angles + phases),
                        chain.lower, chain.upper)
        path = np.array([chain.effector_positions(pose) for pose in poses])
        local = IkSolver(chain, max_restarts=0)
        for targets, seed, step, error in track(chain, path, poses[0], in_turn):
            assert error <= local.restart_error
            if step >= LARGEST_TRACKING_STEP:
                assert local.solve(targets, seed).error > local.restart_error

    @pytest.mark.parametrize('mode', ['double', 'spider'])
    @pytest.mark.parametrize('in_turn', [True, False])
    def test_the_demo_paths_are_followed_without_jumps(self, mode, in_turn):
        """
        The demo's figure eights (dual arm) and step ellipses (spider), from neutral.

        A regression: tracking drifted the dual arm into its joint limits (elbow straight,
        wrist folded) where a restart from those limits released flipped the left elbow by
        1.1 rad for 0.1 mm; the spider restarted 24 times on feet its yaw limits keep 0.3 mm
        short of their targets.
        """
        demo = pytest.importorskip('fabrik_ros.demo', reason='the demo needs rclpy')
        chain = robot({'double': 'dual_arm', 'spider': 'spider'}[mode])
        plan = demo.TargetPlan.for_mode(chain, mode, 15.0)
        times = np.arange(0.0, plan.moving_time, 1.0 / plan.rate)
        path = np.array([plan.targets(t) for t in times])
        approach = np.full_like(path[0], math.nan)
        seed = chain.neutral()
        for effector in (range(len(approach)) if in_turn else [slice(None)]):
            approach[effector] = path[0][effector]
            seed = IkSolver(chain).solve(approach, seed).q
        solves = track(chain, path, seed, in_turn)
        assert max(step for _, _, step, _ in solves) < LARGEST_TRACKING_STEP
        # The spider's feet: up to 0.5 mm short where the coxa yaw limits hold them back.
        assert max(error for _, _, _, error in solves) <= 1e-3


def out_of_reach_problem(real: Real, integer: Integer, narrow: bool = True,
                         others_move: bool = False):
    """
    Return a random tree, a seed, targets, and which effectors are out of reach.

    A random non-empty subset of effectors (not all) gets targets 10 m out, far beyond any
    reach; the others hold (no target), or with `others_move` those that share no joint
    with a far one get reachable targets (FK of a random pose). Returns (chain, seed,
    targets, far, shared): shared marks the effectors that share a joint with a far one
    (the far ones included).
    """
    chain = random_tree(real, integer, narrow)
    seed = random_pose(chain, real)
    far = np.array([bool(integer(0, 1)) for _ in chain.effectors])
    if far.all() or not far.any():
        far[:] = False
        far[integer(0, len(far) - 1)] = True
    shared = np.any(chain.moves_effector[:, chain.moves_effector[far].any(axis=0)], axis=1)
    targets = np.full((len(chain.effectors), 3), math.nan)
    if others_move:
        targets[~shared] = chain.effector_positions(random_pose(chain, real))[~shared]
    for index in np.flatnonzero(far):
        direction = np.array([real(-1.0, 1.0) for _ in range(3)]) + [0.0, 0.0, 1e-3]
        targets[index] = 10.0 * direction / np.linalg.norm(direction)
    return chain, seed, targets, far, shared


class TestOutOfReachBranches:
    """An effector out of reach takes only the joints it shares; the others are not spoiled."""

    @settings(max_examples=80, deadline=None)
    @given(st.data())
    def test_held_effectors_sharing_no_joint_with_one_out_of_reach_hold(self, data):
        chain, seed, targets, far, shared = out_of_reach_problem(
            *hypothesis_draws(data.draw))
        result = IkSolver(chain).solve(targets, seed)
        assert_within_limits(chain, result.q)
        drift = np.linalg.norm(chain.effector_positions(result.q)
                               - chain.effector_positions(seed), axis=1)
        assert np.all(drift[~shared] <= TOLERANCE)
        assert np.all(np.isfinite(result.errors[far]))

    def test_effectors_sharing_no_joint_with_those_out_of_reach_reach_their_targets(self):
        # A rate on plain random samples, as in TestTrees: any subset of effectors out of
        # reach, the others that share no joint with them sent to reachable targets; they
        # must reach them as if the far targets were not there.
        real, integer = plain_draws(2012)
        samples = misses = 0
        while samples < REACH_SAMPLES:
            chain, seed, targets, far, shared = out_of_reach_problem(
                real, integer, narrow=False, others_move=True)
            if shared.all():
                continue
            samples += 1
            result = IkSolver(chain).solve(targets, seed)
            assert_within_limits(chain, result.q)
            assert np.all(result.errors[far] > 1.0)
            misses += bool(np.any(result.errors[~shared] > TOLERANCE))
        assert misses <= REACH_MISSES_ALLOWED

    def test_a_spider_leg_sent_far_away_leaves_the_other_feet_on_their_targets(self):
        spider = robot('spider')
        rng = np.random.default_rng(12)
        for _ in range(10):
            feet = spider.effector_positions(pose_in_limits(spider,
                                                            rng.uniform(0.2, 0.8, spider.dof)))
            feet[0] = (5.0, 5.0, 5.0)
            result = IkSolver(spider).solve(feet)
            assert result.errors[0] > 4.0
            assert np.all(result.errors[1:] <= TOLERANCE)

    def test_a_held_arm_holds_while_the_other_pulls_the_torso_and_weights_trade(self):
        dual = robot('dual_arm')
        rng = np.random.default_rng(12)
        left, right = dual.effector_names
        drifts, traded = [], []
        for _ in range(10):
            seed = pose_in_limits(dual, rng.uniform(0.2, 0.8, dual.dof))
            start = dual.effector_positions(seed)
            direction = rng.normal(size=3)
            target = {left: start[0] + 2.0 * direction / np.linalg.norm(direction)}
            held = IkSolver(dual).solve(target, seed)
            drifts.append(np.linalg.norm(dual.effector_positions(held.q)[1] - start[1]))
            equal = IkSolver(dual, effector_weights={right: 1.0}).solve(target, seed)
            traded.append(np.linalg.norm(dual.effector_positions(equal.q)[1] - start[1]))
        assert np.median(drifts) <= 1e-3 and max(drifts) <= 5e-3
        assert np.mean(traded) > 10.0 * np.mean(drifts)    # equal weights: the torso gives

    def test_bad_weights_are_refused(self):
        dual = robot('dual_arm')
        with pytest.raises(ValueError, match="unknown effector 'foot'"):
            IkSolver(dual, effector_weights={'foot': 1.0})
        for weight in (0.0, -1.0, math.inf, math.nan, 'heavy'):
            with pytest.raises(ValueError, match='must be a positive number'):
                IkSolver(dual, effector_weights={dual.effector_names[0]: weight})
