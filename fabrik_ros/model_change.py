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
What a new model (a robot_description published again) changes, without ROS.

A description published again may be the same robot (an XML comment added), the same
joints with other limits, or another robot. These comparisons tell them apart, and
`carried_state` maps a command stream's state onto the new joint list, so the controller
changes only what the new model changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabrik_ros.chain import Chain, Effector, Joint
import numpy as np


def _same_joint(a: Joint, b: Joint) -> bool:
    return (a.name == b.name and a.parent == b.parent and a.kind == b.kind
            and a.link == b.link and a.mimic == b.mimic
            and np.array_equal(a.origin_xyz, b.origin_xyz)
            and np.array_equal(a.origin_rotation, b.origin_rotation)
            and np.array_equal(a.axis, b.axis))


def _same_effector(a: Effector, b: Effector) -> bool:
    return (a.name == b.name and a.parent == b.parent
            and np.array_equal(a.offset, b.offset) and np.array_equal(a.rotation, b.rotation))


def same_kinematics(a: Chain, b: Chain) -> bool:
    """Tell whether two chains move alike: same joints, origins, axes and effectors."""
    return (a.base_link == b.base_link and len(a.joints) == len(b.joints)
            and len(a.effectors) == len(b.effectors)
            and all(map(_same_joint, a.joints, b.joints))
            and all(map(_same_effector, a.effectors, b.effectors)))


def same_model(a: Chain, b: Chain) -> bool:
    """Tell whether two chains are one robot: same kinematics and the same limits."""
    return (same_kinematics(a, b) and np.array_equal(a.lower, b.lower)
            and np.array_equal(a.upper, b.upper)
            and np.array_equal(a.max_velocity, b.max_velocity))


def carried_state(old_names: Sequence[str], new_names: Sequence[str],
                  old_values: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """
    Return per joint of `new_names` its value of `old_values`, or `fill` for a new joint.

    old_values: (len(old_names),) e.g. command positions or velocities; fill: (len(new),).
    """
    index = {name: i for i, name in enumerate(old_names)}
    return np.array([old_values[index[name]] if name in index else fill[k]
                     for k, name in enumerate(new_names)], dtype=float)


# A robot_description longer than this, or with more <joint elements, is refused before it
# is parsed: parsing 100,000 joints (20 MB) takes seconds. chain.MAX_JOINTS caps the
# movable joints of a chain; a description also holds fixed joints and other branches.
MAX_DESCRIPTION_CHARACTERS = 10_000_000
MAX_DESCRIPTION_JOINTS = 20_000


def description_size_problem(urdf: str) -> str:
    """Return why a URDF is too big to parse ('' if it is not): cheap, before parsing."""
    if len(urdf) > MAX_DESCRIPTION_CHARACTERS:
        return (f'{len(urdf)} characters, more than the {MAX_DESCRIPTION_CHARACTERS:,} a '
                'robot_description may have')
    joints = urdf.count('<joint')
    if joints > MAX_DESCRIPTION_JOINTS:
        return (f'{joints} joints, more than the {MAX_DESCRIPTION_JOINTS:,} a '
                'robot_description may have')
    return ''
