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
launch_testing of the free-body route: arm.launch.py with a params:= overlay over spider.yaml.

Runs like test_launch_arm.py (launch_test, pytest or colcon test, once fabrik_ros is built
and sourced) and is skipped with the reason elsewhere.
"""

from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for launch_test, see test_launch_arm
from launch_support import skipped, why_not_runnable  # noqa: E402, I100

WHY_NOT = why_not_runnable()
if WHY_NOT:
    test_free_body_launch = skipped(WHY_NOT)
else:
    from arm_launch_cases import TestCleanShutdown  # noqa: F401
    from free_body_launch_cases import (generate_test_description,  # noqa: F401
                                        TestBodyFollowsFoot)
