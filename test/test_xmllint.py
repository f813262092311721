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

"""ament_xmllint: package.xml against its schema, the URDFs well formed."""

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


@pytest.mark.linter
@pytest.mark.xmllint
def test_xmllint(monkeypatch):
    ament_xmllint = pytest.importorskip(
        'ament_xmllint.main',
        reason='ament_xmllint is not installed (a ROS package, not on PyPI): colcon test on a '
               'ROS 2 install runs it')
    monkeypatch.chdir(PACKAGE)
    rc = ament_xmllint.main(argv=['--extensions', 'xml', 'urdf', '--', '.'])
    assert rc == 0, 'Found XML errors (listed above)'
