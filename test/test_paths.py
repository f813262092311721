"""Target paths: where they are, how big, and that each lap closes."""

from fabrik_ros.paths import ellipse, figure_eight
import numpy as np

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
