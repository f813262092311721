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
The kinematic model's public names, one import path for nodes, tests and benchmarks.

Chain (fabrik_ros.model.chain) with its parts (fabrik_ros.model.joints) and the rotation
conversions (fabrik_ros.model.rotations); fabrik_ros.model's docstring maps its layers.
"""

from fabrik_ros.model.chain import Chain
from fabrik_ros.model.joints import (ChainError, Effector, Joint, JOINT_KINDS, MAX_JOINTS,
                                     Mimic, Pose)
from fabrik_ros.model.kinematics import Kinematics
from fabrik_ros.model.rotations import (quaternion_from_rotation, rotation_about_axis,
                                        rotation_from_quaternion, rotation_from_rpy,
                                        rotation_tuple, rpy_from_rotation)

__all__ = [
    'Chain', 'ChainError', 'Effector', 'Joint', 'JOINT_KINDS', 'Kinematics', 'MAX_JOINTS',
    'Mimic', 'Pose', 'quaternion_from_rotation', 'rotation_about_axis',
    'rotation_from_quaternion', 'rotation_from_rpy', 'rotation_tuple', 'rpy_from_rotation',
]
