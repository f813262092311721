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

"""Full-pose targets through the controller: what the node solves, reports and refuses."""

import math
from pathlib import Path

from fabrik_ros.chain import quaternion_from_rotation
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.controller import IkController, Settings, Target
from fabrik_ros.paths import rotation_angles
import numpy as np
import pytest
from test_controller import BASE

REPO = Path(__file__).resolve().parents[1]
# Three arm poses well inside the limits: their tool frames are reachable full poses.
POSES = [np.array([0.3, 0.5, 0.9, -0.4, 0.7, 0.2]), np.array([-0.6, -0.3, 1.4, 0.8, -0.9, 1.0]),
         np.array([1.2, 0.7, 0.4, -1.1, 1.2, -0.5])]


@pytest.fixture(name='arm', scope='module')
def arm_fixture():
    """Return the 6-DOF demo arm."""
    return chain_from_parameters(load_config(REPO / 'config' / 'arm.yaml'), REPO)


def quaternion(frame: np.ndarray) -> np.ndarray:
    """Return the x, y, z, w quaternion of a (4, 4) frame's rotation."""
    return quaternion_from_rotation(frame[:3, :3])


def controller(arm, **values) -> IkController:
    return IkController(Settings.from_parameters(arm, {**BASE, 'tolerance': 1e-4,
                                                       'max_iterations': 100,
                                                       'max_restarts': 24, **values}),
                        0.0, command_period=None, feedback=False)


@pytest.mark.parametrize('pose', range(len(POSES)))
def test_a_full_pose_target_brings_the_tool_frame_onto_it(arm, pose):
    goal = arm.tip_pose(POSES[pose])
    ik = controller(arm)
    update = ik.on_target(None, Target(goal[:3, 3], quaternion(goal)), 0.0)
    tool = arm.tip_pose(update.command.position)  # FK of what is sent
    assert np.linalg.norm(tool[:3, 3] - goal[:3, 3]) <= 1e-4
    assert rotation_angles(tool[:3, :3], goal[:3, :3]) <= 1e-3 + 1e-9
    assert ik.result.reached
    status = ik.status(0.0, 1.0)
    assert float(status.values['orientation_error_rad']) == pytest.approx(
        ik.result.orientation_error, abs=1e-6)
    assert status.values['orientation_mode'] == 'full'
    assert 'deg off in orientation' in status.message


def test_axis_mode_points_the_tool_and_leaves_its_roll_free(arm):
    goal = arm.tip_pose(POSES[1])
    rolled = goal.copy()
    roll = math.radians(70.0)
    rolled[:3, :3] = goal[:3, :3] @ np.array([[math.cos(roll), -math.sin(roll), 0.0],
                                              [math.sin(roll), math.cos(roll), 0.0],
                                              [0.0, 0.0, 1.0]])
    ik = controller(arm, orientation_mode='axis')
    update = ik.on_target(None, Target(rolled[:3, 3], quaternion(rolled)), 0.0)
    tool = arm.tip_pose(update.command.position)
    assert np.degrees(np.arccos(np.clip(tool[:3, 2] @ rolled[:3, 2], -1, 1))) < 0.06
    assert ik.result.reached


def test_position_targets_solve_exactly_as_without_orientations(arm):
    """A PointStamped (no orientation), or orientation_mode position, ignores orientations."""
    goal = arm.tip_pose(POSES[2])
    plain = controller(arm).on_target(None, Target(goal[:3, 3]), 0.0).command.position
    ignored = controller(arm, orientation_mode='position').on_target(
        None, Target(goal[:3, 3], np.array([0.0, 0.0, 0.0, 1.0])), 0.0).command.position
    assert np.array_equal(plain, ignored)
    ik = controller(arm, orientation_mode='position')
    ik.on_target(None, Target(goal[:3, 3], np.array([0.0, 0.0, 0.0, 1.0])), 0.0)
    assert 'orientation_error_rad' not in ik.status(0.0, 1.0).values, 'ignored: no error'
    ik = controller(arm)
    ik.on_target(None, Target(goal[:3, 3]), 0.0)
    assert 'orientation_error_rad' not in ik.status(0.0, 1.0).values


def test_an_unreachable_pose_reports_both_errors(arm):
    goal = arm.tip_pose(POSES[0])
    ik = controller(arm)
    update = ik.on_target(None, Target(goal[:3, 3] * 3.0, quaternion(goal)), 0.0)
    assert not ik.result.reached
    assert np.all(update.command.position >= arm.lower)
    assert np.all(update.command.position <= arm.upper)
    kind, text = update.warnings[0]
    assert kind == 'reach' and 'm remaining' in text and 'deg off in orientation' in text


@pytest.mark.parametrize('values, reason', [
    ({'orientation_mode': 'roll'}, 'orientation_mode must be one of full, axis, position'),
    ({'tool_axis': [0.0, 0.0, 0.0]}, 'tool_axis must be a direction'),
    ({'tool_axis': [1.0, 0.0]}, 'tool_axis must be a direction'),
    ({'tool_axis': [math.nan, 0.0, 1.0]}, 'tool_axis must be a direction'),
])
def test_unusable_orientation_settings_are_refused_by_name(arm, values, reason):
    with pytest.raises(ValueError, match=reason):
        Settings.from_parameters(arm, {**BASE, **values})


def test_the_tool_axis_is_normalised(arm):
    assert Settings.from_parameters(arm, {**BASE, 'tool_axis': [0.0, 2.0, 0.0]}).tool_axis == (
        0.0, 1.0, 0.0)


def test_the_target_frame_shown_is_the_targets_pose_or_its_position_at_the_commanded_turn(arm):
    """What a draggable marker shows: the target in force, by identity of the target taken."""
    goal = arm.tip_pose(POSES[0])
    ik = controller(arm)
    assert np.allclose(ik.tool_frames()[0], arm.tip_pose(arm.neutral()))  # before any command
    oriented = Target(goal[:3, 3], quaternion(goal))
    ik.on_target(None, oriented, 0.0)
    assert ik.effector_of(oriented) == 0
    assert ik.effector_of(Target(goal[:3, 3].copy())) is None  # an equal one is not it
    assert np.allclose(ik.target_frame(0), goal)
    assert np.allclose(ik.tool_frames()[0], arm.tip_pose(ik.stream.position))
    point = Target(arm.tip_pose(POSES[1])[:3, 3])
    ik.on_target(None, point, 0.0)
    shown = ik.target_frame(0)
    assert np.allclose(shown[:3, 3], point.position)
    assert np.allclose(shown[:3, :3], arm.tip_pose(ik.stream.position)[:3, :3])
