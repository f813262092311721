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

"""The draggable RViz target: its controls, its feedback, and the server it runs on."""

from pathlib import Path
from typing import Any

from fabrik_ros import target_markers
from fabrik_ros.chain import rotation_from_quaternion
from fabrik_ros.target_markers import pose_from_feedback, six_dof_marker, TargetMarkers
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
import numpy as np
import pytest
from visualization_msgs.msg import InteractiveMarkerControl, InteractiveMarkerFeedback
import yaml

POSE = Pose(position=Point(x=0.4, y=0.1, z=0.3), orientation=Quaternion(x=1.0, w=0.0))


def quaternion(orientation: Quaternion) -> np.ndarray:
    return np.array([orientation.x, orientation.y, orientation.z, orientation.w])


def test_marker_has_six_axis_controls_turning_with_it_and_a_free_handle():
    marker = six_dof_marker('tool0', 'base_link', POSE, 0.25)
    assert (marker.name, marker.header.frame_id, marker.scale) == ('tool0', 'base_link', 0.25)
    assert marker.pose == POSE
    assert marker.header.stamp.sec == marker.header.stamp.nanosec == 0, 'latest transform'
    controls = {control.name: control for control in marker.controls}
    assert set(controls) == {'move_3d', 'move_x', 'move_y', 'move_z',
                             'rotate_x', 'rotate_y', 'rotate_z'}
    for index, axis in enumerate('xyz'):
        for verb, mode in (('move', InteractiveMarkerControl.MOVE_AXIS),
                           ('rotate', InteractiveMarkerControl.ROTATE_AXIS)):
            control = controls[f'{verb}_{axis}']
            assert control.interaction_mode == mode
            assert control.orientation_mode == InteractiveMarkerControl.INHERIT
            # A control acts along its own x axis: it must be the marker's axis.
            control_x = rotation_from_quaternion(quaternion(control.orientation))[:, 0]
            assert np.allclose(control_x, np.eye(3)[index])
            assert np.linalg.norm(quaternion(control.orientation)) == pytest.approx(1.0)
    handle = controls['move_3d']
    assert handle.interaction_mode == InteractiveMarkerControl.MOVE_ROTATE_3D
    assert handle.always_visible and len(handle.markers) == 1


def feedback(event_type: int, name: str = 'tool0',
             client_id: str = '/rviz') -> InteractiveMarkerFeedback:
    msg = InteractiveMarkerFeedback(marker_name=name, event_type=event_type, pose=POSE,
                                    client_id=client_id)
    msg.header.frame_id = 'base_link'
    return msg


def test_a_dragged_pose_becomes_a_target_pose_and_clicks_do_not():
    target = pose_from_feedback(feedback(InteractiveMarkerFeedback.POSE_UPDATE))
    assert isinstance(target, PoseStamped)
    assert target.header.frame_id == 'base_link' and target.pose == POSE
    for event in (InteractiveMarkerFeedback.MOUSE_DOWN, InteractiveMarkerFeedback.MOUSE_UP,
                  InteractiveMarkerFeedback.KEEP_ALIVE, InteractiveMarkerFeedback.BUTTON_CLICK):
        assert pose_from_feedback(feedback(event)) is None


class Logger:
    """Collects what a node would log."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, line: str) -> None:
        self.lines.append(line)


class NodeWithoutServer:
    """Stands in for the node: without interactive_markers nothing else of it is touched."""

    def __init__(self) -> None:
        self.logger = Logger()

    def get_logger(self) -> Logger:
        return self.logger


def test_without_interactive_markers_the_node_logs_one_line_and_goes_on(monkeypatch):
    monkeypatch.setattr(target_markers, 'InteractiveMarkerServer', None)
    node = NodeWithoutServer()
    assert TargetMarkers.start(node, 'base_link', ['tool0'], [POSE], 0.2,
                               lambda pose, effector: None) is None
    assert len(node.logger.lines) == 1
    assert 'interactive_markers is not installed' in node.logger.lines[0]


@pytest.fixture
def server_node(ros_context: Any):
    """Give an rclpy node, with interactive_markers installed (else skip)."""
    if target_markers.InteractiveMarkerServer is None:
        pytest.skip('interactive_markers is not installed (a ROS package, not on PyPI): '
                    'the draggable target is tested where it is')
    from rclpy.node import Node
    node = Node('target_markers_test', context=ros_context)
    yield node
    node.destroy_node()


def test_served_markers_send_dragged_poses_to_their_effector(server_node):
    """Feedback goes through the real server (as RViz's would) to the target callback."""
    received: list[tuple[PoseStamped, int]] = []
    markers = TargetMarkers.start(server_node, 'base_link',
                                  ['left_hand', 'right_hand'], [Pose(), Pose()], 0.2,
                                  lambda pose, effector: received.append((pose, effector)))
    assert isinstance(markers, TargetMarkers)
    server = markers._server
    assert server_node.count_publishers('/target_markers_test/target/update') == 1
    assert server_node.count_subscribers('/target_markers_test/target/feedback') == 1
    # The server takes a new client's feedback only a second after the last one's, and a
    # new marker counts as touched by client '': that client drags it here.
    for event in (InteractiveMarkerFeedback.POSE_UPDATE, InteractiveMarkerFeedback.MOUSE_UP):
        server.processFeedback(feedback(event, 'right_hand', client_id=''))
    assert [(pose.pose, effector) for pose, effector in received] == [(POSE, 1)]
    assert server.get('right_hand').pose == POSE, 'the server keeps the dragged pose'

    moved = Pose(position=Point(x=-0.2, y=0.3, z=0.1), orientation=Quaternion(w=1.0))
    markers.move(0, moved)
    assert server.get('left_hand').pose == moved
    markers.shutdown()
    assert server.get('left_hand') is None


def test_rviz_config_shows_the_ik_nodes_markers_next_to_the_goal_tool():
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / 'rviz' / 'arm.rviz')
                            .read_text())['Visualization Manager']
    displays = {d['Class']: d for d in config['Displays']}
    namespace = displays['rviz_default_plugins/InteractiveMarkers'][
        'Interactive Markers Namespace']
    assert namespace == '/ik_node' + target_markers.NAMESPACE.removeprefix('~')
    assert displays['rviz_default_plugins/MarkerArray']['Topic']['Value'] == '/ik_node/markers'
    tools = {tool['Class']: tool for tool in config['Tools']}
    assert 'rviz_default_plugins/Interact' in tools, 'the tool that drags the marker'
    assert tools['rviz_default_plugins/SetGoal']['Topic']['Value'] == '/goal_pose'
