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

"""The main job: a short real run of ik_node + sim_arm over DDS, and its environment."""

import json
import os
from pathlib import Path
import subprocess
import sys

from fabrik_ros.demo import DEFAULT_DOMAIN_ID, parse_args, ros_environment
from fabrik_ros.demo_plan import MODES, TargetPlan
import pytest
from test_demo_plan import mode_chain

REPO = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 120.0  # seconds for a short demo, node start-up on a busy machine included


def run_demo(mode: str, duration: float, folder: Path, *options: str) -> tuple[str, dict]:
    """
    Run the demo as README's first command does; return its output and summary.

    The run gets a temporary directory of its own, which it must leave as it found it.
    """
    summary_path = folder / 'summary.json'
    scratch = folder / 'tmp'
    scratch.mkdir()
    process = subprocess.run(
        [sys.executable, '-m', 'fabrik_ros.demo', '--mode', mode, '--duration', str(duration),
         '--summary-json', str(summary_path), '--record', str(folder / 'run.npz'), *options],
        cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT,
        env={**os.environ, 'TMPDIR': str(scratch)})
    output = process.stdout + process.stderr
    assert process.returncode == 0, output
    free = ', free body' if '--free-body' in options else ''
    assert f'summary ({mode}{free}, {MODES[mode]}, {duration:.1f} s)' in process.stdout, output
    assert not list(scratch.iterdir()), 'the demo left its logs in the temporary directory'
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
    """A short real run: the commands hit the moving poses, the arm follows and settles."""
    output, summary = run_demo('single', 8.0, tmp_path)
    # The IK node's commands put the tip on each moving target (FK of the commanded joints).
    assert summary['commands_scored'] > 100, output
    assert summary['ik_error_mm']['median'] < 0.1, output  # the node's tolerance
    assert summary['reached_fraction'] >= 0.95, output  # within 1 mm and 1 degree
    # The tool keeps its orientation, then turns on the moving path, every command exact.
    assert summary['orientation_error_deg']['median'] < 0.06, output  # the node's 1e-3 rad
    orienting = summary['orienting']
    assert orienting['orientation_error_deg']['median'] < 0.06, output
    assert orienting['ik_error_mm']['median'] < 0.1, output
    assert orienting['reached_fraction'] >= 0.95, output
    # The velocity-limited arm lags the moving target a little, and arrives once it holds.
    assert summary['arm_error_mm']['median'] < 10.0, output
    assert summary['arm_error_holding_mm'] < 1.0, output
    assert_out_of_reach_reported(summary, output)
    # Around the pillar, on one branch, within the limits: never closer than the margin.
    scene = summary['scene']
    assert scene['obstacles'] == ['table', 'pillar']
    for kind in ('commands', 'measured', 'approach_measured'):
        assert scene[kind]['min_m'] > scene['margin_m'], output
    assert scene['below_margin'] == {'commands': 0, 'measured': 0}, output
    assert '    margin            0.010 m: never below it' in output
    assert summary['joints']['outside_limits'] == 0, output
    assert summary['joints']['largest_step_rad'] < 0.3, output  # no flip

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


def test_the_scene_can_be_left_out() -> None:
    """--no-scene runs the single arm as before the table and the pillar."""
    assert parse_args(['--no-scene']).no_scene and not parse_args([]).no_scene


def test_help_names_the_command_to_type() -> None:
    """--help shows the module command README gives, not the file name."""
    process = subprocess.run([sys.executable, '-m', 'fabrik_ros.demo', '--help'], cwd=REPO,
                             capture_output=True, text=True, timeout=RUN_TIMEOUT, check=True)
    assert process.stdout.startswith('usage: python3 -m fabrik_ros.demo'), process.stdout


def test_environment_keeps_dds_on_loopback_and_a_chosen_domain() -> None:
    """Loopback is forced; the caller's domain is kept, else the demo's own is set."""
    env = ros_environment({'ROS_LOCALHOST_ONLY': '0', 'ROS_DOMAIN_ID': '7'})
    assert env['ROS_LOCALHOST_ONLY'] == '1'
    assert env['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert env['ROS_DOMAIN_ID'] == '7'
    assert ros_environment({})['ROS_DOMAIN_ID'] == DEFAULT_DOMAIN_ID
    assert str(REPO) in ros_environment({})['PYTHONPATH'].split(os.pathsep)
