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
Launch the IK node with a simulated arm, robot_state_publisher and RViz.

    ros2 launch fabrik_ros arm.launch.py                          # 6-DOF demo arm in RViz
    ros2 launch fabrik_ros arm.launch.py config:=tentacle.yaml    # any file in config/, or a path
    ros2 launch fabrik_ros arm.launch.py sim:=false rviz:=false namespace:=left_arm
    ros2 launch fabrik_ros arm.launch.py config:=spider.yaml params:=spider_free_body.yaml
                                                                  # overlays, comma-separated

Then click RViz's Publish Point tool in the scene, or:
    ros2 topic pub --once target_pose geometry_msgs/msg/PoseStamped \
        "{header: {frame_id: base_link},
          pose: {position: {x: 0.3, z: 0.4}, orientation: {x: 1.0, w: 0.0}}}"  # tool down

Topics with sim:=true: ik_node publishes its commands on `joint_commands`; sim_arm follows
them within the joint velocity limits and publishes the measured `joint_states`, which
robot_state_publisher turns into TF. With sim:=false, ik_node publishes its commands on
`joint_states` directly (unless the config names a joint_command_topic or feedback_topic).
With RViz, ik_node takes RViz's Publish Point, 2D Goal Pose and its draggable interactive
marker as targets (rviz_targets), unless the config drives hardware (joint_trajectory or
forward_command outputs) or sets rviz_targets itself; under a namespace, RViz publishes
them in it.
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
from fabrik_ros.config import load_config, robot_description
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
from launch.conditions import evaluate_condition_expression
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'fabrik_ros'
# Topics in rviz/arm.rviz, moved under the namespace when one is given.
# The draggable target's server (fabrik_ros.target_markers) is two topics and a service.
RVIZ_TOPICS = ('/robot_description', '/ik_node/markers', '/goal_pose', '/clicked_point',
               '/ik_node/target/update', '/ik_node/target/feedback',
               '/ik_node/target/get_interactive_markers')
HARDWARE_OUTPUTS = {'joint_trajectory', 'forward_command'}  # ros2_control controllers


def is_installed(package: str) -> bool:
    """Tell whether the ament index knows `package`."""
    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def resolve_config(value: str, share_dir: Path, argument: str = 'config') -> Path:
    """Return the parameters file: a path as given, or a file name in the package's config/."""
    for candidate in (Path(value).expanduser(), share_dir / 'config' / value):
        if candidate.is_file():
            return candidate.absolute()
    known = sorted(str(path.relative_to(share_dir / 'config'))
                   for path in (share_dir / 'config').rglob('*.yaml'))
    raise FileNotFoundError(f"{argument} '{value}' is neither a file nor one of {known}")


def resolve_overlays(value: str, share_dir: Path) -> list[Path]:
    """Return the overlay files of a comma-separated `params` argument, in order."""
    return [resolve_config(name.strip(), share_dir, 'params')
            for name in value.split(',') if name.strip()]


def flag(context: LaunchContext, name: str) -> bool:
    """Return the boolean value of launch argument `name` ('true'/'false', '1'/'0')."""
    return evaluate_condition_expression(context, [LaunchConfiguration(name)])


def launch_nodes(context: LaunchContext) -> list:
    """Return the nodes for the performed launch arguments."""
    share_dir = Path(get_package_share_directory(PACKAGE))
    config = resolve_config(LaunchConfiguration('config').perform(context), share_dir)
    overlays = resolve_overlays(LaunchConfiguration('params').perform(context), share_dir)
    namespace = LaunchConfiguration('namespace').perform(context).strip('/')
    sim = flag(context, 'sim')
    params = load_config(config)
    for overlay in overlays:  # each over the ones before, as --params-file does
        params.update(load_config(overlay))
    files = [str(path) for path in (config, *overlays)]

    overrides = {}
    if not (sim or 'joint_command_topic' in params or params.get('feedback_topic')):
        overrides['joint_command_topic'] = 'joint_states'  # the commands are the state
    if 'rviz_targets' not in params:
        overrides['rviz_targets'] = (flag(context, 'rviz')
                                     and not HARDWARE_OUTPUTS & set(params.get('outputs', [])))
    actions = [
        LogInfo(msg=f'fabrik_ros: config {", ".join(files)}'),
        Node(package=PACKAGE, executable='ik_node', namespace=namespace,
             parameters=[*files, overrides], output='screen'),
    ]
    if sim:
        actions.append(Node(package=PACKAGE, executable='sim_arm', namespace=namespace,
                            parameters=files, output='screen'))

    if is_installed('robot_state_publisher'):
        urdf = robot_description(params, share_dir, robot_name=config.stem)
        actions.append(Node(
            package='robot_state_publisher', executable='robot_state_publisher',
            namespace=namespace, output='screen',
            parameters=[{'robot_description': ParameterValue(urdf, value_type=str)}]))
    else:
        actions.append(LogInfo(msg='robot_state_publisher is not installed: no TF and no '
                                   'robot_description topic (the IK node does not need them)'))

    if flag(context, 'rviz'):
        if is_installed('rviz2'):
            remappings = [(topic, f'/{namespace}{topic}') for topic in RVIZ_TOPICS
                          if namespace]
            actions.append(Node(
                package='rviz2', executable='rviz2', namespace=namespace, output='log',
                arguments=['-d', str(share_dir / 'rviz' / 'arm.rviz'),
                           '-f', params['base_link']],
                remappings=remappings))
        else:
            actions.append(LogInfo(msg='rviz2 is not installed: running without RViz '
                                       '(rviz:=false silences this)'))
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the launch arguments and start the nodes they select."""
    return LaunchDescription([
        DeclareLaunchArgument(
            'config', default_value='arm.yaml',
            description='Parameters file: a file name in the package config/ folder '
                        '(arm.yaml, tentacle.yaml, ...) or a path'),
        DeclareLaunchArgument(
            'params', default_value='',
            description='Parameter overlays over config, comma-separated, applied in order: '
                        'file names in the package config/ folder or paths'),
        DeclareLaunchArgument(
            'rviz', default_value='true', choices=['true', 'false'],
            description='Start RViz with rviz/arm.rviz'),
        DeclareLaunchArgument(
            'sim', default_value='true', choices=['true', 'false'],
            description='Start sim_arm: ik_node commands joint_commands, sim_arm publishes '
                        'joint_states'),
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of every node and topic (several arms in one graph)'),
        OpaqueFunction(function=launch_nodes),
    ])
