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

"""ament_copyright: every source file carries the Apache-2.0 notice package.xml declares."""

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright(monkeypatch):
    ament_copyright = pytest.importorskip(
        'ament_copyright.main',
        reason='ament_copyright is not installed (a ROS package, not on PyPI): colcon test on '
               'a ROS 2 install runs it')
    monkeypatch.chdir(PACKAGE)
    rc = ament_copyright.main(argv=['.', 'test'])
    assert rc == 0, 'Found files without the copyright notice (listed above)'
