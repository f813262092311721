"""
Smooth target paths for demos and tests: figure eights and ellipses in a plane.

Pure numpy (no ROS). Every path is a function of time, so a target stream can be
sampled at any rate and replayed exactly.
"""

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
