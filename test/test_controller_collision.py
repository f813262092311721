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

from fabrik_ros.chain import Chain
from fabrik_ros.collision import Box, CollisionModel, Cylinder, Sphere
from fabrik_ros.jog import JogStatus
from hypothesis import event, HealthCheck, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule
import numpy as np
import pytest
from test_controller import ControllerContract, DT, make_settings, twists

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
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_the_safety_contract_holds_among_random_obstacles = pytest.mark.filterwarnings(
    'error::RuntimeWarning')(ObstacleContract.TestCase)
