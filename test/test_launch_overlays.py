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
arm.launch.py's config and params arguments: names in config/ or paths, overlays in order.

Needs launch and launch_ros to import the launch file (a ROS 2 install has them; the PyPI
wheels do not): elsewhere each test is skipped with that reason.
"""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def launch_file():
    """Import launch/arm.launch.py as a module (skip where launch_ros is missing)."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed: a ROS 2 install '
                        'has it, the PyPI wheels do not')
    spec = importlib.util.spec_from_file_location('arm_launch', REPO / 'launch' / 'arm.launch.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overlays_resolve_by_name_or_path_in_order(tmp_path: Path) -> None:
    mine = tmp_path / 'mine.yaml'
    mine.write_text('/**:\n  ros__parameters: {tolerance: 0.001}\n')
    overlays = launch_file().resolve_overlays(
        f'overlays/spider_free_body.yaml, {mine},overlays/hardware.yaml', REPO)
    assert overlays == [REPO / 'config' / 'overlays' / 'spider_free_body.yaml', mine,
                        REPO / 'config' / 'overlays' / 'hardware.yaml']


def test_no_overlay_is_an_empty_list() -> None:
    assert launch_file().resolve_overlays('', REPO) == []


def test_an_unknown_overlay_is_refused_naming_the_shipped_ones() -> None:
    with pytest.raises(FileNotFoundError, match=r"params 'nope.yaml' .*overlays/hardware.yaml"):
        launch_file().resolve_overlays('nope.yaml', REPO)
