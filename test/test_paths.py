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

"""Target paths: where they are, how big, and that each lap closes."""

from fabrik_ros.chain import rotation_about_axis
from fabrik_ros.paths import ellipse, figure_eight, pointing_sweep, rotation_angles
import numpy as np
import pytest

CENTER = np.array([0.3, -0.1, 0.5])
AXES = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # the y-z plane


def test_figure_eight_crosses_itself_at_the_centre_and_spans_its_size() -> None:
    """Width along the first axis, height along the second, centre crossed twice a lap."""
    times = np.linspace(0.0, 4.0, 4001)
    points = figure_eight(times, CENTER, AXES, width=0.2, height=0.1, period=4.0)
    assert np.allclose(points[:, 0], CENTER[0]), 'stays in its plane'
    assert np.allclose(np.ptp(points, axis=0)[1:], [0.2, 0.1], atol=1e-6)
    assert np.allclose(points[[0, 2000, 4000]], CENTER)
    assert np.allclose(points[0], points[-1])


def test_ellipse_phase_shifts_along_the_lap() -> None:
    """Half a lap of phase is half a period later; the centre is never on the path."""
    times = np.linspace(0.0, 2.0, 201)
    first = ellipse(times, CENTER, AXES, 0.06, 0.04, period=2.0)
    second = ellipse(times, CENTER, AXES, 0.06, 0.04, period=2.0, phase=np.pi)
    assert np.allclose(second[:101], first[100:])
    radii = (first - CENTER)[:, 1:] / [0.03, 0.02]
    assert np.allclose(np.hypot(*radii.T), 1.0)


def test_pointing_sweep_tilts_the_tool_axis_around_and_back_while_it_rolls() -> None:
    """Starts and ends on the nominal frame; mid-way the axis is `tilt` off; no jumps."""
    nominal = rotation_about_axis([1.0, 0.0, 0.0], 2.0)  # a tool pointing down-ish
    times = np.linspace(0.0, 6.0, 301)  # 50 Hz
    frames = pointing_sweep(times, nominal, tilt=0.5, roll=0.7, period=6.0, turns=2)
    assert frames.shape == (301, 3, 3)
    assert np.allclose(frames @ np.swapaxes(frames, 1, 2), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(frames), 1.0)
    assert np.allclose(frames[[0, -1]], nominal, atol=1e-12)
    axis_tilt = np.arccos(np.clip(frames[:, :, 2] @ nominal[:, 2], -1.0, 1.0))
    assert axis_tilt.max() == pytest.approx(0.5)
    assert axis_tilt[150] == pytest.approx(0.5), 'the most tilted half-way'
    # Two turns: the tilted axis points to every side of the nominal one.
    sideways = (frames[:, :, 2] - nominal[:, 2]) @ nominal[:, :2]
    directions = np.arctan2(sideways[1:-1, 1], sideways[1:-1, 0])
    assert np.ptp(directions) > 6.0
    # The roll about the tool axis turns the frame more than the tilt alone.
    assert rotation_angles(frames[75], nominal) > axis_tilt[75] + 0.3
    steps = rotation_angles(frames[1:], frames[:-1])
    assert steps.max() < 0.05, 'smooth: under 3 degrees per 20 ms sample'
    assert np.allclose(pointing_sweep(np.array([-1.0, 7.0]), nominal, 0.5, 0.7, 6.0), nominal)


@pytest.mark.parametrize('angle', [0.0, 1e-7, 0.3, np.pi / 2, np.pi - 1e-7, np.pi])
def test_rotation_angles_are_the_turn_between_two_frames(angle: float) -> None:
    base = rotation_about_axis([0.0, 0.6, 0.8], 1.1)
    turned = base @ rotation_about_axis([0.48, 0.6, 0.64], angle)
    assert rotation_angles(turned, base) == pytest.approx(angle, abs=1e-9)
    assert np.allclose(rotation_angles(np.array([turned, base]), np.array([base, base])),
                       [angle, 0.0], atol=1e-9)
