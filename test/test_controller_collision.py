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
Collisions in the command stream: the safety contract among random obstacles.

Specification (docs/safety.md, rule 10): every command keeps each checked pair at least
min(collision_margin, c0) apart, c0 the clearance of the command before, and the straight
joint motion between two commands at least min(collision_margin, c0 - 0.5 mm): a clear
stream never comes closer than the margin, an arm already closer (an obstacle put on it)
never gets closer, and it may always move away. Checked against the clearance sampled
densely along every motion, not against the controller's own bound, while obstacles
arrive, move (onto the arm too) and go, among every event of the contract. Within
collision_slowdown_distance the joints that approach slow down, the others keep their
speed; the status names the pair. Time is an argument: no test sleeps.
"""

import math

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.collision import Box, CollisionModel, Cylinder, Sphere
from fabrik_ros.controller import IkController, Target
from fabrik_ros.ik import IkSolver
from fabrik_ros.jog import JogStatus
from hypothesis import event, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule
import numpy as np
import pytest
from test_controller import ControllerContract, DT, make_settings, serial_arm, twists

MARGIN = 0.01   # m, BASE's collision_margin
DIP = 0.0005    # m, how far the motion between commands may dip below where it starts
SAMPLES = 33    # clearance samples along a motion that could come near
TOLERANCE = 1e-9


def rotation(yaw: float, tilt: float) -> np.ndarray:
    """Return a (4, 4) pose turned by yaw about z, then tilt about x (no translation)."""
    cz, sz, cx, sx = math.cos(yaw), math.sin(yaw), math.cos(tilt), math.sin(tilt)
    pose = np.eye(4)
    pose[:3, :3] = np.array([[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]]) @ np.array(
        [[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]])
    return pose


def obstacle(kind: str, centre: np.ndarray, size: float, thin: bool, yaw: float,
             tilt: float):
    """Return a sphere, a box (a thin plate when `thin`) or a cylinder at `centre`."""
    pose = rotation(yaw, tilt)
    pose[:3, 3] = centre
    if kind == 'sphere':
        return Sphere(size, center=tuple(centre))
    if kind == 'box':
        return Box((2.0 * size, 1.5 * size, 0.002 if thin else size), pose)
    return Cylinder(0.004 if thin else size / 2.0, 3.0 * size, pose)


class Clearance:
    """The clearance the stream keeps (links against obstacles), sampled independently."""

    def __init__(self, chain: Chain) -> None:
        """Keep the chain's link capsules and a crude bound of how far they reach."""
        self.chain = chain
        self.model = CollisionModel(chain.collision.bodies, ())  # self-collision is off
        extent = max(max(np.linalg.norm(body.start), np.linalg.norm(body.end)) + body.radius
                     for body in self.model.bodies)
        self.reach = sum(np.linalg.norm(joint.origin_xyz) for joint in chain.joints) + extent

    def at(self, q: np.ndarray, obstacles: list) -> float:
        return self.model.min_distance(self.chain.world_frames(q), obstacles)

    def along(self, start: np.ndarray, end: np.ndarray, obstacles: list
              ) -> tuple[float, float, float]:
        """Return the clearance at start, at end and the least sampled along the motion."""
        first, last = self.at(start, obstacles), self.at(end, obstacles)
        # Any point of the motion lies within half its length (in this crude reach) of one
        # end: far from everything, nothing between can come near.
        length = float(np.abs(end - start).sum()) * self.reach
        if (first + last - length) / 2.0 > min(first, last, MARGIN) or not obstacles:
            return first, last, min(first, last)
        samples = [self.at(start + t * (end - start), obstacles)
                   for t in np.linspace(0.0, 1.0, SAMPLES)[1:-1]]
        return first, last, min([first, last, *samples])


class ObstacleContract(ControllerContract):
    """The safety contract with obstacles arriving, moving (onto the arm too) and going."""

    @initialize(tree=st.booleans(), streaming=st.booleans(), feedback=st.booleans(),
                window=st.sampled_from([0.0, 0.02]), timeout=st.sampled_from([0.0, 0.5]),
                max_step=st.sampled_from([math.inf, 0.05]),
                slowdown=st.sampled_from([0.0, 0.1]))
    def start(self, tree, streaming, feedback, window, timeout, max_step, slowdown):
        super().start(tree, streaming, feedback, window, timeout, max_step, 'pinned')
        self.values['collision_slowdown_distance'] = slowdown
        self.settings = make_settings(self.model, **self.values)
        self.controller.configure(self.settings)
        self.obstacles: list = []
        self.clearances = {}

    def clearance(self) -> Clearance:
        """Return the reference clearance of the model in force."""
        key = id(self.model)
        if key not in self.clearances:
            self.clearances[key] = Clearance(self.model)
        return self.clearances[key]

    def check_command(self, update) -> None:
        previous = self.previous
        super().check_command(update)
        if update.command is None or previous is None or previous.shape != \
                update.command.position.shape:
            return
        start, end, least = self.clearance().along(previous, update.command.position,
                                                   self.obstacles)
        if start < MARGIN:
            event('a command from closer than the margin')
        assert end >= min(MARGIN, start) - TOLERANCE, \
            f'a command came closer: {start:.5f} m -> {end:.5f} m'
        assert least >= min(MARGIN, start - DIP) - TOLERANCE, \
            f'the motion between two commands passed {least:.5f} m from an obstacle ' \
            f'(from {start:.5f} m to {end:.5f} m)'
        collision = self.controller.collision
        if collision.active:    # what it reports: measured, else a lower bound (its planes')
            assert collision.clearance <= end + TOLERANCE, \
                f'the check said {collision.clearance:.5f} m, the command is {end:.5f} m clear'
            if not collision.exact:
                event('a bound reported')
        if self.controller.collision.cut:
            event('a collision stop')
        if self.controller.collision.state:
            event(f'stream {self.controller.collision.state}')
        if self.controller.jog.status in (JogStatus.DECELERATE_FOR_COLLISION,
                                          JogStatus.HALT_FOR_COLLISION):
            event(f'jog status {self.controller.jog.status.name}')

    def arm_point(self, index: int) -> np.ndarray:
        """Return a joint origin or effector of the arm where it is commanded (or neutral)."""
        q = self.previous if self.previous is not None else self.model.neutral()
        points = np.concatenate([self.model.joint_positions(q),
                                 self.model.effector_positions(q)])
        return points[index % len(points)]

    @rule(kind=st.sampled_from(['sphere', 'box', 'cylinder']), at=st.integers(0, 9),
          offset=st.tuples(*[st.floats(-0.15, 0.15)] * 3), size=st.floats(0.01, 0.08),
          thin=st.booleans(), yaw=st.floats(-3.2, 3.2), tilt=st.floats(-1.6, 1.6))
    def add_obstacle(self, kind, at, offset, size, thin, yaw, tilt):
        """Put an obstacle near the arm, or on it (an offset under its size)."""
        if len(self.obstacles) >= 4:
            self.obstacles.pop(0)
        centre = self.arm_point(at) + np.array(offset)
        self.obstacles.append(obstacle(kind, centre, size, thin, yaw, tilt))
        self.controller.set_obstacles(self.obstacles)

    @rule(index=st.integers(0, 3), at=st.integers(0, 9), onto=st.booleans(),
          offset=st.tuples(*[st.floats(-0.05, 0.05)] * 3))
    def move_obstacle(self, index, at, onto, offset):
        """Move an obstacle by a few centimetres, or onto the arm."""
        if not self.obstacles:
            return
        index %= len(self.obstacles)
        moved = self.obstacles[index]
        centre = (self.arm_point(at) if onto else self.centre(moved)) + np.array(offset)
        if isinstance(moved, Sphere):
            moved = Sphere(moved.radius, center=tuple(centre))
        else:
            pose = moved.pose.copy()
            pose[:3, 3] = centre
            moved = Box(moved.size_xyz, pose) if isinstance(moved, Box) \
                else Cylinder(moved.radius, moved.length, pose)
        self.obstacles[index] = moved
        self.controller.set_obstacles(self.obstacles)

    @rule(effector=st.integers(0, 1), xyz=st.tuples(*[st.floats(-0.45, 0.45)] * 3),
          kind=st.sampled_from(['sphere', 'box', 'cylinder']), size=st.floats(0.01, 0.06),
          thin=st.booleans(), yaw=st.floats(-3.2, 3.2), tilt=st.floats(-1.6, 1.6),
          count=st.integers(1, 40))
    def obstacle_in_the_way(self, effector, xyz, kind, size, thin, yaw, tilt, count):
        """Put an obstacle halfway to a target, take the target and stream toward it."""
        effector %= len(self.live)
        tip = self.arm_point(self.model.dof + effector)
        centre = (tip + np.array(xyz)) / 2.0
        if len(self.obstacles) >= 4:
            self.obstacles.pop(0)
        self.obstacles.append(obstacle(kind, centre, size, thin, yaw, tilt))
        self.controller.set_obstacles(self.obstacles)
        self.target(effector, xyz, None)
        for _ in range(count):
            self.advance(DT)

    @rule(effector=st.integers(0, 1), twist=twists, kind=st.sampled_from(['sphere', 'box']),
          size=st.floats(0.01, 0.06), ahead=st.floats(0.02, 0.2), count=st.integers(1, 40))
    def jog_into_an_obstacle(self, effector, twist, kind, size, ahead, count):
        """Put an obstacle ahead of a tool twist, then stream the twist."""
        effector %= len(self.live)
        tip = self.arm_point(self.model.dof + effector)
        speed = float(np.linalg.norm(twist[:3]))
        direction = twist[:3] / speed if speed > 1e-6 else np.array([1.0, 0.0, 0.0])
        if len(self.obstacles) >= 4:
            self.obstacles.pop(0)
        self.obstacles.append(obstacle(kind, tip + (ahead + size) * direction, size, False,
                                       0.0, 0.0))
        self.controller.set_obstacles(self.obstacles)
        self.twist_stream(effector, twist, 'base', None, count)

    @staticmethod
    def centre(shape) -> np.ndarray:
        return np.array(shape.center) if isinstance(shape, Sphere) else shape.pose[:3, 3]

    @rule(everything=st.booleans())
    def remove_obstacle(self, everything):
        if self.obstacles:
            self.obstacles = [] if everything else self.obstacles[1:]
            self.controller.set_obstacles(self.obstacles)

    @invariant()
    def the_status_names_what_holds_the_stream(self):
        collision = getattr(self, 'controller', None) and self.controller.collision
        if collision and collision.state:
            assert collision.pair[1].startswith('obstacle')
            assert collision.describe().startswith(collision.state)


ObstacleContract.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None)
test_the_safety_contract_holds_among_random_obstacles = pytest.mark.filterwarnings(
    'error::RuntimeWarning')(ObstacleContract.TestCase)


# ---- what the rule looks like, case by case ----------------------------------------------

def streaming(obstacles: list, command_period: float | None = DT, **values: object
              ) -> IkController:
    """Return the serial arm's controller (open loop, at neutral: along x) among obstacles."""
    controller = IkController(make_settings(serial_arm(), **values), 0.0,
                              command_period=command_period, feedback=False)
    controller.set_obstacles(obstacles)
    return controller


def ticks(controller: IkController, count: int, start: float = 0.0) -> np.ndarray:
    """Tick `count` times from `start`; return the (count + 1, n) commands, the first too."""
    path = [controller.stream.position.copy()]
    path += [controller.tick(start + DT * (k + 1)).command.position for k in range(count)]
    return np.array(path)


def least_along(path: np.ndarray, obstacles: list) -> float:
    """Return the least clearance sampled densely along each motion of a path of commands."""
    reference = Clearance(serial_arm())
    return min(reference.along(start, end, obstacles)[2] for start, end in zip(path, path[1:]))


# A sphere the straight joint motion from neutral to the answer sweeps the arm through.
IN_THE_SWEEP = [Sphere(0.05, center=(0.25, 0.25, 0.0))]
BEYOND_IT = np.array([0.0, 0.39, 0.05])


@pytest.mark.parametrize('slowdown', [0.1, 0.0])
def test_a_stream_toward_a_clear_answer_stops_at_the_margin_and_says_why(slowdown):
    """The answer is clear, the way there is not: the arm halts one margin from the sphere."""
    controller = streaming(IN_THE_SWEEP, collision_slowdown_distance=slowdown)
    controller.on_target(0, Target(BEYOND_IT), 0.0)
    assert controller.result.reached and controller.result.clearance > MARGIN
    path = ticks(controller, 150)
    assert least_along(path, IN_THE_SWEEP) >= MARGIN - TOLERANCE
    assert Clearance(serial_arm()).at(path[-1], IN_THE_SWEEP) < MARGIN + 1e-3  # at it
    status = controller.status(1.5, 1.0)
    assert status.level == 'WARN'
    assert status.message == ('stream halted by a collision check: seg2_pitch_link and '
                              'obstacle 0 (sphere) 0.0100 m apart (collision_margin 0.01 m)')
    assert status.values['stream_collision'] == 'halted'
    assert status.values['stream_closest_pair'] == 'seg2_pitch_link - obstacle 0 (sphere)'


def test_the_status_names_an_obstacle_by_its_scene_name():
    """Obstacles handed over with names (the node's scene, markers' ns/id) go by them."""
    controller = streaming([])
    controller.set_obstacles(IN_THE_SWEEP, ['pillar'])
    controller.on_target(0, Target(BEYOND_IT), 0.0)
    ticks(controller, 150)
    status = controller.status(1.5, 1.0)
    assert status.message.startswith('stream halted by a collision check: seg2_pitch_link '
                                     'and pillar ')
    assert status.values['stream_closest_pair'] == 'seg2_pitch_link - pillar'


def test_slowing_down_in_time_keeps_the_acceleration_limit():
    """With the slowdown, the arm brakes to the margin within its limits: no collision stop."""
    controller = streaming(IN_THE_SWEEP)
    controller.on_target(0, Target(BEYOND_IT), 0.0)
    stops = []
    for k in range(200):
        controller.tick(DT * (k + 1))
        stops.append(controller.collision.cut)
    assert not any(stops)
    path = ticks(controller, 1, 2.0)
    assert np.array_equal(path[0], path[1])  # standing at the margin


def test_far_from_every_obstacle_the_stream_is_exactly_as_without_one():
    """Beyond the slowdown distance nothing changes: the same commands, bit for bit."""
    far = [Box((0.2, 0.2, 0.2), np.diag([1.0, 1.0, 1.0, 1.0]) + np.pad(
        np.array([[2.0], [0.0], [0.0]]), ((0, 1), (3, 0))))]
    paths = []
    for obstacles in ([], far):
        controller = streaming(obstacles)
        controller.on_target(0, Target(BEYOND_IT), 0.0)
        paths.append(ticks(controller, 100))
    assert np.array_equal(*paths)


def test_a_jump_without_a_command_rate_does_not_pass_through_a_thin_plate():
    """One command per solution: the jump stops where the motion would cross a 2 mm plate."""
    pose = np.eye(4)
    pose[:3, 3] = (0.28, 0.15, 0.0)
    plate = [Box((0.3, 0.002, 0.3), pose)]   # across the sweep, clear of the answer
    controller = streaming(plate, command_period=None)
    update = controller.on_target(0, Target(np.array([0.0, 0.39, 0.0])), 0.0)
    assert controller.result.reached
    path = np.array([controller.stream.goal * 0.0 + serial_arm().neutral(),
                     update.command.position])
    assert least_along(path, plate) >= MARGIN - TOLERANCE
    assert controller.collision.cut
    assert not np.allclose(update.command.position, controller.result.q)


def test_an_arm_inside_the_margin_may_move_away_but_never_closer():
    """An obstacle put on the arm: a joint jog into it halts, one out of it moves on."""
    pose = np.eye(4)
    pose[:3, 3] = (0.3, 0.0, 0.02)      # on the forearm: touching it
    on_arm = [Box((0.1, 0.1, 0.02), pose)]
    reference = Clearance(serial_arm())
    controller = streaming(on_arm)
    start = reference.at(controller.stream.position, on_arm)
    assert start < MARGIN
    pitch = serial_arm().joint_names[1]
    now = 0.0
    for sign, closer in ((-1.0, True), (1.0, False)):   # -pitch lifts the arm: closer
        path = [controller.stream.position.copy()]
        for _ in range(30):
            now += DT
            controller.jog.on_joint_jog({pitch: sign * 2.0}, now)
            path.append(controller.tick(now).command.position)
        clearances = [reference.at(q, on_arm) for q in path]
        if closer:
            assert min(clearances) >= start - TOLERANCE
            assert controller.jog.status == JogStatus.HALT_FOR_COLLISION
            assert 'halt_for_collision' in controller.status(now, 1.0).message
        else:
            assert clearances[-1] > MARGIN and np.all(np.diff(clearances) >= -TOLERANCE)
        assert least_along(np.array(path), on_arm) >= min(MARGIN, start - DIP) - TOLERANCE


def test_only_the_joints_that_approach_slow_down():
    """Near a sphere above the tip, lifting slows down; turning about the base does not."""
    above = [Sphere(0.03, center=(0.4, 0.0, 0.09))]   # 5 cm above the tip
    yaw, pitch = serial_arm().joint_names[:2]
    speeds = {}
    for lift in (0.0, -1.0):    # -pitch lifts the tip toward the sphere
        controller = streaming(above)
        for k in range(5):
            controller.jog.on_joint_jog({yaw: 1.0, pitch: lift}, DT * (k + 1))
            command = controller.tick(DT * (k + 1)).command
        speeds[lift] = command.velocity
    assert speeds[0.0][:2] == pytest.approx([1.0, 0.0])  # turning alone: full speed
    assert speeds[-1.0][0] == pytest.approx(1.0)   # turning while lifting: full speed too
    assert -0.5 < speeds[-1.0][1] < 0.0            # lifting toward it: slowed, not stopped
    assert controller.jog.status == JogStatus.DECELERATE_FOR_COLLISION
    assert controller.status(5 * DT, 1.0).values['stream_collision'] == 'slowed'


def test_a_real_arm_jogged_into_itself_stops_a_margin_short():
    """The Panda with its hand (SRDF pairs): folding the elbow stops before link 2 meets 5."""
    descriptions = pytest.importorskip('test_collision_descriptions')
    chain = descriptions.panda_with_hand()
    controller = IkController(make_settings(chain), 0.0, command_period=DT, feedback=False)
    controller.stream.start(descriptions.NEUTRAL['panda with hand'])
    elbow = chain.joint_names[3]
    path = [controller.stream.position.copy()]
    for k in range(300):
        controller.jog.on_joint_jog({elbow: -1.0}, DT * (k + 1))
        path.append(controller.tick(DT * (k + 1)).command.position)
    path = np.array(path)
    assert path[-1][3] - path[0][3] < -0.3      # it folded a good part of the way
    least = min(chain.clearance(start + t * (end - start))
                for start, end in zip(path, path[1:]) for t in np.linspace(0.0, 1.0, 5))
    assert MARGIN - TOLERANCE <= least < MARGIN + 0.003  # slowing down to it, never past
    assert controller.collision.pair == ('panda_link2', 'panda_link5')
    assert controller.jog.status in (JogStatus.DECELERATE_FOR_COLLISION,
                                     JogStatus.HALT_FOR_COLLISION)


def test_a_jog_pushed_on_into_an_obstacle_it_rests_at_is_held_not_stopped_each_command():
    """At rest at the margin, a jog into the sphere halts by the slowdown: one stop at most."""
    yaw = serial_arm().joint_names[0]
    controller = streaming(IN_THE_SWEEP)
    controller.on_target(0, Target(BEYOND_IT), 0.0)
    path = list(ticks(controller, 200))
    stops, now = 0, 2.0
    for _ in range(50):     # +yaw turns the arm into the sphere
        now += DT
        controller.jog.on_joint_jog({yaw: 1.0}, now)
        path.append(controller.tick(now).command.position)
        stops += controller.collision.cut
    assert stops <= 1   # the first command, before the jog has a velocity to slow
    assert least_along(np.array(path), IN_THE_SWEEP) >= MARGIN - TOLERANCE
    assert controller.jog.status == JogStatus.HALT_FOR_COLLISION


def test_a_slowdown_distance_that_is_no_distance_is_refused_by_name():
    with pytest.raises(ValueError, match='collision_slowdown_distance'):
        make_settings(serial_arm(), collision_slowdown_distance=-0.1)


# Two links whose collision meshes name a package that is not installed (as a driver's
# description does on a machine without its description package).
MISSING_MESHES = """<robot name="missing">
  <link name="base"/>
  <link name="upper"><collision><geometry>
    <mesh filename="package://not_installed_description/meshes/upper.stl"/>
  </geometry></collision></link>
  <link name="lower"><collision><geometry>
    <mesh filename="package://not_installed_description/meshes/lower.stl"/>
  </geometry></collision></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="upper"/><child link="lower"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
  <joint name="tool" type="fixed"><parent link="lower"/><child link="tip"/>
    <origin xyz="0.3 0 0"/></joint>
</robot>"""


def test_geometry_that_cannot_be_read_is_tried_once_and_named_on_every_use(monkeypatch):
    import fabrik_ros.model.chain as chain_module
    builds = []
    build = chain_module.collision_model
    monkeypatch.setattr(chain_module, 'collision_model',
                        lambda *args: builds.append(1) or build(*args))
    chain = Chain.from_urdf(MISSING_MESHES, 'base', 'tip')
    for _ in range(2):
        with pytest.raises(ChainError, match="package 'not_installed_description' is not "
                                             'found'):
            chain.collision
    assert len(builds) == 1


def test_self_collision_off_for_unreadable_geometry_is_a_warning_not_a_silence():
    """The arm still moves (obstacles are checked), and the diagnostics say what is off."""
    chain = Chain.from_urdf(MISSING_MESHES, 'base', 'tip')
    controller = IkController(make_settings(chain), 0.0, command_period=DT, feedback=False)
    status = controller.status(0.0, 1.0)     # from the start, not from the first command
    assert status.level == 'WARN'
    assert status.message == 'waiting for a target; self-collision off'
    assert status.values['self_collision'] == IkSolver(chain).collision_status
    assert "self-collision off: link 'upper' collision geometry: package " \
        "'not_installed_description' is not found" in status.values['self_collision']


def test_self_collision_turned_off_by_the_user_is_not_a_warning():
    chain = Chain.from_urdf(MISSING_MESHES, 'base', 'tip')
    controller = IkController(make_settings(chain, self_collision=False), 0.0,
                              command_period=DT, feedback=False)
    status = controller.status(0.0, 1.0)
    assert (status.level, status.message) == ('OK', 'waiting for a target')
    assert 'self_collision' not in status.values
