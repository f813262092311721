"""
IK node: target poses in, joint commands out, solved with FABRIK.

Try it:
    ros2 run fabrik_ros ik_node --ros-args --params-file config/arm.yaml
    ros2 topic pub --once target_pose geometry_msgs/msg/PoseStamped \
        "{header: {frame_id: base_link},
          pose: {position: {x: 0.3, z: 0.4}, orientation: {w: 1.0}}}"

The latest target wins: target subscriptions keep one message, every target is solved at
once, warm-started from the measured pose (or the last command), so a fast target stream
never queues up behind a slow solve. On a tree the targets that arrive within
`target_window` (5 ms) of each other, one per tip, are solved together, once: six feet
moved together cost one solve, not six.

Two ways to command (parameter `command_rate`):
- 0 (default): each solution is published as it comes (lowest latency), re-published at
  `publish_rate` so robot_state_publisher and RViz show the arm with nothing else running;
- > 0: a command stream at that rate that moves toward the solution within each joint's
  velocity and acceleration limits, for ros2_control and real hardware.
Either way commands stay within the joint limits and the max joint step, stop (hold) on
`~/hold`, on a target older than `target_timeout` and on stale feedback, and are not sent
at all while the node is disabled (`~/enable`, `start_enabled`).
"""

from dataclasses import dataclass
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from fabrik_ros.chain import Chain
from fabrik_ros.command import CommandStream, joint_order, measured_positions
from fabrik_ros.config import (chain_from_parameters, CHAIN_PARAMETERS, LIMIT_FIELDS,
                               LIMITS_PREFIX, package_share_dir, with_limit_overrides)
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.messages import (branch_paths, chain_markers, diagnostic_array,
                                 joint_state, joint_trajectory, point_array, quaternion_array,
                                 TargetError, transform_point)
from fabrik_ros.motion import MotionLimits
from fabrik_ros.node_main import run_node
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.exceptions import ParameterException
from rclpy.expand_topic_name import expand_topic_name
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

try:  # tf2_ros comes with a ROS install but has no PyPI wheel: frames are optional.
    from tf2_ros import Buffer, TransformException, TransformListener
except ImportError:
    Buffer = TransformListener = None
    TransformException = Exception

DIAGNOSTICS_PERIOD = 1.0  # seconds
WARNING_THROTTLE = 2.0  # seconds between repeats of one warning
OUTPUTS = ('joint_state', 'joint_trajectory', 'forward_command')
HARDWARE_OUTPUTS = ('joint_trajectory', 'forward_command')  # for ros2_control controllers
LIMIT_UNITS = {'min_position': 'radians', 'max_position': 'radians', 'max_velocity': 'rad/s',
               'max_acceleration': 'rad/s^2'}  # of joint_limits.<joint>.<field>
# A trajectory point due at once would make a JointTrajectoryController jump to it.
MIN_TRAJECTORY_DURATION = 0.01  # seconds
MIN_TIMER_RATE = 0.01  # Hz: a slower publish or marker timer is a typo (and 1e-300 overflows)
TIMER_RATES = {'publish_rate', 'marker_rate'}  # parameters that set a timer's rate
# Target topics keep one message: a newer target replaces an unsolved one (no backlog).
TARGET_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# Like robot_state_publisher: late joiners still get the last description.
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _descriptor(description: str, *, read_only: bool = False,
                float_range: tuple[float, float] | None = None,
                int_range: tuple[int, int] | None = None) -> ParameterDescriptor:
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    if float_range is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=float_range[0], to_value=float_range[1])]
    if int_range is not None:
        descriptor.integer_range = [IntegerRange(from_value=int_range[0], to_value=int_range[1])]
    return descriptor


# name -> (default, descriptor); per-joint limits are declared once the chain is known.
NODE_PARAMETERS = {
    'robot_description': ('', _descriptor(
        'URDF XML of the robot; empty: use robot_description_file, the chain.* description, '
        'or else the robot_description topic', read_only=True)),
    'robot_description_file': ('', _descriptor(
        'URDF file, relative to the package share directory (or absolute)', read_only=True)),
    'base_link': ('base_link', _descriptor(
        'Root link of the chain; targets in this frame are used as they are',
        read_only=True)),
    'tip_links': (['tool0'], _descriptor(
        'End-effector links, one per branch of the chain', read_only=True)),
    'tolerance': (1e-4, _descriptor(
        'Target reached when the tip is this close, metres', float_range=(1e-7, 1.0))),
    'max_iterations': (100, _descriptor(
        'Iteration cap of one solve', int_range=(1, 10000))),
    'target_window': (0.005, _descriptor(
        'Trees: targets that arrive within this time of the first unsolved one are solved '
        "together, once (the effectors' targets of one moment), seconds; 0: each target at "
        'once, as a single effector always is (its newest target is all there is to solve)',
        float_range=(0.0, 0.1))),
    'max_restarts': (24, _descriptor(
        'Solves from other seeds when one stalls short of a target; 0 keeps every solution '
        'on the branch of the last one (no jumps), at the cost of missing some targets',
        int_range=(0, 1000))),
    'outputs': (['joint_state'], _descriptor(
        'Command outputs, any of: joint_state (sensor_msgs/JointState on '
        'joint_command_topic), joint_trajectory (trajectory_msgs/JointTrajectory on '
        '~/joint_trajectory), forward_command (std_msgs/Float64MultiArray on ~/commands)',
        read_only=True)),
    'joint_command_topic': ('joint_states', _descriptor(
        'Topic of the sensor_msgs/JointState commands', read_only=True)),
    'command_joints': (Parameter.Type.STRING_ARRAY, _descriptor(
        'Joint order of ~/commands (forward_command_controller joints); unset: chain order',
        read_only=True)),
    'command_rate': (0.0, _descriptor(
        'Command stream rate, Hz, shaped by the velocity and acceleration limits; 0: '
        'publish each solution at once', float_range=(0.0, 1000.0), read_only=True)),
    'publish_rate': (10.0, _descriptor(
        'With command_rate 0: re-publish the last command, go on with moves held back by '
        'max_joint_step and check the watchdogs at this rate, Hz (0: only when a target is '
        'solved)', float_range=(0.0, 1000.0))),
    'default_max_velocity': (1.0, _descriptor(
        'Velocity limit of joints the model gives none, rad/s', float_range=(1e-3, 100.0),
        read_only=True)),
    'default_max_acceleration': (5.0, _descriptor(
        'Acceleration limit of every joint unless joint_limits.<joint>.max_acceleration '
        'says otherwise, rad/s^2', float_range=(1e-3, 1000.0), read_only=True)),
    'max_joint_step': (float('inf'), _descriptor(
        'Last guard: no joint moves further than this between two commands, radians')),
    'feedback_topic': ('', _descriptor(
        'Measured sensor_msgs/JointState to warm-start from and hold on when stale; '
        'empty: no feedback', read_only=True)),
    'feedback_timeout': (0.5, _descriptor(
        'Feedback older than this is stale: hold, seconds', float_range=(0.01, 60.0))),
    'target_timeout': (0.0, _descriptor(
        'Hold when the newest target is older than this, seconds (0: never)',
        float_range=(0.0, 3600.0))),
    'start_enabled': (True, _descriptor(
        'Send commands from the start; false: only after ~/enable', read_only=True)),
    'marker_rate': (10.0, _descriptor(
        'Publish ~/markers at this rate, Hz (0: off)', float_range=(0.0, 100.0))),
}


def check_timer_rate(name: str, rate: float) -> None:
    """Raise ValueError unless a timer rate (Hz) is 0 (off) or at least MIN_TIMER_RATE."""
    if 0.0 < rate < MIN_TIMER_RATE:
        raise ValueError(f'{name} must be 0 (off) or at least {MIN_TIMER_RATE} Hz, got {rate}')


@dataclass(frozen=True)
class Settings:
    """What solves and commands are made from; replaced whole when a parameter changes."""

    chain: Chain  # the model with the joint limit overrides applied
    tolerance: float  # metres
    max_iterations: int
    max_restarts: int
    motion: MotionLimits
    target_timeout: float  # seconds, 0: never
    feedback_timeout: float  # seconds


class SolveStats:
    """Solve counts and times since the last diagnostics message."""

    def __init__(self) -> None:
        """Start an empty window."""
        self.reset()

    def reset(self) -> None:
        """Start a new window."""
        self.solves = 0
        self.total_seconds = 0.0
        self.max_seconds = 0.0

    def record(self, seconds: float) -> None:
        """Count one solve that took `seconds`."""
        self.solves += 1
        self.total_seconds += seconds
        self.max_seconds = max(self.max_seconds, seconds)


class IkNode(Node):
    """Solve every target with FABRIK and publish joint commands, safely."""

    def __init__(self, **kwargs) -> None:
        """Declare parameters, wire topics and services, load the chain (or wait for it)."""
        super().__init__('ik_node', **kwargs)
        for name, (default, descriptor) in NODE_PARAMETERS.items():
            self.declare_parameter(name, default, descriptor)
        for name, (default, description) in CHAIN_PARAMETERS.items():
            self.declare_parameter(name, default, _descriptor(description, read_only=True))
        self._base_link = self.get_parameter('base_link').value
        self._outputs = list(self.get_parameter('outputs').value)
        unknown = sorted(set(self._outputs) - set(OUTPUTS))
        if unknown:
            raise ValueError(f'outputs {unknown} unknown; choose from {list(OUTPUTS)}')
        rate = self.get_parameter('command_rate').value
        self._dt = 1.0 / rate if rate > 0.0 else None  # seconds between streamed commands
        self._enabled = self.get_parameter('start_enabled').value
        self._disabling = False  # disabled, still braking to a stop
        self._model: Chain | None = None  # the chain as described, before limit overrides
        self._settings: Settings | None = None
        self._solver: IkSolver | None = None  # built on the next solve after a change
        self._stream: CommandStream | None = None
        self._command_order = np.zeros(0, dtype=int)  # chain indices in ~/commands order
        self._paths: list[list[int]] = []
        self._targets: np.ndarray | None = None  # (m, 3) base frame, NaN: no target yet
        self._target_time = 0.0  # monotonic seconds of the newest target
        self._measured: np.ndarray | None = None  # radians, from feedback_topic
        self._measured_time = -np.inf  # monotonic seconds
        self._result: IkResult | None = None
        self._unsolved = False  # a target came in since the last solve
        self._stats = SolveStats()
        self._refused = 0
        self._last_refusal = ''
        self._refusal_logged: dict[str, float] = {}  # kind of refusal -> monotonic seconds
        self._effector_topics: set[str] = set()
        self._description = ''  # the last robot_description taken from the topic

        command_topic = self.get_parameter('joint_command_topic').value
        self._feedback_topic = self.get_parameter('feedback_topic').value
        to_hardware = sorted(set(self._outputs) & set(HARDWARE_OUTPUTS))
        if to_hardware and not self._feedback_topic:
            raise ValueError(f'outputs {to_hardware} drive an arm: set feedback_topic to its '
                             'measured joint states, so that commands start where the arm is '
                             '(without it the node could only assume a pose)')
        if self._feedback_topic and 'joint_state' in self._outputs and len(
                {expand_topic_name(topic, self.get_name(), self.get_namespace())
                 for topic in (command_topic, self._feedback_topic)}) == 1:
            raise ValueError(f'feedback_topic and joint_command_topic are both '
                             f"'{command_topic}': the node would take its own commands for "
                             'the measured state')
        self._command_pub = self.create_publisher(JointState, command_topic, 10)
        self._trajectory_pub = self.create_publisher(JointTrajectory, '~/joint_trajectory', 10)
        self._array_pub = self.create_publisher(Float64MultiArray, '~/commands', 10)
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

        self._tf_buffer = None
        if Buffer is not None:
            self._tf_buffer = Buffer()
            self._tf_listener = TransformListener(self._tf_buffer, self)

        self.create_subscription(PoseStamped, 'target_pose', self._on_pose, TARGET_QOS)
        self.create_subscription(PoseStamped, 'goal_pose', self._on_pose, TARGET_QOS)
        self.create_subscription(PointStamped, '/clicked_point', self._on_point, TARGET_QOS)
        if self._feedback_topic:
            self.create_subscription(JointState, self._feedback_topic, self._on_feedback,
                                     qos_profile_sensor_data)
        # Started by the first target after a solve: what arrives within the window is
        # solved with it, once (a one-shot timer; rclpy has none, so it cancels itself).
        self._solve_timer = self.create_timer(0.0, self._solve_unsolved)
        self._solve_timer.cancel()
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_service(Trigger, '~/hold', self._on_hold)

        self.add_on_set_parameters_callback(self._on_set_parameters)
        for name in TIMER_RATES:  # the callback above checks later changes
            check_timer_rate(name, self.get_parameter(name).value)
        self._publish_timer = None
        self._marker_timer = None
        self._restart_timers()
        if self._dt is not None:
            self.create_timer(self._dt, self._on_command_tick)
        self.create_timer(DIAGNOSTICS_PERIOD, self._publish_diagnostics)

        chain = self._chain_from_parameters()
        if chain is None:
            self.get_logger().info('no chain in the parameters: waiting for robot_description')
            self.create_subscription(String, 'robot_description', self._on_description,
                                     DESCRIPTION_QOS)
        else:
            self._use_chain(chain)

    # ---- chain and parameters -------------------------------------------------------

    def _chain_from_parameters(self) -> Chain | None:
        """Build the model from parameters; None when none describes it (use the topic)."""
        urdf = self.get_parameter('robot_description').value
        if urdf:
            return self._chain_from_urdf(urdf)
        names = ['robot_description_file', 'base_link', 'tip_links', *CHAIN_PARAMETERS]
        return chain_from_parameters({name: self.get_parameter(name).value for name in names},
                                     package_share_dir())

    def _chain_from_urdf(self, urdf: str) -> Chain:
        return Chain.from_urdf(urdf, self._base_link,
                               list(self.get_parameter('tip_links').value))

    def _on_description(self, msg: String) -> None:
        if msg.data == self._description:
            return  # published again, unchanged: keep commanding as before
        previous = self._model, self._settings, self._stream, self._command_order
        try:
            self._use_chain(self._chain_from_urdf(msg.data))
        except (ValueError, ParameterException) as error:  # a ChainError is a ValueError
            self._model, self._settings, self._stream, self._command_order = previous
            self.get_logger().error(f'robot_description refused, chain unchanged: {error}')
            return
        self._description = msg.data
        self.get_logger().info('chain loaded from the robot_description topic')

    def _use_chain(self, chain: Chain) -> None:
        """Adopt a chain: declare its per-joint limits, set up the command stream."""
        self._model = chain
        self._settings = None
        self._stream = None  # the old chain's command means nothing to the new one
        order = self.get_parameter_or(
            'command_joints', Parameter('command_joints', Parameter.Type.STRING_ARRAY, [])).value
        self._command_order = joint_order(chain.joint_names, order or chain.joint_names)
        defaults = self._limit_defaults(chain)
        for index, joint in enumerate(chain.joint_names):
            for field in LIMIT_FIELDS:
                name = f'{LIMITS_PREFIX}{joint}.{field}'
                if not self.has_parameter(name):
                    # Declaring runs _on_set_parameters, which validates any override.
                    self.declare_parameter(name, float(defaults[field][index]), _descriptor(
                        f'{field.replace("_", " ").capitalize()} of {joint}, '
                        f'{LIMIT_UNITS[field]}' + ('' if field == 'max_acceleration' else
                                                   '; may only narrow the model')))
        settings = self._settings_for({})
        self._settings = settings
        self._stream = CommandStream(settings.motion, self._dt)
        if not self._feedback_topic:  # with feedback, commands start where the arm is
            self._stream.start(chain.neutral())
        self._paths = branch_paths(chain.parents.tolist(),
                                   [effector.parent for effector in chain.effectors])
        self._targets = np.full((len(chain.effectors), 3), np.nan)
        self._unsolved = False
        self._set_target_window(self.get_parameter('target_window').value)
        self._result = None
        self._solver = None
        for index, name in enumerate(chain.effector_names):
            if len(chain.effectors) > 1 and name not in self._effector_topics:
                self._effector_topics.add(name)
                self.create_subscription(
                    PoseStamped, f'{name}/target_pose',
                    lambda msg, index=index: self._on_pose(msg, index), TARGET_QOS)
        self.get_logger().info(
            f'chain {chain.base_link} -> {", ".join(chain.effector_names)}: '
            f'{len(chain.joint_names)} joints')

    def _set_target_window(self, seconds: float) -> None:
        """Wait `seconds` for more targets before solving, on trees; a chain solves at once."""
        tree = self._model is not None and len(self._model.effectors) > 1
        self._solve_timer.timer_period_ns = int(seconds * 1e9) if tree else 0

    def _limit_defaults(self, chain: Chain) -> dict[str, np.ndarray]:
        """Return the per-joint limits before overrides: the model's, else the defaults."""
        default_velocity = self.get_parameter('default_max_velocity').value
        return {
            'min_position': chain.lower, 'max_position': chain.upper,
            'max_velocity': np.where(np.isfinite(chain.max_velocity), chain.max_velocity,
                                     default_velocity),
            'max_acceleration': np.full(chain.dof,
                                        self.get_parameter('default_max_acceleration').value),
        }

    def _settings_for(self, updates: dict[str, object]) -> Settings:
        """
        Return the settings the parameters give with `updates` applied.

        Raises ValueError (ChainError) naming the problem when they are unusable.
        """
        def value(name: str) -> object:
            return updates[name] if name in updates else self.get_parameter(name).value

        limits = {LIMITS_PREFIX + name: parameter.value for name, parameter
                  in self.get_parameters_by_prefix(LIMITS_PREFIX[:-1]).items()}
        limits.update((name, number) for name, number in updates.items()
                      if name.startswith(LIMITS_PREFIX))
        chain = with_limit_overrides(self._model, limits)  # narrowing only, validated
        defaults = self._limit_defaults(self._model)  # for joints not declared yet
        velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity,
                            defaults['max_velocity'])
        acceleration = [limits.get(f'{LIMITS_PREFIX}{joint}.max_acceleration', default)
                        for joint, default in zip(chain.joint_names,
                                                  defaults['max_acceleration'])]
        for joint, number in zip(chain.joint_names, acceleration):
            if not 0.0 < number < np.inf:  # inf would switch the acceleration limit off
                raise ValueError(f'{LIMITS_PREFIX}{joint}.max_acceleration must be a finite '
                                 f'positive number, rad/s^2, got {number}')
        return Settings(chain=chain, tolerance=value('tolerance'),
                        max_iterations=value('max_iterations'),
                        max_restarts=value('max_restarts'),
                        motion=MotionLimits.create(chain.lower, chain.upper, velocity,
                                                   acceleration, value('max_joint_step')),
                        target_timeout=value('target_timeout'),
                        feedback_timeout=value('feedback_timeout'))

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a parameter change; commit it only when all of it is usable."""
        updates = {parameter.name: parameter.value for parameter in parameters}
        try:
            for name in TIMER_RATES & updates.keys():
                check_timer_rate(name, updates[name])
        except ValueError as error:
            return SetParametersResult(successful=False, reason=str(error))
        settings = self._settings
        if self._model is not None:
            try:
                settings = self._settings_for(updates)
            except ValueError as error:
                return SetParametersResult(successful=False, reason=str(error))
        # Validation done: from here on the change is committed.
        if settings is not self._settings:
            self._settings = settings
            self._solver = None
            if self._stream is not None:
                self._stream.set_limits(settings.motion)
        if 'target_window' in updates:
            self._set_target_window(updates['target_window'])
        if TIMER_RATES & updates.keys():
            self._restart_timers(updates)
        return SetParametersResult(successful=True)

    def _restart_timers(self, updates: dict[str, object] | None = None) -> None:
        updates = updates or {}
        rates = {name: updates.get(name, self.get_parameter(name).value)
                 for name in TIMER_RATES}
        for timer in (self._publish_timer, self._marker_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self._publish_timer = self._marker_timer = None
        if rates['publish_rate'] > 0.0 and self._dt is None:
            self._publish_timer = self.create_timer(1.0 / rates['publish_rate'],
                                                    self._on_command_tick)
        if rates['marker_rate'] > 0.0:
            self._marker_timer = self.create_timer(1.0 / rates['marker_rate'],
                                                   self._publish_markers)

    # ---- targets, feedback, services ------------------------------------------------

    def _on_pose(self, msg: PoseStamped, effector: int | None = None) -> None:
        try:
            quaternion_array(msg.pose.orientation)  # position-only IK; still refuse garbage
            position = point_array(msg.pose.position)
        except TargetError as error:
            self._refuse('message', str(error))
            return
        self._set_target(position, msg.header, effector)

    def _on_point(self, msg: PointStamped) -> None:
        try:
            position = point_array(msg.point)
        except TargetError as error:
            self._refuse('message', str(error))
            return
        self._set_target(position, msg.header, None)

    def _refuse(self, kind: str, reason: str) -> None:
        """Count and log a refused input; each kind of refusal is throttled on its own."""
        self._refused += 1
        self._last_refusal = reason
        now = time.monotonic()
        if now - self._refusal_logged.get(kind, -np.inf) >= WARNING_THROTTLE:
            self._refusal_logged[kind] = now
            self.get_logger().warning(f'target refused, no motion: {reason}')

    def _set_target(self, position: np.ndarray, header: Header,
                    effector: int | None) -> None:
        """Store the target in the base frame for the next solve; `effector` None: nearest."""
        reason = self._why_not_moving(header)
        if reason:
            self._refuse('state', reason)
            return
        position = self._in_base_frame(position, header.frame_id)
        if position is None:
            return
        if effector is None:
            effector = 0
            if len(self._targets) > 1:  # RViz tools on a tree: move the nearest effector
                tips = self._settings.chain.effector_positions(self._stream.position)
                effector = int(np.argmin(np.linalg.norm(tips - position, axis=1)))
        self._targets[effector] = position
        self._target_time = time.monotonic()
        if not self._solve_timer.timer_period_ns:
            self._unsolved = False  # a window pending from before a change to 0 is moot
            self._solve()
        elif not self._unsolved:
            self._unsolved = True
            self._solve_timer.reset()

    def _solve_unsolved(self) -> None:
        """Solve the targets that came in since the last solve, once for all of them."""
        self._solve_timer.cancel()
        unsolved, self._unsolved = self._unsolved, False
        # Checked again: the node may have been disabled, or lost feedback, in the window.
        if unsolved and self._enabled and not self._disabling and not self._feedback_stale():
            self._solve()

    def _why_not_moving(self, header: Header) -> str:
        """Return why a target cannot be taken now ('' if it can)."""
        if self._model is None:
            return 'no chain yet (waiting for robot_description)'
        if not self._enabled or self._disabling:
            return 'the node is disabled (call ~/enable)'
        if self._feedback_stale():
            return f'no fresh feedback on {self._feedback_topic}'
        timeout = self._settings.target_timeout
        stamped = header.stamp.sec or header.stamp.nanosec  # unstamped targets count as new
        if timeout > 0.0 and stamped:
            age = (self.get_clock().now() - Time.from_msg(header.stamp)).nanoseconds * 1e-9
            if age > timeout:
                return f'target stamped {age:.3f} s ago, older than target_timeout {timeout} s'
        return ''

    def _in_base_frame(self, position: np.ndarray, frame_id: str) -> np.ndarray | None:
        """
        Return the position in the base frame, or None (refused) if it has no transform.

        An empty frame_id means the base frame, as `ros2 topic pub` sends it by default.
        """
        if frame_id in ('', self._base_link):
            return position
        if self._tf_buffer is None:
            self._refuse('frame', f"frame '{frame_id}' is not the base frame "
                         f"'{self._base_link}' and tf2_ros is not installed to transform it")
            return None
        try:
            transform = self._tf_buffer.lookup_transform(self._base_link, frame_id, Time())
        except TransformException as error:
            self._refuse('frame',
                         f"no transform from '{frame_id}' to '{self._base_link}': {error}")
            return None
        translation, rotation = transform.transform.translation, transform.transform.rotation
        return transform_point(
            np.array([translation.x, translation.y, translation.z]),
            np.array([rotation.x, rotation.y, rotation.z, rotation.w]), position)

    def _on_feedback(self, msg: JointState) -> None:
        if self._model is None:
            return
        try:
            self._measured = measured_positions(msg.name, msg.position,
                                                self._model.joint_names)
        except ValueError as error:
            self.get_logger().warning(f'feedback ignored: {error}',
                                      throttle_duration_sec=WARNING_THROTTLE)
            return
        self._measured_time = time.monotonic()
        if self._stream.position is None:
            self._stream.start(self._measured)  # the first command is where the arm is

    def _feedback_stale(self) -> bool:
        """Tell whether feedback is configured but missing or too old (needs the chain)."""
        age = time.monotonic() - self._measured_time
        return bool(self._feedback_topic) and age > self._settings.feedback_timeout

    def _on_enable(self, request: SetBool.Request,
                   response: SetBool.Response) -> SetBool.Response:
        if not request.data:
            if self._stream is None or self._stream.position is None or self._dt is None:
                self._enabled = False  # nothing moving between commands: silent at once
            else:  # brake to a stop first; _send_command goes silent once at rest
                self._disabling = self._enabled
                self._hold('disabled (~/enable false)')
            response.success = True
            response.message = 'disabled: no commands are sent once the arm is at rest'
            return response
        if self._enabled:  # restarting the stream now would stop it without braking
            self._disabling = False
            response.success, response.message = True, 'enabled (holding)'
            return response
        if self._model is None or self._feedback_stale():
            response.success = False
            response.message = ('cannot enable: ' + ('no chain yet' if self._model is None else
                                f'no fresh feedback on {self._feedback_topic}'))
            return response
        # Start where the arm is (or was last commanded): no jump, no replay of old targets.
        start = self._measured if self._feedback_topic else self._stream.position
        self._stream.start(start)
        self._enabled = True
        response.success, response.message = True, 'enabled'
        return response

    def _on_hold(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        if self._stream is None or self._stream.position is None:
            response.success, response.message = False, 'nothing to hold: no command yet'
            return response
        self._hold('hold requested (~/hold)')
        response.success, response.message = True, 'holding until the next target'
        return response

    # ---- solving and commands ---------------------------------------------------------

    def _solve(self) -> None:
        settings, stream = self._settings, self._stream
        if self._solver is None:
            self._solver = IkSolver(settings.chain, tolerance=settings.tolerance,
                                    max_iterations=settings.max_iterations,
                                    max_restarts=settings.max_restarts)
        target = self._targets[0] if len(self._targets) == 1 else self._targets
        # Closed loop: start from where the arm is when it is measured.
        seed = self._measured if self._feedback_topic else stream.goal
        start = time.perf_counter()
        try:
            result = self._solver.solve(target, seed=stream.position if seed is None else seed)
        except ValueError as error:
            self._refuse('solver', str(error))
            self._targets[:] = np.nan  # refused targets must not block the next ones
            return
        self._stats.record(time.perf_counter() - start)
        if not np.all(np.isfinite(result.q)):
            self._refuse('solver', f'solver returned non-finite joint angles {result.q.tolist()}')
            return
        self._result = result
        stream.follow(result.q)  # clipped into the limits: commands never leave them
        if self._dt is None:
            self._send_command()
        if not result.reached:
            self.get_logger().warning(
                f'target out of reach: stretched toward it, {result.error:.4f} m remaining',
                throttle_duration_sec=WARNING_THROTTLE)

    def _on_command_tick(self) -> None:
        """Check the watchdogs, then send the next command (stream) or the held one."""
        if self._stream is None or self._stream.position is None:
            return
        timeout = self._settings.target_timeout
        if self._feedback_stale():
            self._hold(f'feedback on {self._feedback_topic} is stale')
        elif (timeout > 0.0 and self._stream.goal is not None
              and time.monotonic() - self._target_time > timeout):
            self._hold(f'no target for {timeout} s (target_timeout)')
        self._send_command()

    def _hold(self, reason: str) -> None:
        """Brake to a stop and stay, every target forgotten; say so once, as it begins."""
        if self._stream.goal is not None or not self._stream.hold_reason:
            self.get_logger().warning(f'holding: {reason}')
        self._stream.hold(reason)
        self._unsolved = False
        if self._targets is not None:
            self._targets[:] = np.nan  # a later target for one effector revives no other

    def _send_command(self) -> None:
        """Advance the command stream one step and publish it on every chosen output."""
        if not self._enabled:
            return
        stream = self._stream
        previous = stream.position
        position = stream.step()
        if 'joint_state' in self._outputs:
            msg = joint_state(self._model.joint_names, position,
                              self.get_clock().now().to_msg())
            if self._dt is not None:
                msg.velocity = stream.velocity.tolist()
            self._command_pub.publish(msg)
        if 'joint_trajectory' in self._outputs:
            duration = max(stream.duration(previous), MIN_TRAJECTORY_DURATION)
            self._trajectory_pub.publish(joint_trajectory(
                self._model.joint_names, position, duration))
        if 'forward_command' in self._outputs:
            self._array_pub.publish(
                Float64MultiArray(data=position[self._command_order].tolist()))
        if self._disabling and not np.any(stream.velocity):
            self._enabled = self._disabling = False  # at rest: from now on, silence

    # ---- what the node shows ----------------------------------------------------------

    def _publish_markers(self) -> None:
        if (self._stream is None or self._stream.position is None
                or self._marker_pub.get_subscription_count() == 0):
            return
        kinematics = self._settings.chain.forward(self._stream.position)
        reached = self._result is None or self._result.reached
        self._marker_pub.publish(chain_markers(
            self._base_link, self.get_clock().now().to_msg(), kinematics.positions,
            kinematics.effectors, self._paths, self._targets, reached))

    def _publish_diagnostics(self) -> None:
        stats, result = self._stats, self._result
        values = {'targets_refused': self._refused, 'last_refusal': self._last_refusal,
                  'solve_rate_hz': f'{stats.solves / DIAGNOSTICS_PERIOD:.1f}',
                  'enabled': self._enabled}
        holding = self._stream.hold_reason if self._stream is not None else ''
        if self._model is None:
            level, message = DiagnosticStatus.WARN, 'waiting for robot_description'
        elif self._feedback_stale():
            level = DiagnosticStatus.WARN
            message = f'holding: no fresh feedback on {self._feedback_topic}'
        elif not self._enabled:
            level, message = DiagnosticStatus.OK, 'disabled: no commands are sent'
        elif holding:
            level, message = DiagnosticStatus.WARN, f'holding: {holding}'
        elif result is None:
            level, message = DiagnosticStatus.OK, 'waiting for a target'
        else:
            reached = 'target reached' if result.reached else 'target out of reach'
            level = DiagnosticStatus.OK if result.reached else DiagnosticStatus.WARN
            message = f'{reached}, {result.error:.4f} m from it'
        if result is not None:
            values.update({
                'reached': result.reached, 'error_m': f'{result.error:.6f}',
                'iterations': result.iterations, 'restarts': result.restarts,
                'solve_time_ms': f'{1e3 * stats.total_seconds / max(stats.solves, 1):.3f}',
                'solve_time_max_ms': f'{1e3 * stats.max_seconds:.3f}',
            })
        if self._feedback_topic:
            values['feedback_age_s'] = f'{time.monotonic() - self._measured_time:.3f}'
        if self._settings is not None:
            values['tolerance_m'] = self._settings.tolerance
            values['max_iterations'] = self._settings.max_iterations
        stats.reset()
        self._diagnostics_pub.publish(diagnostic_array(
            self.get_clock().now().to_msg(), f'{self.get_fully_qualified_name()}: IK',
            self._base_link, level, message, values))


def main(args: list[str] | None = None) -> None:
    """Run the IK node until Ctrl-C or shutdown; exit 1 on a configuration error."""
    run_node(IkNode, 'ik_node', args)


if __name__ == '__main__':
    main()
