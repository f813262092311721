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
Smooth target paths for demos and tests: figure eights, ellipses, a turning tool.

Figure eights and ellipses lie in a plane; pointing_sweep turns a tool frame around its
axis and back.

Pure numpy (no ROS). Every path is a function of time, so a target stream can be
sampled at any rate and replayed exactly.
"""

from fabrik_ros.chain import rotation_about_axis
import numpy as np


def lissajous(times: np.ndarray, center: np.ndarray, axes: np.ndarray,
              amplitudes: tuple[float, float], frequencies: tuple[int, int],
              period: float, phases: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """
    Return points (k, 3), metres, of a Lissajous curve at ``times`` (k,) seconds.

    ``point = center + a0*sin(f0*w*t + p0)*axes[0] + a1*sin(f1*w*t + p1)*axes[1]`` with
    ``w = 2*pi/period``: ``axes`` (2, 3) span the plane of the curve.
    """
    angle = 2.0 * np.pi * np.asarray(times, dtype=float)[:, np.newaxis] / period
    coefficients = np.asarray(amplitudes) * np.sin(
        angle * np.asarray(frequencies) + np.asarray(phases))
    return np.asarray(center, dtype=float) + coefficients @ np.asarray(axes, dtype=float)


def figure_eight(times: np.ndarray, center: np.ndarray, axes: np.ndarray, width: float,
                 height: float, period: float, phase: float = 0.0) -> np.ndarray:
    """
    Return a figure eight ``width`` x ``height`` metres, one loop per ``period`` s.

    It crosses itself at ``center`` at t = 0 (plus ``phase`` radians of the loop).
    """
    return lissajous(times, center, axes, (width / 2.0, height / 2.0), (1, 2), period,
                     (phase, 2.0 * phase))


def ellipse(times: np.ndarray, center: np.ndarray, axes: np.ndarray, width: float,
            height: float, period: float, phase: float = 0.0) -> np.ndarray:
    """
    Return an ellipse ``width`` x ``height`` metres, one lap per ``period`` s.

    Like a foot's step cycle: with ``axes`` (forward, up) it lifts, swings and lands.
    """
    return lissajous(times, center, axes, (width / 2.0, height / 2.0), (1, 1), period,
                     (phase, phase + np.pi / 2.0))


def pointing_sweep(times: np.ndarray, rotation: np.ndarray, tilt: float, roll: float,
                   period: float, turns: int = 2) -> np.ndarray:
    """
    Return tool frames (k, 3, 3) at ``times`` (k,) seconds: the tool's z axis circles.

    Like a tool kept pointed at a point that spirals out of and back into its line of
    sight: the z axis of ``rotation`` (3, 3) tilts away by up to ``tilt`` radians and back
    (sin squared, no jerk at either end) while it goes ``turns`` times around its nominal
    direction, and the tool rolls about its own axis by up to +-``roll`` radians. At t = 0
    and t = ``period`` the frame is ``rotation``; times outside hold the ends.
    """
    fraction = np.clip(np.asarray(times, dtype=float) / period, 0.0, 1.0)
    frames = []
    for f in fraction:
        azimuth = 2.0 * np.pi * turns * f
        tilted = rotation_about_axis([np.cos(azimuth), np.sin(azimuth), 0.0],
                                     tilt * np.sin(np.pi * f) ** 2)
        rolled = rotation_about_axis([0.0, 0.0, 1.0], roll * np.sin(2.0 * np.pi * f))
        frames.append(rotation @ tilted @ rolled)
    return np.array(frames)


def rotation_angles(reached: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Return the angles (radians, in [0, pi]) between rotations (..., 3, 3), pairwise."""
    relative = np.swapaxes(target, -1, -2) @ reached
    cosine = (np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0
    sine = np.linalg.norm(relative - np.swapaxes(relative, -1, -2), axis=(-2, -1)) / (
        2.0 * np.sqrt(2.0))
    return np.arctan2(sine, cosine)
