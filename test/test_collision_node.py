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
The node's obstacles: markers of ~/obstacles as obstacles, and the controller's solves clear.

CUBE, SPHERE and CYLINDER markers become Box, Sphere and Cylinder in the controller's frame
by (ns, id); DELETE and DELETEALL remove them; other markers are refused in one line each;
a controller given obstacles never reaches a target inside one.
"""

from fabrik_ros.collision import Box, Cylinder, Sphere
from fabrik_ros.controller import IkController, Target
from fabrik_ros.messages import TargetError
import numpy as np
import pytest

markers = pytest.importorskip('visualization_msgs.msg', reason='needs ROS messages')
Marker = markers.Marker


def marker(kind: int, key: int, scale=(0.2, 0.2, 0.2), xyz=(0.5, 0.0, 0.3),
           action: int = 0, frame: str = 'base_link', ns: str = 'scene') -> object:
    """Return a Marker of `kind` with the pose's orientation left all zero."""
    message = Marker(type=kind, id=key, ns=ns, action=action)
    message.header.frame_id = frame
    message.scale.x, message.scale.y, message.scale.z = scale
    message.pose.position.x, message.pose.position.y, message.pose.position.z = xyz
    return message


def in_base(pose: np.ndarray, frame: str) -> np.ndarray:
    """Map base_link poses as they are and 'table' ones 1 m up; refuse any other frame."""
    if frame == 'base_link':
        return pose
    if frame == 'table':
        moved = pose.copy()
        moved[2, 3] += 1.0
        return moved
    raise TargetError(f"no transform from '{frame}'")


def test_cubes_spheres_and_cylinders_become_obstacles_by_namespace_and_id():
    from fabrik_ros.node_obstacles import updated
    obstacles = {}
    problems = updated(obstacles, [
        marker(Marker.CUBE, 0, (0.4, 0.3, 0.02)),
        marker(Marker.SPHERE, 1, (0.1, 0.1, 0.1), frame='table'),
        marker(Marker.CYLINDER, 2, (0.1, 0.14, 0.8)),
    ], in_base)
    assert problems == []
    box, sphere, cylinder = (obstacles[('scene', key)] for key in range(3))
    assert isinstance(box, Box) and box.size_xyz == (0.4, 0.3, 0.02)
    np.testing.assert_allclose(box.pose, [[1, 0, 0, 0.5], [0, 1, 0, 0], [0, 0, 1, 0.3],
                                          [0, 0, 0, 1]])
    assert isinstance(sphere, Sphere) and sphere.radius == pytest.approx(0.05)
    assert sphere.center == pytest.approx((0.5, 0.0, 1.3))
    assert isinstance(cylinder, Cylinder)
    assert (cylinder.radius, cylinder.length) == pytest.approx((0.07, 0.8))


def test_delete_removes_one_and_deleteall_every_one_before_it():
    from fabrik_ros.node_obstacles import updated
    obstacles = {}
    updated(obstacles, [marker(Marker.CUBE, key) for key in range(3)], in_base)
    updated(obstacles, [marker(Marker.CUBE, 1, action=Marker.DELETE)], in_base)
    assert sorted(obstacles) == [('scene', 0), ('scene', 2)]
    updated(obstacles, [marker(Marker.SPHERE, 9), marker(Marker.CUBE, 0, action=Marker.DELETEALL),
                        marker(Marker.SPHERE, 4)], in_base)
    assert sorted(obstacles) == [('scene', 4)]


def test_other_markers_are_refused_in_one_line_and_leave_the_rest():
    from fabrik_ros.node_obstacles import updated
    obstacles = {}
    problems = updated(obstacles, [
        marker(Marker.ARROW, 0), marker(Marker.CUBE, 1, (0.0, 0.1, 0.1)),
        marker(Marker.SPHERE, 2, frame='camera'), marker(Marker.SPHERE, 3)], in_base)
    assert len(problems) == 3 and all('\n' not in problem for problem in problems)
    assert 'CUBE, SPHERE or CYLINDER' in problems[0]
    assert 'scale' in problems[1] and "'camera'" in problems[2]
    assert sorted(obstacles) == [('scene', 3)]


def test_a_controller_with_obstacles_never_reaches_into_one():
    from test_controller import make_settings, serial_arm
    model = serial_arm()
    controller = IkController(make_settings(model), 0.0, command_period=None, feedback=False)
    target = model.tip_position(model.neutral() + 0.3)
    controller.set_obstacles([Sphere(0.05, center=tuple(target))])
    update = controller.on_target(0, Target(target), 0.0)
    result = controller.result
    assert not result.reached
    assert result.clearance >= 0.01
    assert result.closest_pair[1] == 'obstacle 0 (sphere)'
    # Said as it is: held clear of the sphere, not out of reach.
    (kind, warning), = update.warnings
    assert 'held' in warning and 'obstacle 0 (sphere)' in warning
    assert 'out of reach' not in warning
    status = controller.status(0.0, 1.0)
    assert 'obstacle 0 (sphere)' in status.message
    assert float(status.values['clearance_m']) == pytest.approx(result.clearance, abs=1e-4)
    assert status.values['closest_pair'].endswith('obstacle 0 (sphere)')
