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
The IK node's parameters: names, defaults, descriptors (ranges, read-only) and checks.

Per-joint limits (`joint_limits.<joint>.<field>`), per-effector weights
(`effector_weights.<effector>`) and `command_joints` depend on the chain and are declared
once it is known. The checks here are what no descriptor range can say; they raise
ValueError with the reason, which the node reports (at start-up, or refusing a change).
"""

from collections.abc import Mapping

from fabrik_ros.chain import Chain
from fabrik_ros.config import CHAIN_PARAMETERS, LIMIT_FIELDS, LIMITS_PREFIX
from fabrik_ros.ik import ROOT_MODES
from fabrik_ros.settings import model_limits, SETTING_NAMES, WEIGHTS_PREFIX
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

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
    'robot_description_semantic': ('', descriptor(
        'SRDF XML of the robot (as MoveIt takes it): its disable_collisions pairs are not '
        'checked for self-collision; applies to a robot_description parameter or topic',
        read_only=True)),
    'self_collision': (True, descriptor(
        'Keep the links apart from each other where the description gives them collision '
        'geometry; false: check obstacles only')),
    # An empty list has no element type for rclpy to infer: the names are checked instead.
    'obstacles': ([], ParameterDescriptor(
        description='Names of static obstacles, each described by obstacle.<name>.* (type '
        'box, sphere or cylinder; size, radius, length; pose; frame_id): kept clear of '
        'with those of ~/obstacles', read_only=True, dynamic_typing=True)),
    'collision_margin': (0.01, descriptor(
        'Distance every checked pair (links, obstacles) keeps in a reached answer, metres',
        float_range=(0.0, 1.0))),
    'collision_slowdown_distance': (0.1, descriptor(
        'The command stream slows the joints that approach a checked pair within this '
        'distance beyond collision_margin, to a stop at the margin, metres; 0: only the stop',
        float_range=(0.0, 10.0))),
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
    # Velocity commands (fabrik_ros.node_jog): taken by the next jogging that starts.
    'jog_timeout': (0.1, descriptor(
        'Jog commands (~/delta_twist_cmds, ~/delta_joint_cmds) older than this are stale: '
        'the arm brakes to rest, seconds', float_range=(0.001, 10.0))),
    'jog_frame': ('', descriptor(
        'Frame of a twist whose header frame is empty: the base link, a tip link or any tf2 '
        "frame; '': the tool frame of the effector jogged")),
    'jog_pass_condition': (17.0, descriptor(
        'A jogged direction passes whole while the Jacobian condition number (largest over '
        'its singular value) is below this and fades out smoothly to nothing at the '
        'singularity', float_range=(1.5, 1e6))),
    'jog_length_scale': (1.0, descriptor(
        "Metres per radian weighing a twist's rotation against its translation when "
        'directions fade near a singularity; smaller keeps the tool point on its course '
        'through a wrist singularity at the expense of its orientation',
        float_range=(1e-3, 100.0))),
    'jog_posture_gain': (1.0, descriptor(
        'How fast a redundant arm drifts toward mid-range in the null space while it jogs, '
        '1/s (0: no drift)', float_range=(0.0, 100.0))),
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


def declare_node_parameters(node: Node) -> None:
    """Declare the parameters every IK node has (the chain's come with the chain)."""
    node.declare_parameters('', [(name, default, desc) for name, (default, desc)
                                 in NODE_PARAMETERS.items()])
    node.declare_parameters('', [(name, default, descriptor(text, read_only=True))
                                 for name, (default, text) in CHAIN_PARAMETERS.items()])


def check_body_timer(values: Mapping[str, object]) -> None:
    """Raise ValueError when a free body would have no timer to move on."""
    if values['root'] == 'free' and values['publish_rate'] == 0.0 \
            and values['command_rate'] == 0.0:
        raise ValueError('root free moves the body on the publish timer: publish_rate or '
                         'command_rate must be above 0')


def check_start(values: Mapping[str, object], feedback_is_command: bool) -> None:
    """
    Raise ValueError naming a start-up configuration that cannot work.

    values: the node's parameters; feedback_is_command: feedback_topic and
    joint_command_topic resolve to the same topic.
    """
    if values['root'] not in ROOT_MODES:
        raise ValueError(f'root must be one of {list(ROOT_MODES)}, got {values["root"]!r}')
    check_body_timer(values)
    outputs = set(values['outputs'])
    unknown = sorted(outputs - set(OUTPUTS))
    if unknown:
        raise ValueError(f'outputs {unknown} unknown; choose from {list(OUTPUTS)}')
    to_hardware = sorted(outputs & set(HARDWARE_OUTPUTS))
    if to_hardware and not values['feedback_topic']:
        raise ValueError(f'outputs {to_hardware} drive an arm: set feedback_topic to its '
                         'measured joint states, so that commands start where the arm is '
                         '(without it the node could only assume a pose)')
    if values['feedback_topic'] and 'joint_state' in outputs and feedback_is_command:
        raise ValueError(f'feedback_topic and joint_command_topic are both '
                         f"'{values['joint_command_topic']}': the node would take its own "
                         'commands for the measured state')
    for name in TIMER_RATES:  # check_update checks later changes
        check_timer_rate(name, values[name])


def check_update(values: Mapping[str, object], updates: Mapping[str, object]) -> None:
    """Raise ValueError when updates to the parameters `values` break a timer."""
    for name in TIMER_RATES & updates.keys():
        check_timer_rate(name, updates[name])
    if 'publish_rate' in updates:
        check_body_timer({**values, **updates})


def chain_dependent(name: str) -> bool:
    """Tell whether a parameter is declared per chain (what the user set is kept for a new one)."""
    return name.startswith((LIMITS_PREFIX, WEIGHTS_PREFIX)) or name == 'command_joints'


def user_set_chain_parameters(node: Node) -> dict[str, object]:
    """Return the chain-dependent parameters the user set at start-up (params file, -p)."""
    return {name: value for name, value in parameter_overrides(node, '').items()
            if chain_dependent(name)}


def parameter_overrides(node: Node, prefix: str) -> dict[str, object]:
    """
    Return the parameters named `prefix`... the user set at start-up, declared or not.

    rclpy has no public way to read overrides of parameters that are not declared yet
    (Humble through Rolling: only declare_parameter consults them, and
    automatically_declare_parameters_from_overrides declares every override untyped).
    Per-chain names may come later from robot_description, and the scene's obstacle.*
    names from its list; a misspelled one must be refused by name, so this reads
    Node._parameter_overrides, the dict every rclpy since Foxy fills in Node.__init__.
    Kept to this one place.
    """
    return {name: override.value for name, override in node._parameter_overrides.items()
            if name.startswith(prefix)}


def setting_values(model: Chain, current: Mapping[str, object],
                   user_set: Mapping[str, object],
                   updates: Mapping[str, object]) -> dict[str, object]:
    """
    Return the parameters Settings are made of for `model`.

    current: the SETTING_NAMES parameters as they are; then the model's limits, what the
    user set (limits, weights) and the updates being applied, each over the one before.
    """
    values = {name: current[name] for name in SETTING_NAMES}
    values.update(model_limits(model, values['default_max_velocity'],
                               values['default_max_acceleration']))
    values.update((name, value) for name, value in user_set.items()
                  if name.startswith((LIMITS_PREFIX, WEIGHTS_PREFIX)))
    values.update(updates)
    return values


def chain_declarations(model: Chain, values: Mapping[str, object]) -> list[tuple]:
    """Return (name, value, descriptor) of the model's per-joint and per-effector parameters."""
    limits = [(f'{LIMITS_PREFIX}{joint}.{field}', values[f'{LIMITS_PREFIX}{joint}.{field}'],
               limit_descriptor(joint, field))
              for joint in model.joint_names for field in LIMIT_FIELDS]
    weights = [(f'{WEIGHTS_PREFIX}{name}', float(values.get(f'{WEIGHTS_PREFIX}{name}', 0.0)),
                weight_descriptor(name)) for name in model.effector_names]
    return limits + weights


# What each parameter type is, in words, for refusals of a value of the wrong type.
TYPE_WORDS = {
    Parameter.Type.NOT_SET: 'unset', Parameter.Type.BOOL: 'true or false',
    Parameter.Type.INTEGER: 'an integer',
    Parameter.Type.DOUBLE: 'a floating-point number (with a decimal point: 1.0, not 1)',
    Parameter.Type.STRING: 'a string', Parameter.Type.BYTE_ARRAY: 'a list of bytes',
    Parameter.Type.BOOL_ARRAY: 'a list of true/false',
    Parameter.Type.INTEGER_ARRAY: 'a list of integers',
    Parameter.Type.DOUBLE_ARRAY: 'a list of floating-point numbers',
    Parameter.Type.STRING_ARRAY: 'a list of strings'}


def _type_refusal(name: str, expected: Parameter.Type, parameter: Parameter) -> str:
    """Say that `parameter` has the wrong type for `name`, in words."""
    return (f'{name} must be {TYPE_WORDS[expected]}, got {parameter.value!r} '
            f'({TYPE_WORDS[parameter.type_]})')


def _unknown_parameter(name: str, model: Chain | None) -> str:
    """Say why `name` is no parameter of the node (a joint or effector the chain has not)."""
    joint, _, field = name[len(LIMITS_PREFIX):].rpartition('.')
    if model is None:
        return f'{name}: no such parameter (no chain yet: per-joint ones come with it)'
    if name.startswith(LIMITS_PREFIX) and joint not in model.joint_names:
        return f"{name}: unknown joint '{joint}'; joints: {model.joint_names}"
    if name.startswith(LIMITS_PREFIX):
        return f"{name}: unknown field '{field}', expected one of {list(LIMIT_FIELDS)}"
    if name.startswith(WEIGHTS_PREFIX):
        return (f"{name}: unknown effector '{name[len(WEIGHTS_PREFIX):]}'; effectors: "
                f'{model.effector_names}')
    return f'{name}: no such parameter of the IK node'


def name_or_type_refusal(node: Node, parameters: list[Parameter], model: Chain | None
                         ) -> str | None:
    """
    Say why rclpy would refuse one of `parameters` by name or type; None: it would not.

    rclpy's own answers name nothing ("Invalid access to undeclared parameter(s): []",
    "expected '3' got '4'"): these name the parameter, and the type it needs in words.
    """
    for parameter in parameters:
        if not node.has_parameter(parameter.name):
            return _unknown_parameter(parameter.name, model)
        expected = node.get_parameter(parameter.name).type_
        if parameter.type_ not in (expected, Parameter.Type.NOT_SET) \
                and not node.describe_parameter(parameter.name).dynamic_typing:
            return _type_refusal(parameter.name, expected, parameter)
    return None
