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
Whether the launch tests can run here, and what stands in for them where they cannot.

They need launch, launch_ros and launch_testing installed and fabrik_ros in the ament index.
This module imports none of them itself, so any pytest can ask.
"""

from collections.abc import Callable

import pytest


def why_not_runnable() -> str:
    """Return why the launch tests cannot run here ('' if they can)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        from ament_index_python.packages import PackageNotFoundError
        import launch  # noqa: F401
        import launch_ros  # noqa: F401  (arm.launch.py needs it)
        import launch_testing  # noqa: F401
    except ImportError as error:
        return (f'{error.name} is not installed: launch tests need launch, launch_ros and '
                'launch_testing (a ROS 2 install has them; the PyPI wheels do not)')
    try:
        get_package_share_directory('fabrik_ros')
    except (PackageNotFoundError, OSError):  # OSError: no AMENT_PREFIX_PATH at all
        return 'fabrik_ros is not in the ament index: colcon build, then source ' \
            'install/setup.bash'
    return ''


def skipped(reason: str) -> Callable[[], None]:
    """Return a test that stands in for a launch test, skipped with the reason."""
    def test() -> None:
        pytest.skip(reason)
    return test
