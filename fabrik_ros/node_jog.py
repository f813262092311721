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
The IK node's velocity command topics, as MoveIt Servo names them, onto the controller's jog.

- ``~/delta_twist_cmds`` (geometry_msgs/TwistStamped, m/s and rad/s): a tool twist for the
  first effector; a tree also has ``~/<effector>/delta_twist_cmds`` per effector. The
  header's frame says whose axes the twist is in: the base link (or, with a free root, the
  odometry frame: the body only translates), the jogged effector's tip link, or any other
  frame tf2 knows (where tf2_ros is installed); an empty frame means the ``jog_frame``
  parameter, and an empty ``jog_frame`` the tool frame.
- ``~/delta_joint_cmds``: joint velocities by name, control_msgs/JointJog where
  control_msgs is installed (its ``velocities``; displacements are refused), else
  sensor_msgs/JointState (its ``name`` and ``velocity``), as with the PyPI wheels.
- ``~/status`` (std_msgs/Int8, latched): MoveIt Servo's status codes (fabrik_ros.jog.JogStatus),
  published when the status changes.

The ``jog_*`` parameters (ik_parameters) are read when a jogging starts; a command older
than ``jog_timeout`` is stale and the arm brakes to rest. Commands are refused with a
throttled warning, never moving a joint: before a chain, while disabled, without fresh
feedback or a command rate, for a frame with no transform, bad numbers or names.
"""

from collections.abc import Callable
import time

from fabrik_ros.chain import Chain
from fabrik_ros.controller import IkController, Update
from fabrik_ros.jog import JogSettings, JogStatus
from fabrik_ros.jog_step import DirectionFilter
from fabrik_ros.messages import stamp_age, TargetError
from fabrik_ros.target_frames import TargetFrames
from geometry_msgs.msg import TwistStamped
import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Int8

try:  # control_msgs comes with a ROS install but has no PyPI wheel
    from control_msgs.msg import JointJog
except ImportError:
    from sensor_msgs.msg import JointState as JointJog

# A late subscriber still gets the status in force.
STATUS_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


def joint_jog_velocities(msg: JointJog) -> dict[str, float]:
    """Return name -> velocity of a JointJog (or JointState); ValueError if unusable."""
    names = list(msg.joint_names if hasattr(msg, 'joint_names') else msg.name)
    velocities = list(msg.velocities if hasattr(msg, 'velocities') else msg.velocity)
    if not velocities and list(getattr(msg, 'displacements', [])):
        raise ValueError('joint jog displacements are not supported: send velocities')
    if len(names) != len(velocities):
        raise ValueError(f'joint jog has {len(names)} names but {len(velocities)} velocities')
    if len(set(names)) != len(names):
        raise ValueError(f'joint jog names a joint more than once: {names}')
    return dict(zip(names, map(float, velocities)))


def orientable(chain: Chain) -> bool:
    """Tell whether every effector has the six joints a tool twist's turning needs."""
    return bool(np.all(np.sum(chain.moves_effector, axis=1) >= 6))


class NodeJog:
    """The jog topics of one IK node; see the module docstring."""

    def __init__(self, node: Node, controller: Callable[[], IkController | None],
                 frames: TargetFrames, log: Callable[[str, str], None]) -> None:
        """Subscribe on `node`; `controller` returns the node's (None before a chain)."""
        self._node = node
        self._controller = controller
        self._frames = frames
        self._log = log
        self._effector_topics: set[str] = set()
        self._status_pub = node.create_publisher(Int8, '~/status', STATUS_QOS)
        self._published = int(JogStatus.NO_WARNING)
        self._status_pub.publish(Int8(data=self._published))
        node.create_subscription(TwistStamped, '~/delta_twist_cmds',
                                 lambda msg: self._on_twist(msg, 0), qos_profile_sensor_data)
        node.create_subscription(JointJog, '~/delta_joint_cmds', self._on_joint_jog,
                                 qos_profile_sensor_data)

    def on_model(self, model: Chain) -> None:
        """Subscribe a twist topic per effector of a tree (once per name)."""
        if len(model.effectors) < 2:
            return
        for index, name in enumerate(model.effector_names):
            if name not in self._effector_topics:
                self._effector_topics.add(name)
                self._node.create_subscription(
                    TwistStamped, f'~/{name}/delta_twist_cmds',
                    lambda msg, name=name: self._on_twist(msg, name), qos_profile_sensor_data)

    def publish_status(self) -> None:
        """Publish the jog status on ~/status if it changed (NO_WARNING at the start)."""
        controller = self._controller()
        status = int(JogStatus.NO_WARNING if controller is None else controller.jog.status)
        if status != self._published:
            self._published = status
            self._status_pub.publish(Int8(data=status))

    # ---- the topics ---------------------------------------------------------------------

    def _on_twist(self, msg: TwistStamped, effector: int | str) -> None:
        controller = self._ready()
        if controller is None:
            return
        model = controller.settings.chain
        if isinstance(effector, str):  # a tree's topic: the effector of that name
            if effector not in model.effector_names:
                self._refuse(controller, f'{effector} is no effector of the current chain')
                return
            effector = model.effector_names.index(effector)
        linear, angular = msg.twist.linear, msg.twist.angular
        twist = np.array([linear.x, linear.y, linear.z, angular.x, angular.y, angular.z])
        try:
            frame = self._frame(msg.header.frame_id or self._param('jog_frame'), model,
                                effector)
        except TargetError as error:
            self._refuse(controller, str(error))
            return
        age = stamp_age(msg.header.stamp, self._node.get_clock().now().nanoseconds)
        self._apply(controller.jog.on_twist(effector, twist, time.monotonic(), frame, age))

    def _on_joint_jog(self, msg: JointJog) -> None:
        controller = self._ready()
        if controller is None:
            return
        try:
            velocities = joint_jog_velocities(msg)
        except ValueError as error:
            self._refuse(controller, str(error))
            return
        age = stamp_age(msg.header.stamp, self._node.get_clock().now().nanoseconds)
        self._apply(controller.jog.on_joint_jog(velocities, time.monotonic(), age))

    # ---- internals --------------------------------------------------------------------

    def _param(self, name: str) -> object:
        return self._node.get_parameter(name).value

    def _ready(self) -> IkController | None:
        """Return the controller, its jog settings read if a jogging is to start."""
        controller = self._controller()
        if controller is None:
            self._log('jog', 'jog command refused, no motion: no chain yet (waiting for '
                             'robot_description)')
            return None
        if not controller.jog.active:
            controller.jog.settings = JogSettings(
                timeout=self._param('jog_timeout'),
                length_scale=self._param('jog_length_scale'),
                posture_gain=self._param('jog_posture_gain'),
                directions=DirectionFilter(self._param('jog_pass_condition')),
                track_orientation=controller.settings.orientation_mode == 'full'
                and orientable(controller.settings.chain))
        return controller

    def _frame(self, frame_id: str, model: Chain, effector: int) -> str | np.ndarray:
        """Return the jogger's frame of a header's frame_id (tf2 for any other frame)."""
        if not frame_id or frame_id == model.effector_names[effector]:
            return 'tool'
        if frame_id in (self._frames.base_link, self._frames.frame):
            return 'base'
        return self._frames.rotation_to_base(frame_id)

    def _refuse(self, controller: IkController, reason: str) -> None:
        controller.jog.refused += 1
        self._apply(controller.refuse('jog', reason))

    def _apply(self, update: Update) -> None:
        if update.refusal is not None:
            self._log('jog', f'jog command refused, no motion: {update.refusal[1]}')
