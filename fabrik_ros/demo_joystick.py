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
The demo's joystick: the jogging phase (fabrik_ros.demo_jog) over ROS, as a user drives it.

JoystickNode brings the arm to the ready pose with joint jogs on
``ik_node/delta_joint_cmds`` (a proportional step toward it per message; so does the
script's joint segment), then plays the scripted joystick on
``ik_node/delta_twist_cmds`` at JOG_RATE in the base frame, and scores the node's
``joint_commands`` and ``ik_node/status`` meanwhile; fabrik_ros.demo starts the nodes.
"""

from collections.abc import Callable
import time

from fabrik_ros.chain import Chain
from fabrik_ros.demo_jog import (JOG_RATE, JOG_READY, JogScore, JogScript, JOINT_SEGMENTS,
                                 SEGMENTS)
from fabrik_ros.node_jog import JointJog, STATUS_QOS
from geometry_msgs.msg import TwistStamped
import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Int8

READY_TOLERANCE = 2e-3  # rad, every joint, before the stick takes over
READY_GAIN = 2.0  # 1/s of the joint jog toward the ready pose
READY_SPEED = 0.6  # rad/s at most per joint
READY_TIMEOUT = 15.0  # s


class JoystickNode(Node):
    """Drive ik_node with velocity commands and score what it commands."""

    def __init__(self, chain: Chain, max_velocity: np.ndarray) -> None:
        """Wire the jog publishers and the command, state and status subscriptions."""
        super().__init__('fabrik_joystick')
        self.chain, self.script = chain, JogScript(chain)
        self.score = JogScore(chain, max_velocity)
        self._index = {name: i for i, name in enumerate(chain.joint_names)}
        self.commanded: np.ndarray | None = None
        self.measured: np.ndarray | None = None
        self.start: float | None = None  # monotonic s when the stick starts
        self.twist: np.ndarray | None = None  # in force
        self._twist_pub = self.create_publisher(TwistStamped, 'ik_node/delta_twist_cmds', 10)
        self._joint_pub = self.create_publisher(JointJog, 'ik_node/delta_joint_cmds', 10)
        self.create_subscription(JointState, 'joint_commands', self._on_command, 10)
        self.create_subscription(JointState, 'joint_states', self._on_state, 10)
        self.create_subscription(Int8, 'ik_node/status', self._on_status, STATUS_QOS)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)

    def _vector(self, msg: JointState, field: str) -> np.ndarray | None:
        values = getattr(msg, field)
        if len(values) != len(msg.name) or not self._index.keys() <= set(msg.name):
            return None
        lookup = dict(zip(msg.name, values))
        return np.array([lookup[name] for name in self.chain.joint_names])

    def _t(self) -> float:
        return time.monotonic() - self.start

    def _on_command(self, msg: JointState) -> None:
        q, velocity = self._vector(msg, 'position'), self._vector(msg, 'velocity')
        if q is None:
            return
        self.commanded = q
        if self.start is not None and velocity is not None:
            t = self._t()
            self.score.command(t, self.script.segment(t), self.twist, q, velocity)

    def _on_state(self, msg: JointState) -> None:
        self.measured = self._vector(msg, 'position')

    def _on_status(self, msg: Int8) -> None:
        if self.start is not None:
            self.score.status(self.script.segment(self._t()), msg.data)

    def wait(self, seconds: float) -> None:
        """Handle incoming messages for ``seconds``."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0.0:
            self._executor.spin_once(timeout_sec=remaining)

    def wait_for_node(self, alive: Callable[[], bool], timeout: float) -> None:
        """Wait until ik_node takes jog commands and the arm is measured."""
        started = time.monotonic()
        while not (self.measured is not None and self._twist_pub.get_subscription_count()
                   and self._joint_pub.get_subscription_count()):
            if not alive():
                raise RuntimeError('a node died while starting')
            if time.monotonic() - started > timeout:
                raise RuntimeError(f'the nodes did not come up within {timeout:g} s')
            self.wait(0.1)

    def go_ready(self) -> None:
        """Joint-jog to JOG_READY, then let the jog go stale and the arm come to rest."""
        started = time.monotonic()
        while time.monotonic() - started < READY_TIMEOUT and self.toward_ready():
            self.wait(1.0 / JOG_RATE)
        self.wait(0.5)

    def toward_ready(self) -> bool:
        """Send one joint jog toward JOG_READY; False (nothing sent) once there."""
        q = self.commanded if self.commanded is not None else self.measured
        error = JOG_READY - q
        if np.max(np.abs(error)) < READY_TOLERANCE:
            return False
        velocity = np.clip(READY_GAIN * error, -READY_SPEED, READY_SPEED)
        msg = JointJog()
        msg.header.stamp = self.get_clock().now().to_msg()
        names = list(self.chain.joint_names)
        if hasattr(msg, 'joint_names'):
            msg.joint_names, msg.velocities = names, velocity.tolist()
        else:
            msg.name, msg.velocity = names, velocity.tolist()
        self._joint_pub.publish(msg)
        return True

    def play(self, alive: Callable[[], bool]) -> None:
        """Play the scripted joystick at JOG_RATE, then its silence."""
        self.start = time.monotonic()
        while (t := self._t()) < self.script.duration:
            if not alive():
                raise RuntimeError('a node died')
            segment = self.script.segment(t)
            twist = self.script.twist(t, self.commanded)
            if segment is None and self.score.stopped_at is None:
                self.score.stopped_at = t
            self.twist = twist
            if segment is not None and SEGMENTS[segment][0] in JOINT_SEGMENTS:
                self.toward_ready()
            elif twist is not None:
                msg = TwistStamped()
                msg.header.stamp = self.get_clock().now().to_msg()
                msg.header.frame_id = self.chain.base_link
                (msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z,
                 msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z) = map(
                    float, twist)
                self._twist_pub.publish(msg)
            self.wait(1.0 / JOG_RATE)
