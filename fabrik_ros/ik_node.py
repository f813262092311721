"""
IK node: target poses in, joint commands out, solved with FABRIK.

Try it:
    ros2 run fabrik_ros ik_node --ros-args --params-file config/arm.yaml
    ros2 topic pub --once target_pose geometry_msgs/msg/PoseStamped \
        "{header: {frame_id: base_link},
          pose: {position: {x: 0.3, z: 0.4}, orientation: {w: 1.0}}}"

The latest target wins: target subscriptions keep one message and every arrival is
solved at once, warm-started from the last solution, so a fast target stream never
queues up behind a slow solve. Commands are re-published at `publish_rate` so
robot_state_publisher and RViz show the arm with nothing else running.
"""

from dataclasses import dataclass
from pathlib import Path
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from fabrik_ros.chain import Chain
from fabrik_ros.config import (chain_from_parameters, CHAIN_PARAMETERS, LIMIT_FIELDS,
                               LIMITS_PREFIX, with_limit_overrides)
from fabrik_ros.ik import IkResult, IkSolver
from fabrik_ros.messages import (branch_paths, chain_markers, diagnostic_array,
                                 joint_state, point_array, quaternion_array, TargetError,
                                 transform_point)
from fabrik_ros.node_main import run_node
from geometry_msgs.msg import PointStamped, PoseStamped
import numpy as np
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

try:  # tf2_ros comes with a ROS install but has no PyPI wheel: frames are optional.
    from tf2_ros import Buffer, TransformException, TransformListener
except ImportError:
    Buffer = TransformListener = None
    TransformException = Exception

DIAGNOSTICS_PERIOD = 1.0  # seconds
WARNING_THROTTLE = 2.0  # seconds between repeats of one warning
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


# name -> (default, descriptor); joint limit overrides are declared once the chain is known.
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
    'joint_command_topic': ('joint_states', _descriptor(
        'Topic of the sensor_msgs/JointState commands', read_only=True)),
    'tolerance': (1e-4, _descriptor(
        'Target reached when the tip is this close, metres', float_range=(1e-7, 1.0))),
    'max_iterations': (100, _descriptor(
        'Iteration cap of one solve', int_range=(1, 10000))),
    'publish_rate': (10.0, _descriptor(
        'Re-publish the last command at this rate, Hz (0: only when a target is solved)',
        float_range=(0.0, 1000.0))),
    'marker_rate': (10.0, _descriptor(
        'Publish ~/markers at this rate, Hz (0: off)', float_range=(0.0, 100.0))),
}


def package_share_dir() -> Path:
    """Return the package's share directory: the source tree when run from it, else installed."""
    source_tree = Path(__file__).resolve().parent.parent
    if (source_tree / 'package.xml').is_file():
        return source_tree
    from ament_index_python.packages import get_package_share_directory
    return Path(get_package_share_directory('fabrik_ros'))


@dataclass(frozen=True)
class SolverSettings:
    """What a solver is built from; replaced whole when a parameter changes."""

    chain: Chain  # the model with the joint limit overrides applied
    tolerance: float  # metres
    max_iterations: int


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
    """Solve every target with FABRIK and publish the joint command."""

    def __init__(self, **kwargs) -> None:
        """Declare parameters, wire topics and load the chain (or wait for it)."""
        super().__init__('ik_node', **kwargs)
        for name, (default, descriptor) in NODE_PARAMETERS.items():
            self.declare_parameter(name, default, descriptor)
        for name, (default, description) in CHAIN_PARAMETERS.items():
            self.declare_parameter(name, default, _descriptor(description, read_only=True))
        self._base_link = self.get_parameter('base_link').value
        self._model: Chain | None = None  # the chain as described, before limit overrides
        self._settings: SolverSettings | None = None
        self._solver: IkSolver | None = None  # built on the next solve after a change
        self._paths: list[list[int]] = []
        self._q: np.ndarray | None = None  # last command, radians
        self._targets: np.ndarray | None = None  # (m, 3) base frame, NaN: no target yet
        self._result: IkResult | None = None
        self._stats = SolveStats()
        self._refused = 0
        self._last_refusal = ''
        self._effector_topics: set[str] = set()

        self._command_pub = self.create_publisher(
            JointState, self.get_parameter('joint_command_topic').value, 10)
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._diagnostics_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

        self._tf_buffer = None
        if Buffer is not None:
            self._tf_buffer = Buffer()
            self._tf_listener = TransformListener(self._tf_buffer, self)

        self.create_subscription(PoseStamped, 'target_pose', self._on_pose, TARGET_QOS)
        self.create_subscription(PoseStamped, 'goal_pose', self._on_pose, TARGET_QOS)
        self.create_subscription(PointStamped, '/clicked_point', self._on_point, TARGET_QOS)

        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._publish_timer = None
        self._marker_timer = None
        self._restart_timers()
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
        previous = self._model, self._settings, self._q
        try:
            self._use_chain(self._chain_from_urdf(msg.data))
        except (ValueError, ParameterException) as error:  # a ChainError is a ValueError
            self._model, self._settings, self._q = previous
            self.get_logger().error(f'robot_description refused, chain unchanged: {error}')
            return
        self.get_logger().info('chain loaded from the robot_description topic')

    def _use_chain(self, chain: Chain) -> None:
        """Adopt a chain: declare its joint limit overrides, seed the command."""
        self._model = chain
        self._settings = None
        self._q = None  # the old chain's command means nothing to the new one
        for joint, lower, upper in zip(chain.joint_names, chain.lower, chain.upper):
            for key, default in zip(LIMIT_FIELDS, (lower, upper)):
                name = f'{LIMITS_PREFIX}{joint}.{key}'
                if not self.has_parameter(name):
                    # Declaring runs _on_set_parameters, which validates any override.
                    self.declare_parameter(name, float(default), _descriptor(
                        f'{key.replace("_", " ").capitalize()} of {joint}, radians; may only '
                        'narrow the limits of the model'))
        settings = self._settings_for({})
        self._settings = settings
        self._paths = branch_paths(chain.parents.tolist(),
                                   [effector.parent for effector in chain.effectors])
        self._targets = np.full((len(chain.effectors), 3), np.nan)
        self._q = settings.chain.neutral()
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

    def _settings_for(self, updates: dict[str, object]) -> SolverSettings:
        """
        Return the settings the parameters give with `updates` applied.

        Raises ValueError (ChainError) naming the problem when they are unusable.
        """
        limits = {LIMITS_PREFIX + name: parameter.value for name, parameter
                  in self.get_parameters_by_prefix(LIMITS_PREFIX[:-1]).items()}
        limits.update((name, value) for name, value in updates.items()
                      if name.startswith(LIMITS_PREFIX))

        def value(name: str) -> object:
            return updates[name] if name in updates else self.get_parameter(name).value

        return SolverSettings(chain=with_limit_overrides(self._model, limits),
                              tolerance=value('tolerance'),
                              max_iterations=value('max_iterations'))

    def _on_set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate a parameter change; commit it only when all of it is usable."""
        updates = {parameter.name: parameter.value for parameter in parameters}
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
            if self._q is not None:
                self._q = settings.chain.clip(self._q)
        if {'publish_rate', 'marker_rate'} & updates.keys():
            self._restart_timers(updates)
        return SetParametersResult(successful=True)

    def _restart_timers(self, updates: dict[str, object] | None = None) -> None:
        updates = updates or {}
        rates = {name: updates.get(name, self.get_parameter(name).value)
                 for name in ('publish_rate', 'marker_rate')}
        for timer in (self._publish_timer, self._marker_timer):
            if timer is not None:
                self.destroy_timer(timer)
        self._publish_timer = self._marker_timer = None
        if rates['publish_rate'] > 0.0:
            self._publish_timer = self.create_timer(1.0 / rates['publish_rate'],
                                                    self._publish_command)
        if rates['marker_rate'] > 0.0:
            self._marker_timer = self.create_timer(1.0 / rates['marker_rate'],
                                                   self._publish_markers)

    # ---- targets ----------------------------------------------------------------------

    def _on_pose(self, msg: PoseStamped, effector: int | None = None) -> None:
        try:
            quaternion_array(msg.pose.orientation)  # position-only IK; still refuse garbage
            position = point_array(msg.pose.position)
        except TargetError as error:
            self._refuse(str(error))
            return
        self._set_target(position, msg.header.frame_id, effector)

    def _on_point(self, msg: PointStamped) -> None:
        try:
            position = point_array(msg.point)
        except TargetError as error:
            self._refuse(str(error))
            return
        self._set_target(position, msg.header.frame_id, None)

    def _refuse(self, reason: str) -> None:
        self._refused += 1
        self._last_refusal = reason
        self.get_logger().warning(f'target refused, no motion: {reason}',
                                  throttle_duration_sec=WARNING_THROTTLE)

    def _set_target(self, position: np.ndarray, frame_id: str, effector: int | None) -> None:
        """Store the target in the base frame and solve; `effector` None: the nearest one."""
        if self._model is None:
            self._refuse('no chain yet (waiting for robot_description)')
            return
        position = self._in_base_frame(position, frame_id)
        if position is None:
            return
        if effector is None:
            effector = 0
            if len(self._targets) > 1:  # RViz tools on a tree: move the nearest effector
                tips = self._settings.chain.effector_positions(self._q)
                effector = int(np.argmin(np.linalg.norm(tips - position, axis=1)))
        self._targets[effector] = position
        self._solve()

    def _in_base_frame(self, position: np.ndarray, frame_id: str) -> np.ndarray | None:
        """
        Return the position in the base frame, or None (refused) if it has no transform.

        An empty frame_id means the base frame, as `ros2 topic pub` sends it by default.
        """
        if frame_id in ('', self._base_link):
            return position
        if self._tf_buffer is None:
            self._refuse(f"frame '{frame_id}' is not the base frame '{self._base_link}' and "
                         'tf2_ros is not installed to transform it')
            return None
        try:
            transform = self._tf_buffer.lookup_transform(self._base_link, frame_id, Time())
        except TransformException as error:
            self._refuse(f"no transform from '{frame_id}' to '{self._base_link}': {error}")
            return None
        translation, rotation = transform.transform.translation, transform.transform.rotation
        return transform_point(
            np.array([translation.x, translation.y, translation.z]),
            np.array([rotation.x, rotation.y, rotation.z, rotation.w]), position)

    # ---- solving and outputs ------------------------------------------------------------

    def _solve(self) -> None:
        settings = self._settings
        if self._solver is None:
            self._solver = IkSolver(settings.chain, tolerance=settings.tolerance,
                                    max_iterations=settings.max_iterations)
        target = self._targets[0] if len(self._targets) == 1 else self._targets
        start = time.perf_counter()
        try:
            result = self._solver.solve(target, seed=self._q)
        except ValueError as error:
            self._refuse(f'solver: {error}')
            return
        self._stats.record(time.perf_counter() - start)
        if not np.all(np.isfinite(result.q)):
            self._refuse(f'solver returned non-finite joint angles {result.q.tolist()}')
            return
        # Belt and braces: commands never leave the limits, whatever the solver did.
        self._q, self._result = settings.chain.clip(result.q), result
        self._publish_command()
        if not result.reached:
            self.get_logger().warning(
                f'target out of reach: stretched toward it, {result.error:.4f} m remaining',
                throttle_duration_sec=WARNING_THROTTLE)

    def _publish_command(self) -> None:
        if self._q is not None:
            self._command_pub.publish(joint_state(
                self._model.joint_names, self._q, self.get_clock().now().to_msg()))

    def _publish_markers(self) -> None:
        if self._q is None or self._marker_pub.get_subscription_count() == 0:
            return
        kinematics = self._settings.chain.forward(self._q)
        reached = self._result is None or self._result.reached
        self._marker_pub.publish(chain_markers(
            self._base_link, self.get_clock().now().to_msg(), kinematics.positions,
            kinematics.effectors, self._paths, self._targets, reached))

    def _publish_diagnostics(self) -> None:
        stats, result = self._stats, self._result
        values = {'targets_refused': self._refused, 'last_refusal': self._last_refusal,
                  'solve_rate_hz': f'{stats.solves / DIAGNOSTICS_PERIOD:.1f}'}
        if self._model is None:
            level, message = DiagnosticStatus.WARN, 'waiting for robot_description'
        elif result is None:
            level, message = DiagnosticStatus.OK, 'waiting for a target'
        else:
            reached = 'target reached' if result.reached else 'target out of reach'
            level = DiagnosticStatus.OK if result.reached else DiagnosticStatus.WARN
            message = f'{reached}, {result.error:.4f} m from it'
            values.update({
                'reached': result.reached, 'error_m': f'{result.error:.6f}',
                'iterations': result.iterations,
                'solve_time_ms': f'{1e3 * stats.total_seconds / max(stats.solves, 1):.3f}',
                'solve_time_max_ms': f'{1e3 * stats.max_seconds:.3f}',
            })
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
