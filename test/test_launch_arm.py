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
launch_testing of launch/arm.launch.py: a target on target_pose moves the simulated arm.

Runs where launch, launch_ros and launch_testing are installed and fabrik_ros is built into
an ament prefix (colcon build; source install/setup.bash), three ways alike:

    launch_test test/test_launch_arm.py
    python3 -m pytest test/test_launch_arm.py
    colcon test --packages-select fabrik_ros

Elsewhere one test says why it is skipped, so a plain `python3 -m pytest` of the source
tree still runs everything else.
"""

from pathlib import Path
import sys

# `launch_test test/test_launch_arm.py` imports this file without putting test/ on sys.path
# (pytest and colcon test do): the helpers and the cases live beside it.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from launch_support import skipped, why_not_runnable  # noqa: E402, I100

WHY_NOT = why_not_runnable()
if WHY_NOT:
    test_arm_launch = skipped(WHY_NOT)
else:
    from arm_launch_cases import (generate_test_description,  # noqa: F401
                                  TestArmFollowsTarget, TestCleanShutdown)
