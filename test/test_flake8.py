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

"""ament_flake8 over the whole package, as `colcon test` runs it."""

from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# colcon output, should someone build inside the source folder.
EXCLUDED = [str(PACKAGE_ROOT / folder) for folder in ('build', 'install', 'log')]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python file of the package passes ament's flake8 configuration."""
    ament_flake8_main = pytest.importorskip(
        'ament_flake8.main',
        reason='ament_flake8 is not installed (pip install -r requirements.txt, '
               'or apt install ros-$ROS_DISTRO-ament-flake8)')
    # ament_flake8 skips hidden folders (.venv) found under the working directory.
    monkeypatch.chdir(PACKAGE_ROOT)
    rc, errors = ament_flake8_main.main_with_errors(
        argv=[str(PACKAGE_ROOT), '--exclude', *EXCLUDED])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
