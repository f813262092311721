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

"""ament_pep257 (docstring conventions) over the whole package, as `colcon test` runs it."""

from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# colcon output, should someone build inside the source folder.
EXCLUDED = [str(PACKAGE_ROOT / folder) for folder in ('build', 'install', 'log')]


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257() -> None:
    """Every docstring of the package follows PEP 257 as ament configures it."""
    ament_pep257_main = pytest.importorskip(
        'ament_pep257.main',
        reason='ament_pep257 is not installed (pip install -r requirements.txt, '
               'or apt install ros-$ROS_DISTRO-ament-pep257)')
    rc = ament_pep257_main.main(argv=[str(PACKAGE_ROOT), '--exclude', *EXCLUDED])
    assert rc == 0, 'Found docstring style errors (listed on stderr above)'
