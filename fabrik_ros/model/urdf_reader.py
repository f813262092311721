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
URDF in: the parts of a model between a base link and one or more tip links of a document.

Reads what robot_state_publisher and MoveIt read of a description, and refuses what the
model cannot hold with a ChainError naming the joint or link. Conventions as in
fabrik_ros.model.joints; imports numpy and the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import re
from typing import Sequence
import xml.etree.ElementTree as ElementTree

from fabrik_ros.model.joints import (ChainError, check_unique, Effector, frozen_vector, Joint,
                                     MAX_JOINTS, Mimic, Parts, Pose)
from fabrik_ros.model.rotations import rotation_from_rpy
import numpy as np


def parts_from_urdf(urdf_xml: str, base_link: str, tip_link: str | Sequence[str]) -> Parts:
    """
    Return the parts of the chain (one tip link) or tree (several) from base_link to the tips.

    Only the joints on the paths from base_link to the tips are used; joints shared by
    several paths appear once. Everything else in the description (grippers, sensors,
    floating or planar joints, other arms) is ignored, as robot_state_publisher and
    MoveIt do. A mimic joint on a path brings its leader along (with the leader's path
    from the base, if it lies off the paths). Joints are ordered depth-first from the
    base, branches in the order of the tips, effectors in the order of the tips. Fixed
    joints are folded into the next origin or the effector offset; revolute, continuous
    and prismatic joints move; a floating or planar joint on a path raises ChainError,
    as do cycles, duplicate names and unknown links anywhere in the document.
    """
    tips = [tip_link] if isinstance(tip_link, str) else list(tip_link)
    if not tips:
        raise ChainError('no tip link given')
    check_unique(tips, 'tip link')
    robot = _UrdfRobot(urdf_xml)
    for link in [base_link] + tips:
        robot.check_link(link)
    paths = _paths_with_leaders(robot, base_link, tips)
    used = {joint.name for path in paths for joint in path}
    movable = sum(robot.joints[name].kind != 'fixed' for name in used)
    if movable > MAX_JOINTS:
        raise ChainError(f'the paths to the tips hold {movable} movable joints; at most '
                         f'{MAX_JOINTS} are supported')
    joints, effectors = _fold_fixed_joints(base_link, tips, paths)
    return Parts(base_link, joints, effectors)


def _paths_with_leaders(robot: _UrdfRobot, base_link: str,
                        tips: list[str]) -> list[list[_UrdfJoint]]:
    """Return the URDF joints from base_link to each tip, then to each mimic leader off them."""
    paths = [robot.path(base_link, tip) for tip in tips]
    used = {joint.name for path in paths for joint in path}
    for path in paths:      # grows while mimic leaders off the paths are added
        for urdf_joint in path:
            mimic = urdf_joint.mimic() if urdf_joint.kind != 'fixed' else None
            if mimic is None or mimic.joint in used:
                continue
            leader = robot.joints.get(mimic.joint)
            if leader is None:
                raise ChainError(f'mimic {urdf_joint.what} follows unknown joint '
                                 f"'{mimic.joint}'")
            paths.append(robot.path(base_link, leader.child,
                                    f"the link moved by {urdf_joint.what}'s leader"))
            used.update(joint.name for joint in paths[-1])
    return paths


def _fold_fixed_joints(base_link: str, tips: list[str], paths: list[list[_UrdfJoint]]
                       ) -> tuple[list[Joint], list[Effector]]:
    """
    Return the movable joints of the paths and the tips' effectors, fixed joints folded in.

    Joints come depth-first from the base, parents first, branches in the order of the
    paths; each origin (and effector offset) carries the fixed joints above it.
    """
    children: dict[str, list[_UrdfJoint]] = {}
    for path in paths:
        for urdf_joint in path:
            siblings = children.setdefault(urdf_joint.parent, [])
            if urdf_joint not in siblings:
                siblings.append(urdf_joint)
    joints: list[Joint] = []
    effector_by_tip: dict[str, Effector] = {}
    tip_set = set(tips)
    # Depth-first from the base without recursion (chains may be thousands deep). An
    # entry: a link, the movable joint above it (index, or the URDF joint still to add
    # when it is the link's own) and its pose in that joint's frame.
    identity = Pose(np.zeros(3), np.eye(3))
    stack: list[tuple[str, int, Pose, _UrdfJoint | None]] = [
        (base_link, -1, identity, None)]
    while stack:
        link, parent, pose, own_joint = stack.pop()
        if own_joint is not None:
            joints.append(own_joint.to_joint(parent, pose))
            parent, pose = len(joints) - 1, identity
        if link in tip_set:
            effector_by_tip[link] = Effector(link, parent, pose.xyz, pose.rotation)
        for urdf_joint in reversed(children.get(link, ())):
            joint_origin = urdf_joint.origin()
            origin = Pose(pose.xyz + pose.rotation @ joint_origin.xyz,
                          pose.rotation @ joint_origin.rotation)
            stack.append((urdf_joint.child, parent, origin,
                          None if urdf_joint.kind == 'fixed' else urdf_joint))
    return joints, [effector_by_tip[tip] for tip in tips]


_MOVABLE_URDF_TYPES = {'revolute': 'revolute', 'continuous': 'revolute',
                       'prismatic': 'prismatic'}


@dataclass(frozen=True, eq=False)
class _UrdfJoint:
    """
    One URDF <joint>: its place in the link tree, parsed further only if the chain uses it.

    Joints off the paths from the base to the tips are never read beyond their name, type
    and links, so whatever they hold (a gripper's mimic fingers, a floating camera mount,
    a planar base) cannot stop a chain from loading.
    """

    name: str
    kind: str                   # URDF joint type
    parent: str
    child: str
    element: ElementTree.Element

    @property
    def what(self) -> str:
        """Return how messages name the joint."""
        return f"joint '{self.name}'"

    def origin(self) -> Pose:
        """Return the joint's <origin> (identity when absent)."""
        origin = self.element.find('origin')
        xyz = _urdf_vector(origin, 'xyz', '0 0 0', f'{self.what} origin')
        rpy = _urdf_vector(origin, 'rpy', '0 0 0', f'{self.what} origin')
        return Pose(xyz, rotation_from_rpy(rpy))

    def mimic(self) -> Mimic | None:
        """Return the joint's <mimic>, or None."""
        element = self.element.find('mimic')
        if element is None:
            return None
        leader = _required(element, 'joint', f'{self.what} <mimic>')
        return Mimic(leader, _urdf_float(element, 'multiplier', '1', self.what, 'mimic'),
                     _urdf_float(element, 'offset', '0', self.what, 'mimic'))

    def to_joint(self, parent: int, origin: Pose) -> Joint:
        """Return the model joint, with `origin` (fixed joints folded in) as its origin."""
        kind = _MOVABLE_URDF_TYPES.get(self.kind)
        if kind is None:
            raise ChainError(f"{self.what} has type '{self.kind}' on the path to a tip; only "
                             'revolute, continuous, prismatic and fixed joints can be there')
        axis = _urdf_vector(self.element.find('axis'), 'xyz', '1 0 0', f'{self.what} axis')
        limit = self.element.find('limit')
        lower, upper = -math.inf, math.inf
        if self.kind != 'continuous':
            if limit is None:
                raise ChainError(f'{self.kind} {self.what} has no <limit>')
            lower = _urdf_float(limit, 'lower', '0', self.what)
            upper = _urdf_float(limit, 'upper', '0', self.what)
        velocity = (math.inf if limit is None
                    else _urdf_float(limit, 'velocity', 'inf', self.what))
        return Joint(self.name, parent, origin.xyz, origin.rotation, axis, lower, upper,
                     velocity, self.child, kind, self.mimic())


class _UrdfRobot:
    """The link tree of a URDF document."""

    def __init__(self, urdf_xml: str) -> None:
        """Parse the XML; raise ChainError on malformed XML or a tree that is not one."""
        try:
            root = ElementTree.fromstring(declare_prefixes(urdf_xml))
        except ElementTree.ParseError as error:
            raise ChainError(f'malformed URDF XML: {error}') from None
        if root.tag != 'robot':
            raise ChainError(f'URDF root element is <{root.tag}>, expected <robot>')
        self.links = [_required(element, 'name', 'link') for element in root.findall('link')]
        check_unique(self.links, 'link')
        link_set = set(self.links)
        self.joint_to_child: dict[str, _UrdfJoint] = {}
        self.joints: dict[str, _UrdfJoint] = {}
        for element in root.findall('joint'):
            name = _required(element, 'name', 'joint')
            what = f"joint '{name}'"
            parent, child = (_required(_child(element, tag, what), 'link', f'{what} <{tag}>')
                             for tag in ('parent', 'child'))
            joint = _UrdfJoint(name, _required(element, 'type', what), parent, child, element)
            if name in self.joints:
                raise ChainError(f"duplicate joint name '{name}'")
            self.joints[name] = joint
            for link in (parent, child):
                if link not in link_set:
                    raise ChainError(f"{what} refers to unknown link '{link}'")
            if child in self.joint_to_child:
                raise ChainError(f"link '{child}' is the child of two joints: "
                                 f"'{self.joint_to_child[child].name}' and '{name}'")
            self.joint_to_child[child] = joint
        self._check_acyclic()

    def _check_acyclic(self) -> None:
        """Raise ChainError naming a link on a cycle of joints (O(links) in all)."""
        settled: set[str] = set()     # links known to lead up to a root
        for start in self.links:
            trail: list[str] = []
            on_trail: set[str] = set()
            link = start
            while link not in settled and link in self.joint_to_child:
                if link in on_trail:
                    raise ChainError(f"the URDF joints form a cycle through link '{link}'")
                trail.append(link)
                on_trail.add(link)
                link = self.joint_to_child[link].parent
            settled.update(trail)
            settled.add(link)

    def check_link(self, link: str) -> None:
        """Raise ChainError naming an unknown link and a few known ones."""
        if link not in self.links:
            known = ', '.join(self.links[:8]) + (', ...' if len(self.links) > 8 else '')
            raise ChainError(f"unknown link '{link}' (the URDF has links: {known})")

    def path(self, base_link: str, tip_link: str, what: str = 'tip link') -> list[_UrdfJoint]:
        """Return the URDF joints from base_link down to tip_link."""
        if tip_link == base_link:
            raise ChainError(f"tip link '{tip_link}' is the base link")
        path = []
        link = tip_link
        while link in self.joint_to_child:
            joint = self.joint_to_child[link]
            path.append(joint)
            if joint.parent == base_link:
                return path[::-1]
            link = joint.parent
        raise ChainError(f"no path from base link '{base_link}' down to {what} "
                         f"'{tip_link}' (is it above the base or on another branch?)")


def declare_prefixes(urdf_xml: str) -> str:
    """
    Return the document with its undeclared namespace prefixes declared on <robot>.

    Descriptions often carry tool-specific attributes such as drake:acceleration without
    declaring the prefix; URDF parsers (urdfdom) read them anyway, and so does this one.
    """
    match = re.search(r'<robot\b', urdf_xml)
    if match is None:
        return urdf_xml
    used = set(re.findall(r'[<\s/]([A-Za-z_][\w.-]*):[A-Za-z_][\w.-]*', urdf_xml))
    declared = set(re.findall(r'xmlns:([A-Za-z_][\w.-]*)\s*=', urdf_xml))
    missing = sorted(used - declared - {'xmlns', 'xml'})
    if not missing:
        return urdf_xml
    declarations = ''.join(f' xmlns:{prefix}="urn:undeclared:{prefix}"' for prefix in missing)
    return urdf_xml[:match.end()] + declarations + urdf_xml[match.end():]


def _required(element: ElementTree.Element, attribute: str, what: str) -> str:
    """Return a non-empty attribute or raise ChainError naming the element."""
    value = element.get(attribute, '')
    if not value:
        raise ChainError(f"{what} has no '{attribute}' attribute")
    return value


def _child(element: ElementTree.Element, tag: str, what: str) -> ElementTree.Element:
    """Return the child element or raise ChainError naming the missing tag."""
    found = element.find(tag)
    if found is None:
        raise ChainError(f'{what} has no <{tag}>')
    return found


def _urdf_vector(element: ElementTree.Element | None, attribute: str, default: str,
                 what: str) -> np.ndarray:
    """Return a 3-number attribute of an optional element (default when absent)."""
    text = default if element is None else element.get(attribute, default)
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        values = []
    if len(values) != 3:
        raise ChainError(f'{what} {attribute}: expected 3 finite numbers, got {text!r}')
    return frozen_vector(values, f'{what} {attribute}')


def _urdf_float(element: ElementTree.Element, attribute: str, default: str, what: str,
                tag: str = 'limit') -> float:
    """Return a number attribute (default when absent) or raise ChainError."""
    text = element.get(attribute, default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value):
        raise ChainError(f'{what} <{tag} {attribute}="{text}"> is not a number')
    return value
