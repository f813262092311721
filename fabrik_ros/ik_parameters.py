"""
The IK node's parameters: names, defaults, descriptors (ranges, read-only) and checks.

Per-joint limits (`joint_limits.<joint>.<field>`), per-effector weights
(`effector_weights.<effector>`) and `command_joints` depend on the chain and are declared
once it is known.
"""

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

OUTPUTS = ('joint_state', 'joint_trajectory', 'forward_command')
HARDWARE_OUTPUTS = ('joint_trajectory', 'forward_command')  # for ros2_control controllers
LIMIT_UNITS = {'min_position': 'radians', 'max_position': 'radians', 'max_velocity': 'rad/s',
               'max_acceleration': 'rad/s^2'}  # of joint_limits.<joint>.<field>
MIN_TIMER_RATE = 0.01  # Hz: a slower publish or marker timer is a typo (and 1e-300 overflows)
TIMER_RATES = {'publish_rate', 'marker_rate'}  # parameters that set a timer's rate


def descriptor(description: str, *, read_only: bool = False,
               float_range: tuple[float, float] | None = None,
               int_range: tuple[int, int] | None = None) -> ParameterDescriptor:
    """Return a parameter descriptor with an optional float or integer range."""
    result = ParameterDescriptor(description=description, read_only=read_only)
    if float_range is not None:
        result.floating_point_range = [
            FloatingPointRange(from_value=float_range[0], to_value=float_range[1])]
    if int_range is not None:
        result.integer_range = [IntegerRange(from_value=int_range[0], to_value=int_range[1])]
    return result


# name -> (default, descriptor); per-joint limits are declared once the chain is known.
NODE_PARAMETERS = {
    'robot_description': ('', descriptor(
        'URDF XML of the robot; empty: use robot_description_file, the chain.* description, '
        'or else the robot_description topic', read_only=True)),
    'robot_description_file': ('', descriptor(
        'URDF file, relative to the package share directory (or absolute)', read_only=True)),
    'base_link': ('base_link', descriptor(
        'Root link of the chain; targets in this frame are used as they are',
        read_only=True)),
    'tip_links': (['tool0'], descriptor(
        'End-effector links, one per branch of the chain', read_only=True)),
    'tolerance': (1e-4, descriptor(
        'Target reached when the tip is this close, metres', float_range=(1e-7, 1.0))),
    'orientation_mode': ('full', descriptor(
        'What the orientation of a PoseStamped target fixes: full (the tool frame takes it), '
        'axis (the tool points along its tool_axis, the roll about that axis free) or '
        'position (orientations ignored); PointStamped targets are position-only')),
    'orientation_tolerance': (1e-3, descriptor(
        'Target reached when the tool frame is also this close in angle, radians',
        float_range=(1e-6, 3.14159))),
    'tool_axis': ([0.0, 0.0, 1.0], descriptor(
        "The tool's pointing axis in its tip link frame for orientation_mode axis, "
        '[x, y, z], normalised')),
    'max_iterations': (100, descriptor(
        'Iteration cap of one solve', int_range=(1, 10000))),
    'target_window': (0.005, descriptor(
        'Trees: targets that arrive within this time of the first unsolved one are solved '
        "together, once (the effectors' targets of one moment), seconds; 0: each target at "
        'once, as a single effector always is (its newest target is all there is to solve)',
        float_range=(0.0, 0.1))),
    'max_restarts': (24, descriptor(
        'Solves from other seeds when one stalls short of a target; 0 keeps every solution '
        'on the branch of the last one (no jumps), at the cost of missing some targets',
        int_range=(0, 1000))),
    'outputs': (['joint_state'], descriptor(
        'Command outputs, any of: joint_state (sensor_msgs/JointState on '
        'joint_command_topic), joint_trajectory (trajectory_msgs/JointTrajectory on '
        '~/joint_trajectory), forward_command (std_msgs/Float64MultiArray on ~/commands)',
        read_only=True)),
    'joint_command_topic': ('joint_commands', descriptor(
        'Topic of the sensor_msgs/JointState commands (joint_states: the node alone shows '
        'the arm in RViz; nothing else may publish joint_states then)', read_only=True)),
    'rviz_targets': (False, descriptor(
        'Also take targets from RViz: clicked_point (Publish Point) and goal_pose (2D Goal '
        'Pose), relative names (namespaced arms keep to their own)', read_only=True)),
    'command_rate': (0.0, descriptor(
        'Command stream rate, Hz, shaped by the velocity and acceleration limits; 0: '
        'publish each solution at once', float_range=(0.0, 1000.0), read_only=True)),
    'publish_rate': (10.0, descriptor(
        'With command_rate 0: re-publish the last command, go on with moves held back by '
        'max_joint_step and check the watchdogs at this rate, Hz (0: only when a target is '
        'solved)', float_range=(0.0, 1000.0))),
    'default_max_velocity': (1.0, descriptor(
        'Velocity limit of joints the model gives none, rad/s', float_range=(1e-3, 100.0),
        read_only=True)),
    'default_max_acceleration': (5.0, descriptor(
        'Acceleration limit of every joint unless joint_limits.<joint>.max_acceleration '
        'says otherwise, rad/s^2', float_range=(1e-3, 1000.0), read_only=True)),
    'max_joint_step': (float('inf'), descriptor(
        'Last guard: no joint moves further than this between two commands, radians')),
    'feedback_topic': ('', descriptor(
        'Measured sensor_msgs/JointState to warm-start from and hold on when stale; '
        'empty: no feedback', read_only=True)),
    'feedback_timeout': (0.5, descriptor(
        'Feedback older than this is stale: hold, seconds', float_range=(0.01, 60.0))),
    'target_timeout': (0.0, descriptor(
        'Hold when the newest target is older than this, seconds (0: never)',
        float_range=(0.0, 3600.0))),
    'start_enabled': (True, descriptor(
        'Send commands from the start; false: only after ~/enable', read_only=True)),
    'marker_rate': (10.0, descriptor(
        'Publish ~/markers at this rate, Hz (0: off)', float_range=(0.0, 100.0))),
    'solve_timeout': (0.0, descriptor(
        "Time budget of one solve, seconds, like MoveIt's kinematics_solver_timeout: when it "
        'runs out the best pose found is used (diagnostics: timed_out); 0: none',
        float_range=(0.0, 10.0))),
    'root': ('pinned', descriptor(
        'pinned: the base stays; free: it slides toward the targets too, like the end of a '
        'rope (a body walking toward a far target). Free: targets are taken in odom_frame and '
        'the body pose is published as TF odom_frame -> base_link and on ~/body_pose',
        read_only=True)),
    'odom_frame': ('odom', descriptor(
        'With root free: the fixed frame the body moves in (TF parent of base_link)',
        read_only=True)),
    'max_body_velocity': (0.5, descriptor(
        'With root free: the body pose heads for the solved one at most this fast, m/s',
        float_range=(1e-3, 100.0))),
}


COMMAND_JOINTS_DESCRIPTOR = descriptor(
    'Joint order of ~/commands (the forward_command_controller joints); the chain order '
    'unless set')


def weight_descriptor(effector: str) -> ParameterDescriptor:
    """Describe effector_weights.<effector>."""
    return descriptor(
        f'Weight of {effector} where targets conflict over shared joints or a free body: the '
        'solver minimises the sum of weight * distance^2; 0: the default (1 with a target, '
        '1e4 without one: it holds its pose)', float_range=(0.0, 1e6))


def limit_descriptor(joint: str, field: str) -> ParameterDescriptor:
    """Describe joint_limits.<joint>.<field>."""
    return descriptor(f'{field.replace("_", " ").capitalize()} of {joint}, {LIMIT_UNITS[field]}'
                      + ('' if field == 'max_acceleration' else '; may only narrow the model'))


def check_timer_rate(name: str, rate: float) -> None:
    """Raise ValueError unless a timer rate (Hz) is 0 (off) or at least MIN_TIMER_RATE."""
    if 0.0 < rate < MIN_TIMER_RATE:
        raise ValueError(f'{name} must be 0 (off) or at least {MIN_TIMER_RATE} Hz, got {rate}')
