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
The command stream's motion bound is never above the clearance along the motion.

StreamBounds.motion_bound (fabrik_ros.stream_bounds) bounds every checked pair along a
straight joint motion from a measured check: by the joints' reaches, and for the pairs
below the level asked for also by their separating planes (first order, within a second
order term). Checked against the clearance sampled densely along random motions near
random measured configurations of the real arms among the obstacles, with every pair's
plane asked for (an infinite level), with none (the reaches alone), and sharpened up to
the anchor's own distance (what a slowdown keeps) from its first motion on. The pairs' bounds it
starts from are lower bounds too: carried from check to check (their rows' fall since),
and where the balls bound them again the larger of that and the balls'.
"""

from fabrik_ros.collision.nearest import exact
from fabrik_ros.controller import IkController
import numpy as np
import pytest
from test_collision_descriptions import ROBOTS, SCENE
from test_controller import make_settings

SAMPLES = 33        # clearance samples along a motion
TOLERANCE = 1e-9    # m


def _check(chain):
    """Return the stream's collision check of a controller of chain among SCENE."""
    controller = IkController(make_settings(chain), 0.0, command_period=0.01, feedback=False)
    controller.set_obstacles(SCENE)
    check = controller.collision
    assert check.update(controller)
    return check


@pytest.mark.parametrize('name', list(ROBOTS))
def test_the_motion_bound_is_never_above_the_clearance_along_the_motion(name):
    chain = ROBOTS[name]()
    check = _check(chain)
    bounds, model, scene = check._kinematics, check._model, check._scene
    generator = np.random.default_rng(3)
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    sharpened = 0
    for _ in range(30):
        anchor = check._evaluate(generator.uniform(low, high))
        for size in (0.005, 0.02, 0.05, 0.15):
            start = anchor.q + generator.uniform(-size, size, len(low))
            end = start + generator.uniform(-size, size, len(low))
            least = min(model.min_distance(chain.world_frames(start + t * (end - start)), scene)
                        for t in np.linspace(0.0, 1.0, SAMPLES))
            by_planes = bounds.motion_bound(anchor, start, end, np.inf)
            by_reaches = bounds.motion_bound(anchor, start, end, -np.inf)
            anchor.sharpened = None     # as measured: its first motion decides
            kept = bounds.motion_bound(anchor, start, end, -np.inf, anchor.distance)
            assert by_planes <= least + TOLERANCE
            assert by_reaches <= least + TOLERANCE
            assert kept <= least + TOLERANCE
            sharpened += by_planes > by_reaches
    assert sharpened > 0    # the planes were in force somewhere


@pytest.mark.parametrize('name', list(ROBOTS))
def test_every_pairs_bound_carried_along_a_walk_stays_below_its_distance(name):
    chain = ROBOTS[name]()
    check = _check(chain)
    rows = check._rows
    generator = np.random.default_rng(5)
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    q, carried, again = generator.uniform(low, high), 0, 0
    for step in range(80):
        measured = check._evaluate(q)   # from the check before it (its anchor)
        distances = [exact(rows, measured.points, pair) for pair in range(len(rows.pairs))]
        assert np.all(measured.pairs <= np.array(distances) + TOLERANCE)
        carried += measured.worn > 0.0
        again += step > 0 and measured.worn == 0.0
        check._anchor = measured
        q = np.clip(q + generator.uniform(-0.004, 0.004, len(q)), low, high)
    assert carried > 0 and again > 0   # bounds carried, and the balls' taken again


@pytest.mark.parametrize('name', list(ROBOTS))
def test_a_link_point_strays_from_its_first_order_motion_by_at_most_the_second_order(name):
    chain = ROBOTS[name]()
    check = _check(chain)
    bounds, rows = check._kinematics, check._rows
    generator = np.random.default_rng(7)
    low, high = np.maximum(chain.lower, -np.pi), np.minimum(chain.upper, np.pi)
    axes = np.eye(3).tolist()
    closest = 0.0   # the largest share of its bound a point's deviation takes
    for _ in range(40):
        anchor = check._evaluate(generator.uniform(low, high))
        dq = generator.uniform(-1.0, 1.0, len(low)) * generator.choice([0.01, 0.1, 0.4])
        moved = check._evaluate(anchor.q + dq)
        frames = bounds._frames(anchor)
        second = bounds.curvature(np.abs(dq).tolist())
        for body in range(rows.bodies):
            allowed = 0.5 * float(bounds.joint_reach[body] @ second)
            for end in (0, 1):
                before, after = (_end(check.points, rows.bodies, body, end)
                                 for check in (anchor, moved))
                speeds = [bounds._normal_speeds(frames, axis, [before], body)[0]
                          for axis in axes]
                first_order = before + np.array(speeds) @ dq
                strayed = float(np.linalg.norm(after - first_order))
                assert strayed <= allowed + TOLERANCE
                closest = max(closest, strayed / allowed if allowed > 0.0 else 0.0)
    assert closest > 0.2    # and not loose: some point comes near it


def _end(points: list, bodies: int, body: int, end: int) -> np.ndarray:
    """Return a body's segment start (0) or end (1) from placed points (base frame)."""
    start = np.array([axis[body] for axis in points])
    return start + end * np.array([axis[bodies + body] for axis in points])
