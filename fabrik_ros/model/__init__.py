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
The kinematic model, in layers that import downward only.

- rotations: rotation matrices from and to roll/pitch/yaw, quaternions and axis-angle.
- joints: the parts a model is made of (Joint, Effector, Mimic, Pose), checked on
  construction, whether they form a tree, and ChainError.
- coupling: mimic joints resolved into the independent joint vector and its limits.
- kinematics: forward kinematics of every joint's position, and the position Jacobian.
- urdf_reader: a URDF document to the parts between a base link and its tips.
- urdf_writer: the parts of a model to a URDF document with simple visuals.
- builders: the parts of chains and legged trees from plain parameters.
- chain: Chain, the public model, built from parts, a URDF or plain parameters.

fabrik_ros.chain is the stable import path of the public names.
"""
