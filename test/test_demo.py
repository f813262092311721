"""The main job: the demo's plan, and a short real run of ik_node + sim_arm over DDS."""

import json
import os
from pathlib import Path
import subprocess
import sys

from fabrik_ros.config import chain_from_parameters, load_config
from fabrik_ros.demo import (branch_lengths, DEFAULT_DOMAIN_ID, MODES, ros_environment,
                             TargetPlan, Tracker)
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 120.0  # seconds for a short demo, node start-up on a busy machine included


def mode_chain(mode: str):
    """Return the chain of a mode's config file."""
    return chain_from_parameters(load_config(REPO / 'config' / MODES[mode]), REPO)


@pytest.mark.parametrize('mode', sorted(MODES))
def test_plan_moves_holds_then_leaves_every_reach(mode: str) -> None:
    """Smooth paths first, then a hold, then targets no pose can reach."""
    chain = mode_chain(mode)
    plan = TargetPlan.for_mode(chain, mode, 8.0)
    assert plan.duration == 8.0
    times = np.arange(0.0, plan.moving_time, 0.02)
    path = np.array([plan.targets(t) for t in times])
    assert path.shape == (len(times), len(chain.effectors), 3)
    assert np.max(np.linalg.norm(np.diff(path, axis=0), axis=2)) < 0.01, 'no jumps'
    assert np.ptp(path, axis=0).max() > 0.02, 'the targets move'
    hold = plan.moving_time + 0.5
    assert plan.phase(hold) == 1
    assert np.array_equal(plan.targets(hold), plan.targets(plan.moving_time))
    assert plan.phase(plan.duration - 0.1) == 2
    _, bounds = branch_lengths(chain)
    distances = np.linalg.norm(plan.targets(plan.duration - 0.1), axis=1)
    assert np.all(distances > bounds), 'out-of-reach targets lie beyond every tip'


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


def run_demo(mode: str, duration: float, folder: Path, *options: str) -> tuple[str, dict]:
    """Run the demo as README's first command does; return its output and summary."""
    summary_path = folder / 'summary.json'
    process = subprocess.run(
        [sys.executable, '-m', 'fabrik_ros.demo', '--mode', mode, '--duration', str(duration),
         '--summary-json', str(summary_path), '--record', str(folder / 'run.npz'), *options],
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    output = process.stdout + process.stderr
    assert process.returncode == 0, output
    assert f'summary ({mode}, {MODES[mode]}, {duration:.1f} s)' in process.stdout, output
    return output, json.loads(summary_path.read_text())


def assert_out_of_reach_reported(summary: dict, output: str) -> None:
    """Check the last targets are reported unreachable, measured and reported alike."""
    beyond = summary['out_of_reach']
    assert beyond['node_reached'] is False, output
    assert beyond['remaining_m'] > 0.2 * beyond['reach_bound_m'], output
    assert beyond['node_remaining_m'] == pytest.approx(beyond['remaining_m'], abs=0.005)
    assert 'out of reach        unreachable' in output


def test_single_mode_demo_tracks_the_figure_eight_and_reports_out_of_reach(
        tmp_path: Path) -> None:
    """A short real run: the commands hit the moving targets, the arm follows and settles."""
    output, summary = run_demo('single', 7.0, tmp_path)
    # The IK node's commands put the tip on each moving target (FK of the commanded joints).
    assert summary['commands_scored'] > 100, output
    assert summary['ik_error_mm']['median'] < 0.1, output  # the node's tolerance
    assert summary['reached_fraction'] >= 0.95, output  # within 1 mm
    # The velocity-limited arm lags the moving target a little, and arrives once it holds.
    assert summary['arm_error_mm']['median'] < 10.0, output
    assert summary['arm_error_holding_mm'] < 1.0, output
    assert_out_of_reach_reported(summary, output)

    pytest.importorskip('matplotlib', reason='matplotlib draws the pictures')
    picture = tmp_path / 'run.png'
    subprocess.run([sys.executable, '-m', 'fabrik_ros.render', str(tmp_path / 'run.npz'),
                    '-o', str(picture)], cwd=REPO, check=True, timeout=RUN_TIMEOUT)
    assert picture.read_bytes().startswith(b'\x89PNG') and picture.stat().st_size > 20_000


@pytest.mark.parametrize('mode', ['double', 'spider'])
def test_tree_modes_drive_every_effector(mode: str, tmp_path: Path) -> None:
    """
    Double and Spider: one target topic per tip, every tip arrives, then stretches.

    Errors are the max over the tips: all of them arrive while the targets hold, then all
    stretch toward targets out of reach.
    """
    output, summary = run_demo(mode, 7.0, tmp_path)
    assert summary['commands_scored'] > 30, output
    assert summary['ik_error_mm']['median'] < 1.0, output
    assert summary['arm_error_holding_mm'] < 1.0, output
    assert_out_of_reach_reported(summary, output)


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


def test_spider_free_body_slides_toward_the_far_target(tmp_path: Path) -> None:
    """A short real run: the body follows the drift, then slides; the other feet stay."""
    output, summary = run_demo('spider', 7.0, tmp_path, '--free-body')
    body = summary['free_body']
    plan = TargetPlan.for_mode(mode_chain('spider'), 'spider', 7.0, free_body=True)
    assert body['position_m'][0] > plan.drift[0], output  # drifted, then slid on
    assert body['other_feet_max_mm'] < 20.0, output  # weighted: they hold their targets
    assert summary['arm_error_holding_mm'] < 1.0, output
    assert_out_of_reach_reported(summary, output)
    assert 'free body           travelled' in output


def test_environment_keeps_dds_on_loopback_and_a_chosen_domain() -> None:
    """Loopback is forced; the caller's domain is kept, else the demo's own is set."""
    env = ros_environment({'ROS_LOCALHOST_ONLY': '0', 'ROS_DOMAIN_ID': '7'})
    assert env['ROS_LOCALHOST_ONLY'] == '1'
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['ROS_DOMAIN_ID'] == '7'
    assert ros_environment({})['ROS_DOMAIN_ID'] == DEFAULT_DOMAIN_ID
    assert str(REPO) in ros_environment({})['PYTHONPATH'].split(os.pathsep)
