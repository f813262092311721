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
IK node: target poses in, joint commands out, solved with FABRIK.

Try it:
    ros2 run fabrik_ros ik_node --ros-args --params-file config/arm.yaml \
        -p joint_command_topic:=joint_states
    ros2 topic pub --once target_pose geometry_msgs/msg/PoseStamped \
        "{header: {frame_id: base_link},
          pose: {position: {x: 0.3, z: 0.4}, orientation: {x: 1.0, w: 0.0}}}"  # tool down

The node maps parameters, topics, services and timers onto an IkController
(fabrik_ros.controller), which decides everything else: targets, enable/disable/hold,
watchdogs, a tree's target window and the command stream, within the joint limits.
With `root: free` it also publishes where the body went: TF odom_frame -> base_link on
/tf (as tf2_ros's TransformBroadcaster does) and ~/body_pose.

PoseStamped targets are full poses (orientation_mode says what their orientation fixes);
a quaternion that is not unit is normalised, a zero, NaN/inf or overflowing one refused.
PointStamped targets and RViz's 2D Goal Pose (a heading on the ground, not a tool
orientation) are positions only. With rviz_targets, an interactive marker per
effector (fabrik_ros.target_markers, where interactive_markers is installed) is a target
to drag in six degrees of freedom. Velocity commands (~/delta_twist_cmds, ~/delta_joint_cmds,
~/status, as MoveIt Servo's) are fabrik_ros.node_jog's.
"""

import math
import time

from diagnostic_msgs.msg import DiagnosticArray
from fabrik_ros.chain import Chain
from fabrik_ros.controller import IkController, Status, Target, Update
from fabrik_ros.description_loader import DescriptionLoader
from fabrik_ros.ik_parameters import (check_start, declare_node_parameters,
                                      name_or_type_refusal, NODE_PARAMETERS, TIMER_RATES)
from fabrik_ros.messages import (branch_paths, controller_markers, diagnostic_array,
                                 point_array, pose_message, quaternion_array, stamp_age,
                                 TargetError)
from fabrik_ros.node_jog import NodeJog
from fabrik_ros.node_main import run_node
from fabrik_ros.node_model import NodeModel
from fabrik_ros.node_obstacles import NodeObstacles
from fabrik_ros.outputs import BodyOutputs, CommandOutputs
from fabrik_ros.settings import Settings
from fabrik_ros.target_frames import TargetFrames
from fabrik_ros.target_markers import TargetMarkers
from geometry_msgs.msg import PointStamped, PoseStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.expand_topic_name import expand_topic_name
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.publisher import Publisher
from rclpy.qos import (DurabilityPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String
from std_srvs.srv import SetBool, Trigger
from visualization_msgs.msg import MarkerArray

try:
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:     # Humble: the same class under its older module name
    from rclpy.qos_event import PublisherEventCallbacks

DIAGNOSTICS_PERIOD = 1.0  # seconds
WARNING_THROTTLE = 2.0  # seconds between repeats of one kind of warning
# Target topics keep one message: a newer target replaces an unsolved one (no backlog).
TARGET_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# Like robot_state_publisher: late joiners still get the last description.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


class IkNode(Node):
    """Solve every target with FABRIK and publish joint commands, safely."""

    def create_publisher(self, *args, **kwargs) -> Publisher:
        """
        Create a publisher without rclpy's default QoS event handlers.

        Each handler is a waitable that rclpy's executor goes through in Python on every
        wake-up, costing more CPU per target than the solve (docs/benchmarks.md, the node).
        The subscriber on the other end of a QoS mismatch still reports it, as rclpy's and
        rclcpp's subscribers do by default; the node's own subscriptions keep theirs.
        """
        kwargs.setdefault('event_callbacks', PublisherEventCallbacks(use_default_callbacks=False))
        return super().create_publisher(*args, **kwargs)

    def __init__(self, **kwargs) -> None:
        """Declare parameters, wire topics and services, load the chain (or wait for it)."""
        self._target_markers: TargetMarkers | None = None  # destroy_node may come early
        super().__init__('ik_node', **kwargs)
        declare_node_parameters(self)
        param = self._param
        self._base_link = param('base_link')
        self._free = param('root') == 'free'
        self._odom_frame = param('odom_frame')
        self._feedback_topic = param('feedback_topic')
        command_topic = param('joint_command_topic')
        outputs = set(param('outputs'))
        check_start({name: param(name) for name in NODE_PARAMETERS},
                    bool(self._feedback_topic) and 'joint_state' in outputs and len(
                        {expand_topic_name(topic, self.get_name(), self.get_namespace())
                         for topic in (command_topic, self._feedback_topic)}) == 1)
        self._refusal_logged: dict[str, float] = {}  # kind of message -> monotonic seconds
        self._collision_warning = ''   # the last reason self-collision is off, logged once
        self._effector_topics: set[str] = set()
        self._rviz_targets = param('rviz_targets')
        self._frames = TargetFrames(self, self._base_link, self._odom_frame, self._free)

        self._commands = CommandOutputs(self, outputs, command_topic)
        self._body = BodyOutputs(self, self._odom_frame, self._base_link) if self._free else None
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._jog = NodeJog(self, lambda: self._controller, self._frames, self._log)

        self.create_subscription(PoseStamped, 'target_pose', self._on_pose, TARGET_QOS)
        if self._rviz_targets:
            self.create_subscription(PoseStamped, 'goal_pose', self._on_goal_pose, TARGET_QOS)
            self.create_subscription(PointStamped, 'clicked_point', self._on_point, TARGET_QOS)
        if self._feedback_topic:
            self.create_subscription(JointState, self._feedback_topic, self._on_feedback,
                                     qos_profile_sensor_data)
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_service(Trigger, '~/hold', self._on_hold)
        # A tree's target window: a one-shot timer (rclpy has none, so it cancels itself).
        self._window_timer = self.create_timer(1.0, self._on_window)
        self._window_timer.cancel()
        rate = param('command_rate')
        self._period = 1.0 / rate if rate > 0.0 else None  # seconds between commands
        self._robot = NodeModel(self, self._period, bool(self._feedback_topic), self._apply,
                                self._on_model)
        self._obstacles = NodeObstacles(self, self._frames, lambda: self._controller)
        self._rate_timers = {}
        self._restart_timers({})
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        chain = self._robot.from_parameters()
        if chain is None:
            self.get_logger().info('no chain in the parameters: waiting for robot_description')
            self._loader = DescriptionLoader(self, self._robot.from_urdf, self._robot.adopt)
            self.create_subscription(String, 'robot_description', self._on_description,
                                     DESCRIPTION_QOS)
        else:
            self._robot.use(chain)

    def destroy_node(self) -> None:
        """Take the draggable targets out of RViz first, while the node can still say so."""
        if self._target_markers is not None:
            self._target_markers.shutdown()
        super().destroy_node()

    def set_parameters_atomically(self, parameter_list: list[Parameter]
                                  ) -> SetParametersResult:
        """Set parameters (as ros2 param set does); an unknown name or type is named."""
        reason = name_or_type_refusal(self, parameter_list, self._model)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        return super().set_parameters_atomically(parameter_list)

    def _param(self, name: str) -> object:
        return self.get_parameter(name).value

    @property
    def _model(self) -> Chain | None:
        return self._robot.model

    @property
    def _controller(self) -> IkController | None:
        return self._robot.controller

    # ---- chain and parameters -------------------------------------------------------

    def _on_description(self, msg: String) -> None:
        """Parse a new description off the executor thread (see DescriptionLoader)."""
        if msg.data != self._robot.description:  # else published again, unchanged
            self._loader.submit(msg.data)

    def _on_model(self, model: Chain, controller: IkController, settings: Settings) -> None:
        """Rewire what depends on a newly adopted model: paths, topics, markers."""
        self._paths = branch_paths(model.parents.tolist(),
                                   [effector.parent for effector in model.effectors])
        self._set_window(settings.target_window)
        for index, name in enumerate(model.effector_names):
            if len(model.effectors) > 1 and name not in self._effector_topics:
                self._effector_topics.add(name)
                self.create_subscription(
                    PoseStamped, f'{name}/target_pose',
                    lambda msg, index=index: self._on_pose(msg, index), TARGET_QOS)
        self._jog.on_model(model)
        self._obstacles.apply(controller)
        if self._rviz_targets:
            self._show_target_markers(model, controller)
        self.get_logger().info(f'chain {model.base_link} -> {", ".join(model.effector_names)}: '
                               f'{len(model.joint_names)} joints')

    def _show_target_markers(self, model: Chain, controller: IkController) -> None:
        """(Re)start the draggable targets, one per effector, at the commanded tool frames."""
        if self._target_markers is not None:
            self._target_markers.shutdown()
        self._target_markers = TargetMarkers.at_frames(
            self, self._frames.frame, model.effector_names, controller.tool_frames(),
            controller.body, lambda msg, effector: self._on_pose(msg, effector, dragged=True))

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a change as a whole; commit it only when all of it is usable."""
        if self._robot.declaring:  # the node's own declarations, validated by NodeModel
            return SetParametersResult(successful=True)
        updates = {parameter.name: parameter.value for parameter in parameters}
        try:
            settings = self._robot.update(updates)
        except ValueError as error:
            return SetParametersResult(successful=False, reason=str(error))
        # Humble has no post-set callback: what follows cannot fail.
        if settings is not None:
            self._set_window(settings.target_window)
        if TIMER_RATES & updates.keys():
            self._restart_timers(updates)
        return SetParametersResult(successful=True)

    def _set_window(self, seconds: float) -> None:
        self._window_timer.timer_period_ns = max(int(seconds * 1e9), 1)

    def _restart_timers(self, updates: dict[str, object]) -> None:
        """(Re)start the command and marker timers at their (updated) rates."""
        rates = {name: updates.get(name, self._param(name)) for name in TIMER_RATES}
        if self._period is not None:  # the command stream's own rate
            rates['publish_rate'] = 1.0 / self._period
        for timer in self._rate_timers.values():
            self.destroy_timer(timer)
        callbacks = {'publish_rate': self._on_tick, 'marker_rate': self._publish_markers}
        self._rate_timers = {name: self.create_timer(1.0 / rate, callbacks[name])
                             for name, rate in rates.items() if rate > 0.0}

    # ---- targets, feedback, services ------------------------------------------------

    def _on_pose(self, msg: PoseStamped, effector: int | None = None,
                 dragged: bool = False) -> None:
        """Take a full pose (its orientation normalised) for `effector`, None: nearest."""
        try:
            target = Target(point_array(msg.pose.position),
                            quaternion_array(msg.pose.orientation))
        except TargetError as error:
            self._refuse('message', str(error))
            return
        self._on_target(target, msg.header, effector, dragged)

    def _on_goal_pose(self, msg: PoseStamped) -> None:
        """Take RViz's 2D Goal Pose by its position: its arrow is a heading on the ground."""
        self._on_point(PointStamped(header=msg.header, point=msg.pose.position))

    def _on_point(self, msg: PointStamped) -> None:
        try:
            position = point_array(msg.point)
        except TargetError as error:
            self._refuse('message', str(error))
            return
        self._on_target(Target(position), msg.header, None)

    def _on_target(self, target: Target, header: Header, effector: int | None,
                   dragged: bool = False) -> None:
        """
        Hand a target to the controller in its frame; `effector` None: the nearest.

        A target from a topic also moves that effector's draggable marker (not one that
        came from dragging it), so the marker shows the target in force.
        """
        controller = self._controller
        if controller is None:
            self._refuse('state', 'no chain yet (waiting for robot_description)')
            return
        try:
            target = self._frames.to_controller(target, header.frame_id, controller.body)
        except TargetError as error:
            self._refuse('frame', str(error))
            return
        age = stamp_age(header.stamp, self.get_clock().now().nanoseconds)
        self._apply(controller.on_target(effector, target, time.monotonic(), age))
        if controller.solve_due is not None and self._window_timer.is_canceled():
            self._window_timer.reset()
        if self._target_markers is not None and not dragged:
            index = controller.effector_of(target)  # None if it was refused
            if index is not None:
                self._target_markers.move(index, pose_message(controller.target_frame(index)))

    def _refuse(self, kind: str, reason: str) -> None:
        """Count (once there is a controller) and log a target refused by the node."""
        if self._controller is not None:
            self._controller.refuse(kind, reason)
        self._log(kind, f'target refused, no motion: {reason}')

    def _on_window(self) -> None:
        self._window_timer.cancel()
        self._apply(self._controller.solve_pending(time.monotonic()))

    def _on_feedback(self, msg: JointState) -> None:
        if self._controller is not None:
            age = stamp_age(msg.header.stamp, self.get_clock().now().nanoseconds)
            self._apply(self._controller.on_feedback(msg.name, msg.position, time.monotonic(),
                                                     age))

    def _on_tick(self) -> None:
        if self._controller is not None:
            update = self._controller.tick(time.monotonic())
            self._apply(update)
            self._jog.publish_status()
            if self._free and update.command is None:  # TF goes on while nothing moves
                self._body.publish(self._controller.body)

    def _on_enable(self, request: SetBool.Request,
                   response: SetBool.Response) -> SetBool.Response:
        if self._controller is None:
            response.success, response.message = False, 'no chain yet'
        elif request.data:
            response.success, response.message = self._controller.enable(time.monotonic())
        else:
            response.success, response.message = self._controller.disable(time.monotonic())
        return response

    def _on_hold(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self._controller is None:
            response.success, response.message = False, 'nothing to hold: no chain yet'
        else:
            response.success, response.message = self._controller.hold(time.monotonic())
        return response

    # ---- what the node sends and shows ------------------------------------------------

    def _apply(self, update: Update) -> None:
        """Publish the update's command on every chosen output; log what it reports."""
        if update.refusal is not None:
            kind, reason = update.refusal
            self._log(kind, f'target refused, no motion: {reason}')
        for kind, text in update.warnings:
            self._log(kind, text)
        command = update.command
        if command is None:
            return
        stamp = self.get_clock().now().to_msg()
        if self._free:  # the body moves with the commands: one stamp pairs them
            self._body.publish(self._controller.body, stamp)
        self._commands.publish(self._model, self._controller, command, stamp)

    def _log(self, kind: str, text: str) -> None:
        """Log a warning; each kind is throttled on its own."""
        now = time.monotonic()
        if now - self._refusal_logged.get(kind, -math.inf) >= WARNING_THROTTLE:
            self._refusal_logged[kind] = now
            self.get_logger().warning(text)

    def _publish_markers(self) -> None:
        controller = self._controller
        if (controller is not None and controller.stream.position is not None
                and self._marker_pub.get_subscription_count() > 0):
            stamp, frame = self.get_clock().now().to_msg(), self._frames.frame
            markers = controller_markers(controller, self._paths, frame, stamp)
            markers.markers += self._obstacles.markers(frame, stamp)  # as the solves see them
            self._marker_pub.publish(markers)

    def _publish_diagnostics(self) -> None:
        status = (Status('WARN', 'waiting for robot_description', {})
                  if self._controller is None
                  else self._controller.status(time.monotonic(), DIAGNOSTICS_PERIOD))
        off = str(status.values.get('self_collision', ''))
        if off != self._collision_warning:
            self._collision_warning = off
            if off:
                self.get_logger().warning(off)
        self._diagnostics_pub.publish(diagnostic_array(
            self.get_clock().now().to_msg(), f'{self.get_fully_qualified_name()}: IK',
            self._base_link, status))


def main(args: list[str] | None = None) -> None:
    """Run the IK node until Ctrl-C or shutdown; exit 1 on a configuration error."""
    run_node(IkNode, 'ik_node', args)


if __name__ == '__main__':
    main()
