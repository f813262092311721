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


"""Shared cases of the model's tests: small URDF documents, random trees, joint vectors."""

import math
from pathlib import Path

from fabrik_ros.chain import Chain, Effector, Joint, rotation_from_rpy
from hypothesis import assume, strategies as st
import numpy as np

SHARE = Path(__file__).resolve().parents[1]
TWO_PI = 2.0 * math.pi
X, Y, Z = np.eye(3)

angles = st.floats(-math.pi, math.pi, allow_nan=False)
coordinates = st.floats(-0.5, 0.5, allow_nan=False)
vectors = st.tuples(coordinates, coordinates, coordinates).map(np.array)
rpys = st.tuples(angles, angles, angles)


def read_urdf(name: str) -> str:
    """Return the text of urdf/<name>.urdf."""
    return (SHARE / 'urdf' / f'{name}.urdf').read_text()


def urdf(*joints: str, links=('base', 'a', 'b', 'c', 'tip')) -> str:
    """Return a URDF document with the given links and joint elements."""
    link_elements = ''.join(f'<link name="{link}"/>' for link in links)
    return f'<robot name="r">{link_elements}{"".join(joints)}</robot>'


def joint_xml(name, parent, child, kind='revolute', xyz='0 0 0', rpy='0 0 0',
              axis='0 0 1', limit='<limit lower="-1" upper="1" effort="1" velocity="2"/>'):
    """Return one URDF <joint> element."""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
            f'<axis xyz="{axis}"/>{limit}</joint>')


def planar_arm(lengths=(0.3, 0.2, 0.1)) -> Chain:
    """Return a serial chain of pitch hinges with links along x."""
    return Chain.from_parameters(len(lengths), list(lengths), segment_axes=['y'])


def in_limits(chain: Chain, data) -> np.ndarray:
    """Draw a joint vector within the chain's limits (continuous joints in [-pi, pi])."""
    low = np.maximum(chain.lower, -math.pi)
    high = np.minimum(chain.upper, math.pi)
    fractions = data.draw(st.lists(st.floats(0.0, 1.0), min_size=chain.dof,
                                   max_size=chain.dof))
    return low + np.array(fractions) * (high - low)


@st.composite
def random_trees(draw, max_joints: int = 7) -> Chain:
    """Draw a random tree: any parents, origins, axes and limits, 1 to 3 effectors."""
    joints = []
    for index in range(draw(st.integers(1, max_joints))):
        axis = draw(vectors)
        assume(np.linalg.norm(axis) > 0.05)
        if draw(st.booleans()):
            lower, upper = -math.inf, math.inf
        else:
            lower, upper = draw(st.floats(-3.0, 0.0)), draw(st.floats(0.0, 3.0))
        joints.append(Joint(f'j{index}', draw(st.integers(-1, index - 1)), draw(vectors),
                            rotation_from_rpy(draw(rpys)), axis, lower, upper,
                            draw(st.floats(0.1, 10.0))))
    effectors = [Effector(f'tip{k}', draw(st.integers(-1, len(joints) - 1)), draw(vectors),
                          rotation_from_rpy(draw(rpys)))
                 for k in range(draw(st.integers(1, 3)))]
    return Chain('base', joints, effectors)


def rounded(points) -> list[tuple[float, ...]]:
    """Return points as sorted tuples rounded to a nanometre, to compare sets of points."""
    return sorted(tuple(np.round(point, 9) + 0.0) for point in points)


def reorder(q: np.ndarray, source: Chain, target: Chain) -> np.ndarray:
    """Return q of `source` as the joint vector of `target`, matching joints by name."""
    return np.array([q[source.joint_names.index(name)] for name in target.joint_names])
