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
The node's scene: obstacles from parameters, and the obstacles shown on ~/markers.

A parameters file lists `obstacles` and describes each under `obstacle.<name>.*` (URDF's
shapes, a pose as xyz, xyz + rpy or xyz + quaternion, a frame); every bad entry is refused in
one line naming its parameter, and the rest of the scene is kept. The node keeps the
scene's obstacles and those of ~/obstacles apart (a DELETEALL there leaves the scene), hands
both to its solves, and draws both on ~/markers as ~/obstacles would take them back.
"""

import math

from fabrik_ros.collision import Box, Cylinder, Sphere
from fabrik_ros.config import load_config
from fabrik_ros.ik_node import IkNode
from fabrik_ros.model.rotations import rotation_from_quaternion, rotation_from_rpy
from fabrik_ros.scene import scene_obstacles
from hypothesis import given, settings, strategies as st
import numpy as np
import pytest
from test_ik_node_inprocess import ARM_FILE, REPO_ROOT

markers = pytest.importorskip('visualization_msgs.msg', reason='needs ROS messages')
Marker, MarkerArray = markers.Marker, markers.MarkerArray

TABLE = {'obstacle.table.type': 'box', 'obstacle.table.size': [1.2, 0.8, 0.04],
         'obstacle.table.pose': [0.0, 0.5, -0.02]}
PILLAR = {'obstacle.pillar.type': 'cylinder', 'obstacle.pillar.radius': 0.05,
          'obstacle.pillar.length': 1,  # integers are metres too
          'obstacle.pillar.pose': [0.3, 0.2, 0.5, 0.0, 0.0, 1.0],
          'obstacle.pillar.frame_id': 'base_link'}
BALL = {'obstacle.ball.type': 'sphere', 'obstacle.ball.radius': 0.1,
        'obstacle.ball.pose': [0.4, 0.0, 0.3, 0.0, 0.0, 0.0, 2.0]}


def test_boxes_cylinders_and_spheres_come_as_urdf_describes_them():
    scene, problems = scene_obstacles(['table', 'pillar', 'ball'],
                                      {**TABLE, **PILLAR, **BALL, 'tolerance': 1e-4})
    assert problems == []
    table, pillar, ball = scene
    assert [item.name for item in scene] == ['table', 'pillar', 'ball']
    assert table.obstacle == Box((1.2, 0.8, 0.04))
    np.testing.assert_allclose(table.obstacle.pose[:3, 3], [0.0, 0.5, -0.02])
    np.testing.assert_allclose(table.obstacle.pose[:3, :3], np.eye(3))
    assert isinstance(pillar.obstacle, Cylinder) and pillar.frame_id == 'base_link'
    assert (pillar.obstacle.radius, pillar.obstacle.length) == (0.05, 1.0)
    np.testing.assert_allclose(pillar.obstacle.pose[:3, :3], rotation_from_rpy([0, 0, 1.0]))
    assert ball.obstacle == Sphere(0.1, center=(0.4, 0.0, 0.3)) and ball.frame_id == ''


@given(st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
    lambda q: np.linalg.norm(q) > 0.1))
@settings(max_examples=30, deadline=None)
def test_a_pose_quaternion_is_normalised_and_rpy_turns_as_in_urdf(quaternion):
    (item,), problems = scene_obstacles(['box'], {
        'obstacle.box.type': 'box', 'obstacle.box.size': [0.1, 0.2, 0.3],
        'obstacle.box.pose': [0.1, 0.2, 0.3, *quaternion]})
    assert problems == []
    turn = rotation_from_quaternion(np.array(quaternion) / np.linalg.norm(quaternion))
    np.testing.assert_allclose(item.obstacle.pose[:3, :3], turn, atol=1e-12)


BALL_AT = {'obstacle.ball.type': 'sphere', 'obstacle.ball.radius': 0.1}


@pytest.mark.parametrize('names, values, culprit', [
    (['cone'], {'obstacle.cone.type': 'cone'}, 'obstacle.cone: type must be one of'),
    (['box'], {'obstacle.box.type': 'box', 'obstacle.box.size': [0.1, 0.2]},
     'obstacle.box: size must be [x, y, z]'),
    (['box'], {'obstacle.box.type': 'box', 'obstacle.box.size': [0.1, -0.2, 0.1]},
     'obstacle.box: Box size must be a finite positive length'),
    (['ball'], {'obstacle.ball.type': 'sphere', 'obstacle.ball.size': [0.1]},
     'obstacle.ball: a sphere takes radius; missing radius; not size'),
    (['ball'], {**BALL_AT, 'obstacle.ball.radius': 'big'},
     'obstacle.ball: radius must be a positive number of metres'),
    (['ball'], {**BALL_AT, 'obstacle.ball.pose': [0.0, 0.0]},
     'obstacle.ball: pose must be [x, y, z]'),
    (['ball'], {**BALL_AT, 'obstacle.ball.pose': [0.0] * 7}, 'has no orientation'),
    (['ball'], {**BALL_AT, 'obstacle.ball.pose': [0.0, math.nan, 0.0]},
     'pose must be finite'),
    (['ball'], {**BALL_AT, 'obstacle.ball.frame': 'world'},
     "obstacle.ball.frame: unknown field 'frame', 'ball' left out"),
    ([], {'obstacle.wall.type': 'box', 'obstacle.wall.size': [1, 1, 1]},
     "obstacle.wall.*: 'wall' is not in obstacles ['table']"),
    (['table'], {}, "obstacles: 'table' is listed twice"),
    (['a.b'], {}, "obstacles: 'a.b' is no name"),
])
def test_each_bad_entry_is_refused_in_one_line_naming_it_and_the_rest_kept(
        names, values, culprit):
    scene, problems = scene_obstacles(['table', *names], {**TABLE, **values})
    assert len(problems) == 1 and '\n' not in problems[0], problems
    assert culprit in problems[0]
    assert [item.name for item in scene] == ['table']


def test_an_obstacles_list_that_is_no_list_of_names_is_said_once():
    scene, problems = scene_obstacles('table', TABLE)
    assert scene == [] and problems == ["obstacles must be a list of names, got 'table'"]


def test_the_scene_overlay_is_a_clean_scene():
    values = load_config(REPO_ROOT / 'config' / 'overlays' / 'scene.yaml')
    scene, problems = scene_obstacles(values['obstacles'], values)
    assert problems == [] and [item.name for item in scene] == values['obstacles']


# ---- the node ---------------------------------------------------------------------------

class Recorder:
    """A logger that keeps what it is told, by level."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {'info': [], 'warning': [], 'error': []}

    def __getattr__(self, level: str):
        return self.lines.setdefault(level, []).append


class LoggedNode(IkNode):
    """An IkNode whose log lines the test reads."""

    def get_logger(self) -> Recorder:
        if not hasattr(self, 'recorder'):
            self.recorder = Recorder()
        return self.recorder


class Publisher:
    """Stands in for ~/markers' publisher, with a subscriber on the other end."""

    def __init__(self) -> None:
        self.sent: list[MarkerArray] = []
        self.publish = self.sent.append

    def get_subscription_count(self) -> int:
        return 1


def shown(node: IkNode) -> list:
    """Return the obstacle markers of the node's next ~/markers."""
    node._marker_pub = Publisher()
    node._publish_markers()
    (array,) = node._marker_pub.sent
    return [marker for marker in array.markers if marker.ns == 'obstacles']


def test_the_node_solves_clear_of_its_scene_and_shows_it(make_node):
    node = make_node(LoggedNode, **ARM_FILE, obstacles=['table', 'pillar', 'ball'],
                     **TABLE, **PILLAR, **BALL)
    assert node.recorder.lines['error'] == []
    assert [type(o) for o in node._controller.obstacles] == [Box, Cylinder, Sphere]
    assert node.get_parameter('obstacle.pillar.radius').value == 0.05  # ros2 param get
    cube, cylinder, sphere = shown(node)
    assert (cube.type, cylinder.type, sphere.type) == (Marker.CUBE, Marker.CYLINDER,
                                                       Marker.SPHERE)
    assert cube.header.frame_id == 'base_link'
    assert (cube.scale.x, cube.scale.y, cube.scale.z) == pytest.approx((1.2, 0.8, 0.04))
    assert (cylinder.scale.x, cylinder.scale.z) == pytest.approx((0.1, 1.0))
    assert sphere.scale.x == pytest.approx(0.2)
    assert (sphere.pose.position.x, sphere.pose.position.z) == pytest.approx((0.4, 0.3))


def test_bad_entries_are_logged_once_each_and_the_node_keeps_the_rest(make_node):
    node = make_node(LoggedNode, **ARM_FILE, obstacles=['table', 'cone', 'ball'], **TABLE,
                     **BALL, **{'obstacle.cone.type': 'cone', 'obstacle.ball.colour': 'red',
                                'obstacle.wall.type': 'box'})
    errors = node.recorder.lines['error']
    assert len(errors) == 3 and all(line.startswith('obstacle refused: ') for line in errors)
    assert [type(o) for o in node._controller.obstacles] == [Box]
    assert len(shown(node)) == 1


def test_topic_obstacles_come_and_go_beside_the_scene(make_node):
    node = make_node(LoggedNode, **ARM_FILE, obstacles=['table'], **TABLE)
    sphere = Marker(type=Marker.SPHERE, ns='sensor', id=3, action=Marker.ADD)
    sphere.header.frame_id = 'base_link'
    sphere.scale.x = sphere.scale.y = sphere.scale.z = 0.1
    sphere.pose.position.x = 0.5
    node._obstacles._on_markers(MarkerArray(markers=[sphere]))
    assert [type(o) for o in node._controller.obstacles] == [Box, Sphere]
    assert node._controller.obstacle_names == ('table', 'sensor/3')  # messages name them
    assert [m.type for m in shown(node)] == [Marker.CUBE, Marker.SPHERE]
    node._obstacles._on_markers(MarkerArray(markers=[Marker(action=Marker.DELETEALL)]))
    assert [type(o) for o in node._controller.obstacles] == [Box]  # the scene stays
    assert [m.type for m in shown(node)] == [Marker.CUBE]


def test_a_scene_frame_tf2_does_not_know_is_waited_for_and_said_once(make_node):
    node = make_node(LoggedNode, **ARM_FILE, obstacles=['table', 'shelf'], **TABLE,
                     **{'obstacle.shelf.type': 'box', 'obstacle.shelf.size': [0.3, 0.3, 0.3],
                        'obstacle.shelf.frame_id': 'world'})
    (warning,) = node.recorder.lines['warning']
    assert "obstacle 'shelf' waits for its frame" in warning and "'world'" in warning
    assert [type(o) for o in node._controller.obstacles] == [Box]
    node._obstacles._resolve()  # the retry timer's call: not said again
    assert len(node.recorder.lines['warning']) == 1


@given(st.sampled_from(['box', 'sphere', 'cylinder']),
       st.lists(st.floats(0.01, 2.0), min_size=3, max_size=3),
       st.lists(st.floats(-2.0, 2.0), min_size=6, max_size=6))
@settings(max_examples=40, deadline=None)
def test_markers_shown_are_what_obstacles_takes_back(kind, sizes, pose):
    from builtin_interfaces.msg import Time
    from fabrik_ros.node_obstacles import obstacle_markers, updated
    fields = {'box': {'size': sizes}, 'sphere': {'radius': sizes[0]},
              'cylinder': {'radius': sizes[0], 'length': sizes[1]}}[kind]
    (item,), _ = scene_obstacles(['it'], {'obstacle.it.type': kind, 'obstacle.it.pose': pose,
                                          **{f'obstacle.it.{k}': v for k, v in fields.items()}})
    held = {}
    assert updated(held, obstacle_markers([item.obstacle], 'base_link', Time()),
                   lambda pose, frame: pose) == []
    (back,) = held.values()
    assert back == item.obstacle
    np.testing.assert_allclose(back.pose, item.obstacle.pose, atol=1e-9)


def test_the_demo_scores_against_the_node_s_own_default_margin():
    from fabrik_ros.demo_scene import DEFAULT_MARGIN, MARGIN
    from fabrik_ros.ik_parameters import NODE_PARAMETERS
    assert NODE_PARAMETERS[MARGIN][0] == DEFAULT_MARGIN
