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
The IK controller's safety contract, proven over random event sequences.

Specification (README, "Safety contract"): every command lies within the position limits
in force; consecutive commands stay within the velocity and acceleration limits in force,
and a limit that narrows is reached within the old ones, never jumped to; while feedback
is stale nothing but braking happens, and the command restarts where the arm is measured;
a forgotten target is never solved again; a free body moves only with commands, never
faster than max_body_velocity. Velocity commands (tool twists, joint jogs) interleaved with
all of it keep every one of these rules, never jump when the source switches, and once
they stop the arm is at rest within its braking time. Time is an argument: no test sleeps.
"""

import math

from fabrik_ros.chain import Chain
from fabrik_ros.command import STALLED_PERIODS
from fabrik_ros.controller import IkController, Target
from fabrik_ros.ik import IkSolver
from fabrik_ros.jog import JogSettings, JogStatus
from fabrik_ros.motion import time_to_reach
from fabrik_ros.settings import model_limits, Settings
from hypothesis import event, settings, strategies as st
from hypothesis.stateful import (initialize, invariant, precondition, rule,
                                 RuleBasedStateMachine)
import numpy as np
import pytest

DT = 0.01  # seconds, command period of the streaming controllers
SLACK = 1e-9  # relative slack on floating-point comparisons
BASE = {'tolerance': 1e-3, 'max_iterations': 20, 'max_restarts': 1, 'max_joint_step': math.inf,
        'target_timeout': 0.0, 'feedback_timeout': 0.3, 'target_window': 0.0,
        'default_max_velocity': 5.0, 'default_max_acceleration': 200.0, 'root': 'pinned',
        'solve_timeout': 0.0, 'max_body_velocity': 0.5, 'orientation_mode': 'full',
        'orientation_tolerance': 1e-3, 'tool_axis': [0.0, 0.0, 1.0], 'self_collision': True,
        'collision_margin': 0.01, 'collision_slowdown_distance': 0.1}


def serial_arm() -> Chain:
    """Return a 4-joint arm of two two-axis segments, 0.2 m each."""
    return Chain.from_parameters(2, [0.2], joint_type='two_axis', joint_limit=[2.0],
                                 max_velocity=8.0, base_link='base', tip_link='tip')


def two_legs() -> Chain:
    """Return a tree of two 2-joint legs (two effectors)."""
    return Chain.from_parameters(2, [0.15], joint_type='hinge', joint_limit=[2.0],
                                 max_velocity=8.0, legs=2, body_radius=0.1,
                                 base_link='base', tip_link=['foot0', 'foot1'])


def other_arm() -> Chain:
    """Return another robot: 6 continuous joints, its first four named as serial_arm's."""
    return Chain.from_parameters(3, [0.15], joint_type='two_axis', joint_limit=[math.inf],
                                 max_velocity=8.0, base_link='base', tip_link='tip')


def other_legs() -> Chain:
    """Return another tree: two 3-joint continuous legs, two joints named as two_legs'."""
    return Chain.from_parameters(3, [0.1], joint_type='hinge', joint_limit=[math.inf],
                                 max_velocity=8.0, legs=2, body_radius=0.1,
                                 base_link='base', tip_link=['foot0', 'foot1'])


def descriptions(tree: bool) -> dict[str, Chain]:
    """Return the models a robot_description may bring: limits narrowed, widened, another."""
    def legs(limit: float) -> Chain:
        return Chain.from_parameters(2, [0.15], joint_type='hinge', joint_limit=[limit],
                                     max_velocity=8.0, legs=2, body_radius=0.1,
                                     base_link='base', tip_link=['foot0', 'foot1'])

    def arm(limit: float) -> Chain:
        return Chain.from_parameters(2, [0.2], joint_type='two_axis', joint_limit=[limit],
                                     max_velocity=8.0, base_link='base', tip_link='tip')

    make = legs if tree else arm
    return {'base': make(2.0), 'narrowed': make(0.3), 'widened': make(2.5),
            'another robot': other_legs() if tree else other_arm()}


twists = st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6).map(
    lambda v: np.array(v) * np.array([0.5, 0.5, 0.5, 2.0, 2.0, 2.0]))  # m/s, rad/s


def make_settings(model: Chain, **values: object) -> Settings:
    """Return Settings of BASE with `values` (joint_limits.* included) for `model`."""
    return Settings.from_parameters(model, {**BASE, **values})


class ControllerContract(RuleBasedStateMachine):
    """Random targets, twists, joint jogs, feedback gaps, limit changes, services, time steps."""

    @initialize(tree=st.booleans(), streaming=st.booleans(), feedback=st.booleans(),
                window=st.sampled_from([0.0, 0.02]), timeout=st.sampled_from([0.0, 0.5]),
                max_step=st.sampled_from([math.inf, 0.05]),
                root=st.sampled_from(['pinned', 'free']))
    def start(self, tree, streaming, feedback, window, timeout, max_step, root):
        self.model = two_legs() if tree else serial_arm()
        self.tree, self.model_key, self.order = tree, 'base', ()
        self.every_joint = sorted({name for model in descriptions(tree).values()
                                   for name in model.joint_names})
        self.now = self.tick_time = 0.0
        self.values = {'target_window': window, 'target_timeout': timeout,
                       'max_joint_step': max_step, 'root': root}
        self.settings = make_settings(self.model, **self.values)
        self.controller = IkController(self.settings, self.now,
                                       command_period=DT if streaming else None,
                                       feedback=feedback)
        self.streaming, self.feedback = streaming, feedback
        self.hard_lower, self.hard_upper = self.model.lower, self.model.upper
        self.previous = None if feedback else self.model.neutral()  # last command
        self.velocity = np.zeros(self.model.dof)  # of the last command, rad/s
        self.inside = np.ones(self.model.dof, dtype=bool)  # within the range in force
        self.acceleration_bound = self.settings.motion.max_acceleration.copy()
        self.velocity_bound = self.settings.motion.max_velocity.copy()
        self.measured_time = -math.inf
        self.measured = None
        self.live: list[np.ndarray | None] = [None] * len(self.model.effectors)
        self.last_target_time = -math.inf
        self.stale_since_command = False
        self.moved = self.now  # when the body last could move (ticks, solutions)
        self.jog_time = -math.inf  # of the last velocity command taken
        self.braking_ticks: int | None = None  # left once a jog's commands are stale

    # ---- the checks -------------------------------------------------------------------

    def stale(self) -> bool:
        return self.feedback and self.now - self.measured_time > self.settings.feedback_timeout

    def forget(self) -> None:
        self.live = [None] * len(self.live)

    def resync(self, position: np.ndarray) -> None:
        """Record that the command restarted at rest at `position` (measured or last commanded)."""
        motion = self.controller.settings.motion
        self.previous = np.clip(position, motion.lower, motion.upper)
        self.velocity = np.zeros(self.model.dof)
        self.inside[:] = True

    def stops_inside(self, p: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        """Tell which joints at p, at the last velocity, can stop within lower..upper."""
        v = self.velocity
        room = np.where(v > 0.0, upper - p, p - lower) - np.abs(v) * DT / 2.0
        with np.errstate(divide='ignore', invalid='ignore'):
            needed = np.where(v == 0.0, 0.0, np.where(room > 0.0, v * v / (2.0 * room),
                                                      np.inf))
        return (p >= lower) & (p <= upper) & (needed <= self.acceleration_bound * (1 - 1e-9))

    def check_command(self, update) -> None:
        command = update.command
        if command is None:
            return
        event('command')
        position = command.position
        assert np.all(np.isfinite(position)), 'a command that is not finite'
        motion = self.controller.settings.motion
        assert self.previous is not None, 'a command before the stream had a start'
        assert np.all(position >= self.hard_lower) and np.all(position <= self.hard_upper)
        inside = (position >= motion.lower) & (position <= motion.upper)
        assert not np.any(self.inside & ~inside), 'left the position range in force'
        # Joints outside a narrowed range move into it, also while feedback is stale.
        outside = ~self.inside
        step = position - self.previous
        if self.streaming:
            velocity = step / DT
            speed, before = np.abs(velocity), np.abs(self.velocity)
            limit = np.maximum(self.velocity_bound, before) * (1 + SLACK) + SLACK
            assert np.all(speed <= limit), 'faster than the velocity limit in force'
            change = np.abs(velocity - self.velocity)
            harder = change > self.acceleration_bound * DT * (1 + 1e-6) + SLACK
            # A collision stop (the stream's check cut the step short) may only slow down.
            stop = self.controller.collision.cut & (velocity * self.velocity >= 0.0) \
                & (speed < before)
            assert np.all(~harder | stop), 'harder than the acceleration limit in force'
            if self.stale():  # braking only: no joint speeds up or turns back
                braking = (speed <= before * (1 + SLACK) + SLACK) & (velocity * self.velocity
                                                                     >= -SLACK)
                assert np.all(braking | outside), 'moved while feedback was stale'
            self.velocity = velocity
            at_rest = velocity == 0.0
            self.acceleration_bound = np.where(at_rest, motion.max_acceleration,
                                               self.acceleration_bound)
            self.velocity_bound = np.where(speed <= motion.max_velocity,
                                           motion.max_velocity, self.velocity_bound)
        else:
            max_step = motion.max_step * (1 + SLACK) + SLACK
            assert np.all(np.abs(step) <= max_step), 'jumped past max_joint_step'
            if self.stale():
                assert np.all((step == 0.0) | outside), 'moved while feedback was stale'
        # A joint braking through a narrowed range is in it for a while before it passes
        # the bound and comes back: it must stay once it is in and can stop there.
        self.inside |= self.stops_inside(position, motion.lower, motion.upper)
        self.previous = position

    def check_body(self, before: np.ndarray, seconds: float) -> None:
        """Check the body's move in `seconds`: within max_body_velocity; none if pinned."""
        body = self.controller.body
        assert np.all(np.isfinite(body))
        if self.controller.settings.root == 'pinned':
            assert not np.any(body), 'a pinned base moved'
        distance = float(np.linalg.norm(body - before))
        if distance:
            event('the body moves')
        assert distance <= BASE['max_body_velocity'] * seconds * (1 + SLACK) + SLACK, \
            'the body moved faster than max_body_velocity'

    def check_solve(self, solves_before: int) -> None:
        """Check that a solve used the live targets only: nothing forgotten comes back."""
        if self.controller.solves == solves_before:
            return
        event('solve')
        for live, solved in zip(self.live, self.controller.solved_targets):
            if live is None:
                assert np.all(np.isnan(solved)), f'replayed a forgotten target {solved}'
            else:
                assert np.array_equal(live, solved)

    def watchdogs(self) -> None:
        """Mirror of the controller's watchdogs: what a tick or a due window forgets."""
        timeout = self.settings.target_timeout
        if self.stale() or (timeout > 0.0 and self.now - self.last_target_time > timeout):
            self.forget()

    # ---- the events ---------------------------------------------------------------------

    @rule(effector=st.integers(0, 1), xyz=st.tuples(*[st.floats(-0.45, 0.45)] * 3),
          age=st.one_of(st.none(), st.floats(-1.0, 1.0)))
    def target(self, effector, xyz, age):
        effector %= len(self.live)
        position = np.array(xyz)
        solves, body = self.controller.solves, self.controller.body.copy()
        update = self.controller.on_target(effector, Target(position), self.now, age)
        self.check_body(body, self.now - self.moved)
        self.moved = self.now
        if update.refusal is None:
            self.live[effector] = position
            self.last_target_time = self.now
        elif update.refusal[0] == 'solver':
            self.forget()
        self.check_solve(solves)
        self.check_command(update)

    @rule()
    def solve_pending(self):
        due = self.controller.solve_due
        if due is not None:
            self.now = max(self.now, due)
            self.watchdogs()
        solves, body = self.controller.solves, self.controller.body.copy()
        self.check_command(self.controller.solve_pending(self.now))
        self.check_solve(solves)
        self.check_body(body, self.now - self.moved)
        self.moved = self.now

    @rule(seconds=st.sampled_from([DT, DT, DT, 0.03, 0.2, 0.5]), count=st.integers(1, 12))
    def tick(self, seconds, count):
        for _ in range(count):
            self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Tick once `seconds` later and check the command, the body and the jog's rest."""
        self.now += seconds
        self.watchdogs()
        if self.now - self.tick_time > STALLED_PERIODS * DT:
            self.velocity[:] = 0.0  # the arm stood at the last command meanwhile
        self.tick_time = self.now
        body = self.controller.body.copy()
        jogging = self.controller.jog.active
        update = self.controller.tick(self.now)
        self.check_command(update)
        self.check_body(body, self.now - self.moved)
        self.moved = self.now
        self.check_jog_rest(jogging)

    def check_jog_rest(self, jogged: bool) -> None:
        """Once jog commands are stale, the arm comes to rest within its braking ticks."""
        jog = self.controller.jog
        assert jog.status in JogStatus.__members__.values()
        if not (jogged and self.now - self.jog_time > JogSettings().timeout):
            self.braking_ticks = None
            return
        if self.braking_ticks is None:  # the first stale tick: braking starts from here
            motion = self.controller.settings.motion
            self.braking_ticks = int(np.max(np.ceil(
                np.abs(self.velocity) / (motion.max_acceleration * DT)), initial=0)) + 2
        self.braking_ticks -= 1
        if jog.active:
            assert self.braking_ticks >= 0, 'still moving after the braking time'
        elif not self.stale():  # stale feedback ends it at once: the stream brakes
            event('a stale jog came to rest')
            assert not np.any(self.velocity), 'the jog ended while moving'

    def expected_jog_refusal(self) -> bool:
        return (not self.streaming or self.stale() or not self.controller.enabled
                or self.controller._disabling)

    def jog_taken(self, update, expected_refusal: bool) -> None:
        """Mirror a velocity command: refused as the controller says, or every target lost."""
        if expected_refusal:
            assert update.refusal is not None and update.refusal[0] == 'jog'
            return
        if update.refusal is None:
            event('jog')
            self.forget()
            self.jog_time = self.now

    @rule(effector=st.integers(0, 1), twist=twists, frame=st.sampled_from(['base', 'tool']),
          age=st.one_of(st.none(), st.none(), st.floats(-0.3, 0.3)), count=st.integers(1, 40))
    def twist_stream(self, effector, twist, frame, age, count):
        """Stream one twist at every tick for `count` ticks (a stick held), then stop."""
        effector %= len(self.live)
        for _ in range(count):
            refused = self.expected_jog_refusal()
            update = self.controller.jog.on_twist(effector, twist, self.now, frame, age)
            if age is not None and abs(age) > JogSettings().timeout:
                assert update.refusal is not None, 'a stale or future twist was taken'
            self.jog_taken(update, refused)
            self.advance(DT)

    @rule(velocities=st.lists(st.floats(-12.0, 12.0), min_size=6, max_size=6),
          named=st.integers(1, 6), unknown=st.booleans(), count=st.integers(1, 40))
    def joint_jog_stream(self, velocities, named, unknown, count):
        """Stream joint velocities (past the limits too) for `count` ticks, then stop."""
        names = self.controller.settings.chain.joint_names
        jog = dict(zip(names[:named], velocities))
        if unknown:
            jog['no_such_joint'] = 1.0
        for _ in range(count):
            refused = self.expected_jog_refusal()
            update = self.controller.jog.on_joint_jog(jog, self.now)
            if unknown:
                assert update.refusal is not None, 'a jog of an unknown joint was taken'
            self.jog_taken(update, refused)
            self.advance(DT)

    @precondition(lambda self: self.feedback)
    @rule(jump=st.booleans(), seed=st.integers(0, 2**16), gap=st.sampled_from([0.0, 0.0, 0.5]),
          whole=st.booleans())
    def feedback_arrives(self, jump, seed, gap, whole):
        """Measure the model's joints (whole: every joint any description has, too)."""
        self.now += gap
        if jump or self.previous is None:  # moved by hand, a drive restarted
            rng = np.random.default_rng(seed)
            measured = rng.uniform(-2.5, 2.5, self.model.dof)  # may lie beyond the limits
        else:  # the arm follows its commands
            measured = self.previous.copy()
        names, values = list(self.model.joint_names), measured.tolist()
        if whole:
            extra = [name for name in self.every_joint if name not in names]
            names, values = names + extra, values + [0.3] * len(extra)
        resyncs = self.stale()
        self.controller.on_feedback(names, values, self.now)
        self.measured_time = self.now
        if resyncs:
            self.forget()
            self.resync(measured)
            assert np.array_equal(self.controller.stream.position, self.previous)

    @rule(joint=st.integers(0, 5), field=st.sampled_from(['min_position', 'max_position',
                                                          'max_velocity', 'max_acceleration']),
          fraction=st.floats(0.05, 1.0))
    def change_limit(self, joint, field, fraction):
        name = self.model.joint_names[joint % self.model.dof]
        model = model_limits(self.model, BASE['default_max_velocity'],
                             BASE['default_max_acceleration'])
        key = f'joint_limits.{name}.{field}'
        value = model[key] * fraction
        if field == 'max_acceleration':
            value = 10.0 + 400.0 * fraction  # may widen as well as narrow
        if not math.isfinite(value):
            value = (-1.0 if field == 'min_position' else 1.0) * 3.0 * fraction
        values = {**self.values, key: value}
        try:
            settings = make_settings(self.model, **values)
        except ValueError:  # e.g. min above max: refused, nothing changes
            return
        old = self.controller.settings.motion
        self.values, self.settings = values, settings
        self.controller.configure(settings, self.order)
        self.limits_changed(old, settings.motion, np.arange(self.model.dof))

    def limits_changed(self, old, new, carried) -> None:
        """
        Mirror new limits: joint k of the new ones was joint carried[k] of the old ones.

        A joint moving keeps the acceleration in force until it may use the new one; one
        faster than a new velocity limit slows down to it at the acceleration limit.
        """
        moving = self.velocity != 0.0
        self.acceleration_bound = np.where(
            moving, np.maximum(self.acceleration_bound, new.max_acceleration),
            new.max_acceleration)
        self.velocity_bound = np.maximum(new.max_velocity, np.minimum(
            np.maximum(old.max_velocity[carried], self.velocity_bound),
            np.abs(self.velocity)))
        if self.previous is not None:
            # A joint stays within the new range if it can still stop there at the
            # acceleration in force; else it brakes at that, past the range and back.
            self.inside = self.stops_inside(self.previous, new.lower, new.upper)
            if not self.inside.all():
                event('a narrowed range leaves a joint outside')

    @rule(kind=st.sampled_from(['same', 'base', 'narrowed', 'widened', 'another robot']))
    def new_description(self, kind):
        """Take a robot_description: the same robot again, other limits, another robot."""
        key = self.model_key if kind == 'same' else kind
        model = descriptions(self.tree)[key]
        order = self.order if sorted(self.order) == sorted(model.joint_names) else ()
        try:
            settings = make_settings(model, **self.values)
            goal, targets = self.controller.stream.goal, list(self.controller.targets)
            update = self.controller.change_model(settings, self.now, order)
        except ValueError:  # limits set for joints it has not, an order it cannot take
            return
        event(f'description: {kind}')
        old_model, old = self.model, self.settings.motion
        if key == self.model_key:  # the same robot: nothing changes
            assert not update.warnings and self.controller.targets == targets
            assert self.controller.stream.goal is goal
            self.model, self.settings = model, settings
            return
        self.model, self.model_key, self.settings, self.order = model, key, settings, order
        index = {name: k for k, name in enumerate(old_model.joint_names)}
        kept = np.array([name in index for name in model.joint_names])
        carried = np.array([index.get(name, 0) for name in model.joint_names])
        hard = (np.minimum(self.hard_lower, old.lower), np.maximum(self.hard_upper, old.upper))
        self.hard_lower = np.where(kept, np.minimum(hard[0][carried], model.lower), model.lower)
        self.hard_upper = np.where(kept, np.maximum(hard[1][carried], model.upper), model.upper)
        if key != 'another robot' and old_model.joint_names == model.joint_names:
            self.limits_changed(old, settings.motion, carried)  # targets kept
            return
        self.live = [None] * len(model.effectors)
        stream = self.controller.stream
        if stream.position is None:  # closed loop: waits for a measurement of every joint
            assert self.feedback
            self.previous, self.measured_time = None, -math.inf
            self.velocity, self.inside = np.zeros(model.dof), np.ones(model.dof, dtype=bool)
            self.acceleration_bound = settings.motion.max_acceleration.copy()
            self.velocity_bound = settings.motion.max_velocity.copy()
            return
        new = ~kept
        if self.previous is None:  # it had not started: it starts where it is measured
            self.previous = stream.position.copy()
            self.velocity = np.zeros(model.dof)
            kept[:] = False
        else:
            self.previous = np.where(kept, self.previous[carried], stream.position)
            self.velocity = np.where(kept, self.velocity[carried], 0.0)
        assert np.all(stream.velocity[new] == 0.0), 'a new joint started moving'
        if new.any():
            assert np.all(np.isfinite(stream.position[new]))
        self.acceleration_bound = np.where(kept, self.acceleration_bound[carried], np.inf)
        self.velocity_bound = np.where(kept, self.velocity_bound[carried], np.inf)
        self.inside = np.where(kept, self.inside[carried], True)
        self.limits_changed(old.__class__(
            np.where(kept, old.lower[carried], model.lower),
            np.where(kept, old.upper[carried], model.upper),
            np.where(kept, old.max_velocity[carried], settings.motion.max_velocity),
            np.where(kept, old.max_acceleration[carried], settings.motion.max_acceleration),
            np.where(kept, old.max_step[carried], settings.motion.max_step)),
            settings.motion, np.arange(model.dof))

    @rule(seed=st.integers(0, 2**16))
    def reorder_command_joints(self, seed):
        """Reorder command_joints: taken only while the command stands still."""
        order = list(np.random.default_rng(seed).permutation(self.model.joint_names))
        if order == list(self.order or self.model.joint_names):
            return  # the order in force: nothing changes
        at_rest = self.controller.stream.at_rest
        try:
            self.controller.configure(self.controller.settings, order)
        except ValueError:
            assert not at_rest, 'an order refused at rest'
            event('a new order refused while moving')
            return
        assert at_rest and not np.any(self.velocity), 'the slots of ~/commands jumped'
        self.order = tuple(order)

    @precondition(lambda self: self.feedback)
    @rule(joint=st.integers(0, 5), value=st.sampled_from(
        [1e300, 5e303, -1e305, 1.7e308, math.inf, math.nan, 1e7]))
    def absurd_feedback(self, joint, value):
        """Measure what no joint can be at: ignored with a reason; nothing overflows."""
        measured = (self.model.neutral() if self.previous is None else self.previous).copy()
        measured[joint % self.model.dof] = value
        update = self.controller.on_feedback(self.model.joint_names, measured.tolist(),
                                             self.now)
        assert [kind for kind, _ in update.warnings] == ['feedback']

    @rule()
    def hold(self):
        self.controller.hold(self.now)
        self.forget()

    @rule()
    def disable(self):
        self.controller.disable(self.now)
        self.forget()

    @rule()
    def enable(self):
        was_enabled = self.controller.enabled
        ok, _ = self.controller.enable(self.now)
        if ok and not was_enabled:
            self.forget()
            self.resync(self.controller.stream.position)

    @invariant()
    def silent_while_disabled(self):
        if not getattr(self, 'controller', None) or self.controller.enabled:
            return
        assert self.controller.tick(self.now).command is None
        self.watchdogs()


ControllerContract.TestCase.settings = settings(
    max_examples=150, stateful_step_count=60, deadline=None)
# Overflows and invalid values are bugs here, not warnings.
test_the_safety_contract_holds_over_random_event_sequences = pytest.mark.filterwarnings(
    'error::RuntimeWarning')(ControllerContract.TestCase)


class JoggingContract(ControllerContract):
    """The same contract where velocity commands can be taken: streaming, jogged often."""

    @initialize(tree=st.booleans(), feedback=st.booleans(), window=st.sampled_from([0.0, 0.02]),
                timeout=st.sampled_from([0.0, 0.5]), max_step=st.sampled_from([math.inf, 0.05]),
                root=st.sampled_from(['pinned', 'free']))
    def start(self, tree, feedback, window, timeout, max_step, root):
        super().start(tree, True, feedback, window, timeout, max_step, root)

    @rule(effector=st.integers(0, 1), twist=twists, frame=st.sampled_from(['base', 'tool']),
          count=st.integers(1, 40))
    def another_twist_stream(self, effector, twist, frame, count):
        self.twist_stream(effector, twist, frame, None, count)

    @rule(velocities=st.lists(st.floats(-12.0, 12.0), min_size=6, max_size=6),
          named=st.integers(1, 6), count=st.integers(1, 40))
    def another_joint_jog_stream(self, velocities, named, count):
        self.joint_jog_stream(velocities, named, False, count)


JoggingContract.TestCase.settings = settings(
    max_examples=100, stateful_step_count=60, deadline=None)
test_the_safety_contract_holds_while_jogging = pytest.mark.filterwarnings(
    'error::RuntimeWarning')(JoggingContract.TestCase)


# ---- regressions found by driving the node, one by one -----------------------------------

def streaming(model: Chain, feedback: bool = False, **values: object) -> IkController:
    """Return an enabled controller streaming at 1/DT for `model`."""
    return IkController(make_settings(model, **values), 0.0, command_period=DT,
                        feedback=feedback)


def run(controller: IkController, start: float, seconds: float) -> np.ndarray:
    """Tick for `seconds` from `start`; return the (k, n) commands."""
    steps = int(round(seconds / DT))
    return np.array([controller.tick(start + DT * (k + 1)).command.position
                     for k in range(steps)])


def test_a_narrowed_position_limit_is_reached_within_the_motion_limits():
    """Narrowing max_position below a joint's command moves it there within the limits."""
    model = serial_arm()
    controller = streaming(model, max_joint_step=0.05)
    q = model.neutral()
    q[0] = 1.5
    controller.on_target(0, Target(model.tip_position(q)), 0.0)
    path = run(controller, 0.0, 3.0)
    assert path[-1][0] > 1.0
    controller.configure(make_settings(model, max_joint_step=0.05,
                                       **{f'joint_limits.{model.joint_names[0]}.max_position':
                                          0.2}))
    after = np.vstack([path[-1:], run(controller, 3.0, 3.0)])
    velocity = np.diff(after, axis=0) / DT
    assert np.abs(velocity).max() <= 5.0 + 1e-9  # default_max_velocity; 0.05 rad per step
    assert np.abs(np.diff(velocity, axis=0)).max() <= 200.0 * DT * (1 + 1e-6)
    assert np.all(np.diff(after[:, 0]) <= 0.0) and after[-1, 0] <= 0.2


def test_after_a_feedback_gap_commands_restart_where_the_arm_is_measured():
    """Feedback back after a gap, elsewhere: commands start from the measured pose."""
    model = serial_arm()
    controller = streaming(model, feedback=True)
    controller.on_feedback(model.joint_names, model.neutral().tolist(), 0.0)
    assert controller.tick(DT).command is not None
    moved = np.full(model.dof, 1.0)  # by hand, while nothing was measured
    controller.on_feedback(model.joint_names, moved.tolist(), 1.0)
    command = controller.tick(1.0 + DT).command
    assert np.array_equal(command.position, moved)
    assert not np.any(command.velocity)


def test_a_target_sent_before_disable_is_not_replayed_after_enable():
    """After ~/enable no effector of a tree replays a target sent before disable."""
    model = two_legs()
    controller = IkController(make_settings(model), 0.0, command_period=None, feedback=False)
    feet = model.effector_positions(model.neutral())
    controller.on_target(0, Target(feet[0] + [0.0, 0.0, 0.03]), 0.0)
    controller.disable(0.1)
    assert controller.enable(0.2)[0]
    controller.on_target(1, Target(feet[1] + [0.0, 0.0, 0.03]), 0.3)
    assert np.all(np.isnan(controller.solved_targets[0]))


@pytest.mark.parametrize('age, refused', [(0.1, False), (-0.1, False), (0.6, True),
                                          (-(2**31), True)])
def test_targets_stamped_beyond_the_target_timeout_either_way_are_refused(age, refused):
    """A target stamped too far in the past or the future (2038) is refused."""
    model = serial_arm()
    controller = streaming(model, target_timeout=0.5)
    update = controller.on_target(0, Target(model.tip_position(model.neutral() + 0.1)),
                                  0.0, age)
    assert (update.refusal is not None) == refused
    assert controller.refused == int(refused)


def test_diagnostics_describe_the_last_solve_consistently():
    """solve_time_ms and error_m describe the same, last solve."""
    model = serial_arm()
    controller = streaming(model)
    controller.on_target(0, Target(model.tip_position(model.neutral() + 0.2)), 0.0)
    first = controller.status(0.5, 1.0).values
    later = controller.status(1.5, 1.0).values
    assert float(first['solve_time_ms']) > 0.0 and first['solve_rate_hz'] == '1.0'
    assert later['solve_time_ms'] == first['solve_time_ms']
    assert later['error_m'] == first['error_m'] and later['solve_rate_hz'] == '0.0'


def test_disabling_a_moving_arm_brakes_to_a_stop_then_goes_silent():
    model = serial_arm()
    controller = streaming(model)
    controller.on_target(0, Target(model.tip_position(np.full(model.dof, 1.5))), 0.0)
    moving = run(controller, 0.0, 0.1)
    assert np.any(np.diff(moving, axis=0))
    controller.disable(0.1)
    commands, now = [moving[-1]], 0.1
    while (update := controller.tick(now := now + DT)).command is not None:
        commands.append(update.command.position)
    velocity = np.diff(commands, axis=0) / DT
    assert np.abs(np.diff(velocity, axis=0)).max() <= 200.0 * DT * (1 + 1e-6)  # braked
    assert np.array_equal(commands[-1], commands[-2])  # at rest, then silent
    assert controller.tick(now + 1.0).command is None


def test_a_trajectory_point_takes_the_time_the_limits_need():
    model = serial_arm()
    controller = IkController(make_settings(model), 0.0, command_period=None, feedback=False)
    far = model.tip_position(np.full(model.dof, 1.5))
    command = controller.on_target(0, Target(far), 0.0).command
    expected = time_to_reach(model.neutral(), command.position,
                             make_settings(model).motion)
    assert expected > 0.1 and controller.duration(command) == pytest.approx(expected)


def test_a_window_of_targets_on_a_tree_is_solved_once():
    model = two_legs()
    controller = IkController(make_settings(model, target_window=0.02), 0.0,
                              command_period=None, feedback=False)
    feet = model.effector_positions(model.neutral()) + [0.0, 0.0, 0.02]
    assert controller.on_target(0, Target(feet[0]), 0.0).command is None
    assert controller.on_target(1, Target(feet[1]), 0.005).command is None
    assert controller.solve_due == pytest.approx(0.02) and controller.solves == 0
    assert controller.solve_pending(0.02).command is not None
    assert controller.solves == 1 and np.array_equal(controller.solved_targets, feet)
    assert controller.solve_pending(0.03).command is None  # nothing is solved twice


# ---- the free body, solver settings ----------------------------------------------------

def free_legs(**values: object) -> tuple[Chain, IkController]:
    """Return two legs on a free body and a controller streaming their commands."""
    model = two_legs()
    return model, streaming(model, root='free', **values)


def test_a_free_body_slides_toward_a_far_target_within_max_body_velocity():
    """The body goes where the solver moved the root, in a straight line at its speed."""
    model, controller = free_legs(max_body_velocity=0.2)
    feet = model.effector_positions(model.neutral())  # both 1 m away: the body goes
    controller.on_target(0, Target(feet[0] + [1.0, 0.0, 0.1]), 0.0)
    controller.on_target(1, Target(feet[1] + [1.0, 0.0, 0.1]), 0.0)
    goal = controller.body_goal.copy()
    assert controller.result.reached and goal[0] > 0.7
    assert not np.any(controller.body), 'it moves with commands only: none yet'
    path = np.array([controller.tick(DT * (k + 1)) and controller.body.copy()
                     for k in range(600)])
    steps = np.linalg.norm(np.diff(np.vstack([np.zeros(3), path]), axis=0), axis=1)
    assert steps.max() <= 0.2 * DT * (1 + SLACK)
    assert np.array_equal(path[-1], goal)
    assert np.allclose(np.cross(path, goal), 0.0, atol=1e-12), 'a straight line'
    # The node reports the body, and each target in the odometry frame.
    assert controller.status(3.0, 1.0).values['body_position_m'] == \
        ', '.join(f'{x:.4f}' for x in goal)
    tips = model.effector_positions(controller.stream.position) + controller.body
    assert np.linalg.norm(tips[0] - controller.targets[0].position) == \
        pytest.approx(controller.result.errors[0], abs=1e-9)


@pytest.mark.parametrize('command_period', [DT, None])
def test_a_standing_foot_stays_on_its_target_while_the_body_slides(command_period):
    """
    Until the body reaches its goal the joints keep the feet on their targets from where it is.

    One foot sent far ahead pulls the body as far as the other (weighted) lets it. The joints
    used to take the goal's pose at once: the standing foot rode with the body, off its
    target by all the way the body had still to go.
    """
    model = Chain.from_parameters(2, [0.15], joint_type='two_axis', joint_limit=[2.0],
                                  max_velocity=8.0, legs=2, body_radius=0.1,
                                  base_link='base', tip_link=['foot0', 'foot1'])
    controller = IkController(make_settings(model, root='free', max_body_velocity=0.2,
                                            **{'effector_weights.foot1': 100.0}),
                              0.0, command_period=command_period, feedback=False)
    stand = model.effector_positions(model.neutral())[1] + [0.05, 0.0, -0.1]
    controller.on_target(1, Target(stand), 0.0)
    controller.on_target(0, Target([1.5, 0.0, -0.1]), 0.0)
    assert controller.body_goal[0] - controller.body[0] > 0.05, 'the body has a way to go'
    standing, ahead = [], []
    for k in range(200):
        controller.tick(DT * (k + 1))
        tips = model.effector_positions(controller.stream.goal) + controller.body
        standing.append(np.linalg.norm(tips[1] - stand))
        ahead.append(tips[0][0])
    assert np.array_equal(controller.body, controller.body_goal)
    # Never farther than the compromise at the goal (the far foot pulls the body on past
    # the standing foot's reach, weighed 1 to 100).
    compromise = controller.result.errors[1]
    assert max(standing) <= compromise + 1e-6 and compromise < 0.02
    assert np.all(np.diff(ahead) >= -1e-9), 'the far foot goes on reaching ahead'


def test_a_sliding_body_s_follow_solves_take_half_a_command_period_and_no_restarts(
        monkeypatch):
    """A body sliding at every tick must leave the node its time."""
    budgets = []
    solve = IkSolver.solve

    def recorded(solver, *args, **kwargs):
        if solver.root == 'pinned':
            budgets.append((kwargs.get('timeout'), solver.max_restarts))
        return solve(solver, *args, **kwargs)

    monkeypatch.setattr(IkSolver, 'solve', recorded)
    model, controller = free_legs(max_body_velocity=0.2)
    feet = model.effector_positions(model.neutral())
    controller.on_target(0, Target(feet[0] + [1.0, 0.0, 0.1]), 0.0)
    controller.on_target(1, Target(feet[1] + [1.0, 0.0, 0.1]), 0.0)
    run(controller, 0.0, 0.5)
    assert len(budgets) >= 40 and set(budgets) == {(DT / 2.0, 0)}


def test_a_weighted_foot_holds_its_target_while_the_body_slides():
    """effector_weights set the compromise: the heavy foot stays, the body goes."""
    model, controller = free_legs(**{'effector_weights.foot1': 100.0})
    feet = model.effector_positions(model.neutral())
    controller.on_target(0, Target(feet[0] + [1.0, 0.0, 0.0]), 0.0)
    update = controller.on_target(1, Target(feet[1] + [0.2, 0.0, 0.1]), 0.0)
    errors = controller.result.errors
    assert errors[1] < 0.02 * errors[0] and controller.body_goal[0] > 0.1
    assert update.warnings and 'out of reach' in update.warnings[0][1]
    values = controller.status(0.5, 1.0).values
    assert values['error_m.foot0'] == f'{errors[0]:.6f}'
    assert values['error_m.foot1'] == f'{errors[1]:.6f}'


def test_a_body_that_must_stop_stops_where_it_is():
    """Hold, disable and stale targets forget the body's goal too."""
    model, controller = free_legs(target_timeout=0.5)
    feet = model.effector_positions(model.neutral())
    controller.on_target(0, Target(feet[0] + [1.0, 0.0, 0.0]), 0.0)
    controller.tick(0.1)
    controller.hold(0.1)
    assert np.array_equal(controller.body_goal, controller.body)
    controller.on_target(0, Target(feet[0] + [1.0, 0.0, 0.0]), 0.2)
    controller.tick(0.3)
    moved = controller.body.copy()
    controller.tick(1.0)  # target_timeout: holding from here
    assert np.array_equal(controller.body, controller.body_goal)
    assert np.linalg.norm(controller.body - moved) <= 0.5 * 0.7 * (1 + SLACK)


def test_a_pinned_base_stays_and_reports_no_body():
    model = two_legs()
    controller = streaming(model)
    controller.on_target(0, Target(model.effector_positions(model.neutral())[0] * 3.0), 0.0)
    controller.tick(DT)
    assert not np.any(controller.body) and not np.any(controller.body_goal)
    assert 'body_position_m' not in controller.status(DT, 1.0).values


@pytest.mark.parametrize('values, message', [
    ({'root': 'floating'}, "root must be one of ['pinned', 'free']"),
    ({'solve_timeout': -1.0}, 'solve_timeout must be a finite number >= 0'),
    ({'max_body_velocity': math.inf}, 'max_body_velocity must be a finite number >= 0'),
    ({'effector_weights.hand': 2.0}, 'effector_weights.hand: unknown effector'),
    ({'effector_weights.foot0': -1.0}, 'effector_weights.foot0 must be a finite number'),
])
def test_unusable_solver_settings_are_refused_by_name(values, message):
    with pytest.raises(ValueError, match=message.replace('[', r'\[').replace(']', r'\]')):
        make_settings(two_legs(), **values)


def test_solver_settings_reach_the_solver():
    """solve_timeout (0: none), root and the weights set above 0 (0: the default)."""
    model = two_legs()
    solver = make_settings(model, solve_timeout=0.004, root='free',
                           **{'effector_weights.foot0': 3.0,
                              'effector_weights.foot1': 0.0}).solver()
    assert solver.timeout == 0.004 and solver.root == 'free'
    assert solver.effector_weights == {'foot0': 3.0}
    assert make_settings(model).solver().timeout is None


def test_diagnostics_report_no_reach_for_a_forgotten_target():
    """After a hold or a feedback gap no target is in force: nothing is reached."""
    model = serial_arm()
    controller = streaming(model, feedback=True)
    controller.on_feedback(model.joint_names, model.neutral().tolist(), 0.0)
    controller.on_target(0, Target(model.tip_position(model.neutral() + 0.1)), 0.0)
    assert controller.status(0.1, 1.0).values['reached'] is True
    controller.hold(0.1)
    values = controller.status(0.2, 1.0).values
    assert values['reached'] is False and 'error_m' not in values
    controller.on_target(0, Target(model.tip_position(model.neutral() + 0.1)), 0.2)
    controller.tick(2.0)  # feedback gap: forgotten
    controller.on_feedback(model.joint_names, (model.neutral() + 0.5).tolist(), 2.1)
    values = controller.status(2.2, 1.0).values
    assert values['reached'] is False and 'error_m' not in values
