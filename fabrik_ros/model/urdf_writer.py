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
URDF out: a model's parts as a URDF document with simple visuals.

For robot_state_publisher and RViz; reading the document back (urdf_reader) gives the
same parts. Conventions as in fabrik_ros.model.joints; imports numpy and the standard
library only.
"""

from __future__ import annotations

import math
from typing import Iterable
import xml.etree.ElementTree as ElementTree

from fabrik_ros.model.joints import ChainError, is_joint_link, Joint, Parts, Pose
from fabrik_ros.model.rotations import rotation_about_axis, rpy_from_rotation
import numpy as np

_URDF_MATERIALS = {
    'fabrik_link': '0.85 0.55 0.15 1',
    'fabrik_joint': '0.25 0.25 0.3 1',
    'fabrik_tip': '0.15 0.55 0.9 1',
}


def urdf_from_parts(parts: Parts, robot_name: str) -> str:
    """
    Return a URDF document of parts that form a tree (joints.check_tree), a Chain's.

    Each joint's child link is named as Joint.link_name; effectors become links on fixed
    joints named <effector>_fixed. Links show a cylinder per outgoing link segment and a
    short cylinder along the joint axis. Joint effort is not modelled and written as 0.
    Chain.from_urdf of the document, base_link and effector names, gives the model back.
    """
    radius = _visual_radius(parts)
    link_names = [joint.link_name for joint in parts.joints]
    robot = ElementTree.Element('robot', name=robot_name)
    for name, rgba in _URDF_MATERIALS.items():
        ElementTree.SubElement(ElementTree.SubElement(robot, 'material', name=name),
                               'color', rgba=rgba)
    # Offsets of what hangs from each frame: row 0 the base, row i + 1 joint i.
    outgoing: list[list[np.ndarray]] = [[] for _ in range(len(parts.joints) + 1)]
    for joint in parts.joints:
        outgoing[joint.parent + 1].append(joint.origin_xyz)
    for effector in parts.effectors:
        outgoing[effector.parent + 1].append(effector.offset)
    frame_links = [parts.base_link] + link_names

    base = ElementTree.SubElement(robot, 'link', name=parts.base_link)
    # A disc under the base: a plate for a chain, the body of a legged tree.
    body_radius = max([radius * 2.0] + [float(np.hypot(*v[:2])) for v in outgoing[0]])
    _add_visual(base, _cylinder(body_radius, radius), Pose(np.zeros(3), np.eye(3)),
                'fabrik_joint')
    _add_link_cylinders(base, outgoing[0], radius)
    for index, joint in enumerate(parts.joints):
        element = ElementTree.SubElement(robot, 'joint', name=joint.name,
                                         type=_urdf_joint_type(joint))
        ElementTree.SubElement(element, 'parent', link=frame_links[joint.parent + 1])
        ElementTree.SubElement(element, 'child', link=link_names[index])
        _add_origin(element, Pose(joint.origin_xyz, joint.origin_rotation))
        ElementTree.SubElement(element, 'axis', xyz=_format(joint.axis))
        limit = _urdf_limit(joint)
        if limit:
            ElementTree.SubElement(element, 'limit', limit)
        if joint.mimic is not None:
            ElementTree.SubElement(element, 'mimic', joint=joint.mimic.joint,
                                   multiplier=_format([joint.mimic.multiplier]),
                                   offset=_format([joint.mimic.offset]))
        link = ElementTree.SubElement(robot, 'link', name=link_names[index])
        _add_visual(link, _cylinder(radius * 1.3, radius * 3.0),
                    Pose(np.zeros(3), _rotation_from_z(joint.axis)), 'fabrik_joint')
        _add_link_cylinders(link, outgoing[index + 1], radius)
    for effector in parts.effectors:
        if is_joint_link(effector, parts.joints):
            tip = robot.find(f"link[@name='{effector.name}']")
        else:
            element = ElementTree.SubElement(robot, 'joint', type='fixed',
                                             name=f'{effector.name}_fixed')
            ElementTree.SubElement(element, 'parent',
                                   link=frame_links[effector.parent + 1])
            ElementTree.SubElement(element, 'child', link=effector.name)
            _add_origin(element, Pose(effector.offset, effector.rotation))
            tip = ElementTree.SubElement(robot, 'link', name=effector.name)
        sphere = ElementTree.Element('sphere', radius=_format([radius * 1.2]))
        _add_visual(tip, sphere, Pose(np.zeros(3), np.eye(3)), 'fabrik_tip')
    ElementTree.indent(robot)
    return '<?xml version="1.0"?>\n' + ElementTree.tostring(robot, encoding='unicode') + '\n'


def _visual_radius(parts: Parts) -> float:
    """Return a link cylinder radius (metres) in proportion to the typical link length."""
    lengths = [float(np.linalg.norm(v)) for v in
               [j.origin_xyz for j in parts.joints] + [e.offset for e in parts.effectors]]
    lengths = [v for v in lengths if v > 1e-9] or [0.1]
    return float(np.clip(0.08 * np.median(lengths), 0.004, 0.04))


def _format(values: Iterable[float]) -> str:
    """Return numbers as a URDF attribute with full precision ('0.1 0.0 -0.25')."""
    return ' '.join(repr(float(v) + 0.0) for v in values)  # + 0.0 turns -0.0 into 0.0


def _urdf_limit(joint: Joint) -> dict[str, str]:
    """Return the <limit> attributes of a joint ({} for an unbounded continuous joint)."""
    limit = {}
    if not joint.continuous:
        if not (math.isfinite(joint.lower) and math.isfinite(joint.upper)):
            raise ChainError(f"joint '{joint.name}' has a one-sided limit "
                             f'[{joint.lower}, {joint.upper}], which URDF cannot express')
        limit = {'lower': _format([joint.lower]), 'upper': _format([joint.upper])}
    if math.isfinite(joint.max_velocity):
        limit.update(effort='0', velocity=_format([joint.max_velocity]))
    elif not joint.continuous:
        raise ChainError(f"{joint.kind} joint '{joint.name}' needs a finite max_velocity "
                         'for URDF')
    return limit


def _urdf_joint_type(joint: Joint) -> str:
    """Return the URDF type of a model joint."""
    if joint.prismatic:
        return 'prismatic'
    return 'continuous' if joint.continuous else 'revolute'


def _add_origin(element: ElementTree.Element, pose: Pose) -> None:
    """Append an <origin xyz rpy> of pose to element."""
    ElementTree.SubElement(element, 'origin', xyz=_format(pose.xyz),
                           rpy=_format(rpy_from_rotation(pose.rotation)))


def _cylinder(radius: float, length: float) -> ElementTree.Element:
    """Return a URDF <cylinder> (along its local z) element."""
    return ElementTree.Element('cylinder', radius=_format([radius]), length=_format([length]))


def _add_visual(link: ElementTree.Element, geometry: ElementTree.Element, pose: Pose,
                material: str) -> None:
    """Append a <visual> with one geometry at pose to a link element."""
    visual = ElementTree.SubElement(link, 'visual')
    _add_origin(visual, pose)
    ElementTree.SubElement(visual, 'geometry').append(geometry)
    ElementTree.SubElement(visual, 'material', name=material)


def _add_link_cylinders(link: ElementTree.Element, offsets: list[np.ndarray],
                        radius: float) -> None:
    """Append a cylinder from the link origin to each non-zero offset (metres)."""
    for offset in offsets:
        length = float(np.linalg.norm(offset))
        if length > 1e-9:
            _add_visual(link, _cylinder(radius, length),
                        Pose(offset / 2.0, _rotation_from_z(offset)), 'fabrik_link')


def _rotation_from_z(direction: np.ndarray) -> np.ndarray:
    """Return a (3, 3) rotation turning +z onto a non-zero direction."""
    unit = direction / np.linalg.norm(direction)
    turn = np.cross([0.0, 0.0, 1.0], unit)
    sine = float(np.linalg.norm(turn))
    if sine < 1e-12:
        return np.eye(3) if unit[2] > 0.0 else rotation_about_axis([1.0, 0.0, 0.0], math.pi)
    return rotation_about_axis(turn / sine, math.atan2(sine, float(unit[2])))
