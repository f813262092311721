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

"""The demo's plan and scoring: where the targets go and how commands are scored (no ROS)."""

from pathlib import Path

from fabrik_ros.chain import rotation_about_axis
from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.demo_plan import (branch_lengths, format_summary, MODES, ORIENTING_ROLL,
                                  ORIENTING_TILT, ready_pose, TargetPlan, Tracker)
from fabrik_ros.paths import rotation_angles
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def mode_chain(mode: str):
    """Return the chain of a mode's config file."""
    return chain_from_parameters(load_config(REPO / 'config' / MODES[mode]), REPO)


@pytest.mark.parametrize('mode', sorted(MODES))
def test_plan_moves_holds_then_leaves_every_reach(mode: str) -> None:
    """Smooth paths first, then a hold, then targets no pose can reach."""
    chain = mode_chain(mode)
    plan = TargetPlan.for_mode(chain, mode, 8.0)
    assert plan.duration == 8.0
    times = np.arange(0.0, plan.path_time, 0.02)
    path = np.array([plan.targets(t) for t in times])
    assert path.shape == (len(times), len(chain.effectors), 3)
    assert np.max(np.linalg.norm(np.diff(path, axis=0), axis=2)) < 0.01, 'no jumps'
    assert np.ptp(path, axis=0).max() > 0.02, 'the targets move'
    hold = plan.path_time + 0.5
    assert plan.phase(hold) == 2
    assert np.array_equal(plan.targets(hold), plan.targets(plan.path_time))
    assert plan.phase(plan.duration - 0.1) == 3
    _, bounds = branch_lengths(chain)
    distances = np.linalg.norm(plan.targets(plan.duration - 0.1), axis=1)
    assert np.all(distances > bounds), 'out-of-reach targets lie beyond every tip'


def test_the_arm_tool_keeps_its_ready_orientation_then_turns_on_the_moving_path() -> None:
    """The 6-DOF arm's targets are full poses; the tool turns while the path goes on."""
    chain = mode_chain('single')
    plan = TargetPlan.for_mode(chain, 'single', 20.0)
    assert plan.orienting_time == pytest.approx(0.4 * plan.path_time)
    assert plan.phase(plan.moving_time - 0.01) == 0 and plan.phase(plan.moving_time) == 1
    nominal = plan.tool_frames
    for t in (-1.0, 0.0, plan.moving_time / 2, plan.moving_time, plan.path_time,
              plan.duration - 0.1):
        assert np.allclose(plan.orientations(t), nominal), 'ready orientation outside'
    times = np.arange(plan.moving_time, plan.path_time, 0.02)
    frames = np.array([plan.orientations(t)[0] for t in times])
    off = rotation_angles(frames, nominal[0])
    assert off.max() > ORIENTING_TILT, 'the tool turns: tilted and rolled'
    assert off.max() < ORIENTING_TILT + ORIENTING_ROLL + 1e-9
    assert rotation_angles(frames[1:], frames[:-1]).max() < np.radians(2.0), 'no jumps'
    positions = np.array([plan.targets(t)[0] for t in times])
    assert np.ptp(positions, axis=0).max() > 0.02, 'the tool turns on the moving path'
    # The ready orientation is the tool's at the pose the path is centred on.
    assert np.allclose(nominal, chain.effector_poses(ready_pose(chain))[:, :3, :3])


@pytest.mark.parametrize('mode', ['double', 'spider'])
def test_trees_get_positions_only(mode: str) -> None:
    plan = TargetPlan.for_mode(mode_chain(mode), mode, 8.0)
    assert plan.orienting_time == 0.0 and plan.orientations(1.0) is None
    assert plan.phase(plan.moving_time) == 2, 'straight from moving to holding'


def test_spider_steps_in_a_tripod_gait() -> None:
    """Alternate legs are half a step cycle apart."""
    plan = TargetPlan.for_mode(mode_chain('spider'), 'spider', 8.0)
    assert np.allclose(plan.phases % (2 * np.pi), [0, np.pi] * 3)


def test_tracker_scores_commands_against_recent_targets() -> None:
    """A command answers one of the targets sent within RECENT; the arm the latest."""
    chain = mode_chain('single')
    tracker = Tracker(chain)
    q = chain.neutral()
    tip = chain.tip_position(q)
    tracker.sent(tip[np.newaxis] - [0.0, 0.0, 0.01], 0.0)
    tracker.sent(tip[np.newaxis], 0.1)
    tracker.sent(tip[np.newaxis] + [0.0, 0.0, 0.01], 0.2)
    tracker.command(q, 0)
    assert tracker.ik_errors[0] == [0.0]
    tracker.measured(q, 0)
    assert tracker.arm_errors[0] == [pytest.approx(0.01)]
    tracker.sent(tip[np.newaxis] + [0.0, 0.0, 0.02], 0.4)  # 0.1 and 0.2 s now too old
    tracker.command(q, 0)
    assert tracker.ik_errors[0][-1] == pytest.approx(0.01)
    assert np.isnan(tracker.orientation_errors[0][-1]), 'position-only targets'


def test_tracker_scores_a_free_body_command_with_the_body_pose_it_came_with() -> None:
    """The commanded feet sit where the body of that command puts them, not the latest."""
    chain = mode_chain('spider')
    tracker = Tracker(chain)
    q, body = chain.neutral(), np.array([0.2, 0.0, 0.0])
    tracker.sent(chain.effector_positions(q) + body, 0.0)
    tracker.body = body + [0.003, 0.0, 0.0]     # the latest pose, a step further
    tracker.command(q, 0, body)
    tracker.command(q, 0)
    assert tracker.ik_errors[0] == [0.0, pytest.approx(0.003)]


def test_tracker_scores_the_commanded_tool_frame_against_the_answered_target() -> None:
    """Of the recent targets, the one nearest in position and orientation is answered."""
    chain = mode_chain('single')
    tracker = Tracker(chain)
    q = chain.neutral()
    tip, frame = chain.tip_position(q)[np.newaxis], chain.effector_poses(q)[:, :3, :3]
    turned = frame @ rotation_about_axis([1.0, 0.0, 0.0], np.radians(3.0))
    tracker.sent(tip, 0.0, turned)  # right place, 3 degrees off
    tracker.sent(tip + [0.0, 0.0, 0.0005], 0.05, frame)  # 0.5 mm off, right orientation
    tracker.command(q, 1)
    assert tracker.ik_errors[1] == [pytest.approx(0.0005)]
    assert tracker.orientation_errors[1] == [pytest.approx(0.0, abs=1e-7)]
    tracker.sent(tip, 0.5, turned)  # the targets above are too old now
    tracker.sent(tip + [0.0, 0.0, 0.004], 0.55, frame)  # 4 mm off: the 3 degrees win
    tracker.command(q, 1)
    assert tracker.ik_errors[1][-1] == pytest.approx(0.0, abs=1e-12)
    assert tracker.orientation_errors[1][-1] == pytest.approx(np.radians(3.0))
    summary = tracker.summary(TargetPlan.for_mode(chain, 'single', 20.0))
    assert summary['orienting']['reached_fraction'] == 0.5, 'within 1 mm and 1 degree'
    assert summary['orienting']['orientation_error_deg']['max'] == pytest.approx(3.0)


def test_a_free_body_plan_drifts_then_sends_one_foot_far_ahead() -> None:
    """The feet's paths drift along +x; out of reach, only the first target leaves."""
    chain = mode_chain('spider')
    plan = TargetPlan.for_mode(chain, 'spider', 8.0, free_body=True)
    pinned = TargetPlan.for_mode(chain, 'spider', 8.0)
    end = plan.moving_time
    assert np.allclose(plan.targets(end) - pinned.targets(end), plan.drift)
    assert np.allclose(plan.targets(0.0), pinned.targets(0.0))
    beyond = plan.targets(plan.duration - 0.1)
    assert np.array_equal(beyond[1:], plan.targets(end)[1:])
    _, bounds = branch_lengths(chain)
    assert beyond[0][0] - plan.drift[0] > 2.0 * bounds[0], 'out of reach ahead, along +x'


def test_the_summary_reads_the_scores_of_every_phase() -> None:
    """The printed summary: the run, its errors per phase and what the node said beyond reach."""
    chain = mode_chain('single')
    plan = TargetPlan.for_mode(chain, 'single', 20.0)
    tracker = Tracker(chain)
    q = chain.neutral()
    tracker.sent(chain.tip_position(q)[np.newaxis] + [0.0, 0.0, 0.002], 0.0,
                 chain.effector_poses(q)[:, :3, :3])
    tracker.command(q, 0)
    tracker.measured(q, 3)
    tracker.diagnostics({'solve_rate_hz': '50', 'error_m': '0.5', 'reached': 'False',
                         'iterations': '7'}, counting=True)
    text = format_summary({**tracker.summary(plan), 'config': '/x/arm.yaml', 'exit_code': 0})
    lines = text.split('\n')
    assert lines[0] == 'summary (single, arm.yaml, 20.0 s)'
    assert '  IK error, moving    median 2.000 mm, max 2.000 mm' in lines
    assert '  reached (1 mm, 1 deg) 0.0 %' in lines
    assert any(line.startswith('  orienting           tool axis circling 20.1 deg off')
               for line in lines)
    assert '  out of reach        unreachable: 0.002 m remaining (node: 0.500 m)' in lines


# ---- the single-arm demo's scene ------------------------------------------------------------

def demo_scene():
    """Return the single mode's scene as the demo loads it over the arm's config."""
    from fabrik_ros.demo_scene import DemoScene, SCENES
    return DemoScene.load(REPO / 'config' / SCENES['single'],
                          load_config(REPO / 'config' / MODES['single']))


def test_the_pillar_stands_where_the_arm_without_the_scene_would_put_its_upper_arm() -> None:
    """
    The scene as the demo's summary says: clear answers go around what plain ones hit.

    Solved target after target as the node does, without the scene from its neutral pose
    (open loop) the arm passes through the pillar on most of the path; with the scene from
    the ready pose (where the demo starts it, closed loop) every answer reaches its target,
    on one branch, clear of the table and the pillar by more than the margin.
    """
    from fabrik_ros.chain import quaternion_from_rotation
    from fabrik_ros.ik import IkSolver
    chain, scene = mode_chain('single'), demo_scene()
    assert scene.names == ('table', 'pillar')
    plan = TargetPlan.for_mode(chain, 'single', 20.0)
    plain, clear = IkSolver(chain), IkSolver(chain, collision_margin=scene.margin)
    clear.set_obstacles(scene.obstacles)
    q_plain, q_clear = chain.neutral(), ready_pose(chain)
    hits, clearances, steps = [], [], []
    for t in np.arange(0.0, plan.path_time, 0.05):
        target = plan.targets(t)[0]
        orientation = quaternion_from_rotation(plan.orientations(t)[0])
        q_plain = plain.solve(target, seed=q_plain, orientation=orientation).q
        hits.append(chain.closest_pair(q_plain, scene.obstacles))
        result = clear.solve(target, seed=q_clear, orientation=orientation)
        assert result.reached, t
        steps.append(np.max(np.abs(result.q - q_clear)))
        q_clear = result.q
        clearances.append(chain.clearance(q_clear, scene.obstacles))
    through_pillar = [hit.distance < 0.0 and scene.label(hit.names[1]) == 'pillar'
                      for hit in hits]
    assert np.mean(through_pillar) > 0.9
    assert min(clearances) > 2.0 * scene.margin
    assert max(steps[1:]) < 0.2, 'no flip to another branch'


def test_the_scene_score_keeps_the_smallest_clearance_and_says_when_it_went_below() -> None:
    """Per kind and phase; the approach apart; the pair by the scene's names."""
    from fabrik_ros.demo_scene import ClearanceScore
    chain, scene = mode_chain('single'), demo_scene()
    plan = TargetPlan.for_mode(chain, 'single', 20.0)
    tracker = Tracker(chain, clearance=ClearanceScore(chain, scene))
    ready = ready_pose(chain)
    tracker.sent(chain.tip_position(ready)[np.newaxis], 0.0,
                 chain.effector_poses(ready)[:, :3, :3])
    into_pillar = chain.neutral()  # straight up, then leaning toward the pillar
    into_pillar[:3] = [0.8, 0.35, 0.0]
    assert chain.clearance(into_pillar, scene.obstacles) < 0.0
    tracker.measured(into_pillar, None)  # approaching: reported apart
    tracker.command(ready, 0)
    tracker.measured(ready, 0)
    summary = tracker.summary(plan)['scene']
    assert summary['below_margin'] == {'commands': 0, 'measured': 0}
    assert summary['commands']['min_m'] == summary['measured']['min_m'] > scene.margin
    assert summary['approach_measured']['min_m'] < 0.0
    assert summary['approach_measured']['pair'] == ['upper_arm', 'pillar']
    text = format_summary({**tracker.summary(plan), 'config': 'arm.yaml', 'exit_code': 0})
    assert '    margin            0.010 m: never below it' in text.split('\n')
    tracker.measured(into_pillar, 1)
    text = format_summary({**tracker.summary(plan), 'config': 'arm.yaml', 'exit_code': 0})
    assert 'BELOW it in 0 commands, 1 measurements' in text


def test_the_demo_scene_refuses_what_it_cannot_place(tmp_path: Path) -> None:
    """Obstacles in another frame than the base (no tf2 in the demo), or a bad entry."""
    from fabrik_ros.demo_scene import DemoScene
    path = tmp_path / 'scene.yaml'
    path.write_text('/**:\n  ros__parameters:\n    obstacles: [shelf]\n    obstacle:\n'
                    '      shelf: {type: sphere, radius: 0.1, frame_id: world}\n')
    with pytest.raises(ValueError, match=r"shelf.frame_id: .* 'base_link' only, got 'world'"):
        DemoScene.load(path, {})
    path.write_text('/**:\n  ros__parameters:\n    obstacles: [shelf]\n')
    with pytest.raises(ValueError, match='obstacle.shelf: type must be'):
        DemoScene.load(path, {})


def test_commands_are_scored_for_their_limits_and_steps_on_the_path() -> None:
    """A jump between two commands on the path shows; one past a limit is counted."""
    chain = mode_chain('single')
    tracker = Tracker(chain)
    q = ready_pose(chain)
    tracker.command(chain.neutral(), None)  # approaching: no step counted
    tracker.command(q, 0)
    tracker.command(q + 0.01, 1)
    past = q.copy()
    past[1] = chain.upper[1] + 0.1
    tracker.command(past, 3)  # out of reach: steps not counted, limits are
    joints = tracker.summary(TargetPlan.for_mode(chain, 'single', 20.0))['joints']
    assert joints == {'largest_step_rad': pytest.approx(0.01), 'outside_limits': 1}
