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
URDF in and out of the kinematic model (fabrik_ros.chain).

chain_from_urdf reads the joints between a base link and one or more tip links of a URDF
document; chain_to_urdf writes a model back, with simple visuals, for
robot_state_publisher and RViz. Conventions as in fabrik_ros.chain; the module imports
numpy and the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import re
from typing import Iterable, Sequence
import xml.etree.ElementTree as ElementTree

from fabrik_ros.chain import (Chain, ChainError, check_unique, Effector, frozen_vector, Joint,
                              MAX_JOINTS, Mimic, Pose, rotation_about_axis, rotation_from_rpy,
                              rpy_from_rotation)
import numpy as np

# ---------------------------------------------------------------- reading


def chain_from_urdf(urdf_xml: str, base_link: str, tip_link: str | Sequence[str]) -> Chain:
    """
    Build the chain (one tip link) or tree (several) between base_link and the tips.

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
    movable = sum(robot.joints[name].kind != 'fixed' for name in used)
    if movable > MAX_JOINTS:
        raise ChainError(f'the paths to the tips hold {movable} movable joints; at most '
                         f'{MAX_JOINTS} are supported')
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
        link, parent, pose, movable = stack.pop()
        if movable is not None:
            joints.append(movable.to_joint(parent, pose))
            parent, pose = len(joints) - 1, identity
        if link in tip_set:
            effector_by_tip[link] = Effector(link, parent, pose.xyz, pose.rotation)
        for urdf_joint in reversed(children.get(link, ())):
            joint_origin = urdf_joint.origin()
            origin = Pose(pose.xyz + pose.rotation @ joint_origin.xyz,
                          pose.rotation @ joint_origin.rotation)
            stack.append((urdf_joint.child, parent, origin,
                          None if urdf_joint.kind == 'fixed' else urdf_joint))
    return Chain(base_link, joints, [effector_by_tip[tip] for tip in tips])


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
            root = ElementTree.fromstring(_declare_prefixes(urdf_xml))
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


def _declare_prefixes(urdf_xml: str) -> str:
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


# ---------------------------------------------------------------- writing

_URDF_MATERIALS = {
    'fabrik_link': '0.85 0.55 0.15 1',
    'fabrik_joint': '0.25 0.25 0.3 1',
    'fabrik_tip': '0.15 0.55 0.9 1',
}


def chain_to_urdf(chain: Chain, robot_name: str) -> str:
    """
    Return a URDF document of the model for robot_state_publisher and RViz.

    Each joint's child link is named as in link_names; effectors become links on fixed
    joints named <effector>_fixed. Links show a cylinder per outgoing link segment and a
    short cylinder along the joint axis. Joint effort is not modelled and written as 0.
    Chain.from_urdf(to_urdf(...), base_link, effector_names) reproduces the model.
    """
    radius = _visual_radius(chain)
    robot = ElementTree.Element('robot', name=robot_name)
    for name, rgba in _URDF_MATERIALS.items():
        ElementTree.SubElement(ElementTree.SubElement(robot, 'material', name=name),
                               'color', rgba=rgba)
    # Offsets of what hangs from each frame: row 0 the base, row i + 1 joint i.
    outgoing: list[list[np.ndarray]] = [[] for _ in range(len(chain.joints) + 1)]
    for joint in chain.joints:
        outgoing[joint.parent + 1].append(joint.origin_xyz)
    for effector in chain.effectors:
        outgoing[effector.parent + 1].append(effector.offset)
    frame_links = [chain.base_link] + chain.link_names

    base = ElementTree.SubElement(robot, 'link', name=chain.base_link)
    # A disc under the base: a plate for a chain, the body of a legged tree.
    body_radius = max([radius * 2.0] + [float(np.hypot(*v[:2])) for v in outgoing[0]])
    _add_visual(base, _cylinder(body_radius, radius), Pose(np.zeros(3), np.eye(3)),
                'fabrik_joint')
    _add_link_cylinders(base, outgoing[0], radius)
    for index, joint in enumerate(chain.joints):
        element = ElementTree.SubElement(robot, 'joint', name=joint.name,
                                         type=_urdf_joint_type(joint))
        ElementTree.SubElement(element, 'parent', link=frame_links[joint.parent + 1])
        ElementTree.SubElement(element, 'child', link=chain.link_names[index])
        _add_origin(element, Pose(joint.origin_xyz, joint.origin_rotation))
        ElementTree.SubElement(element, 'axis', xyz=_format(joint.axis))
        limit = _urdf_limit(joint)
        if limit:
            ElementTree.SubElement(element, 'limit', limit)
        if joint.mimic is not None:
            ElementTree.SubElement(element, 'mimic', joint=joint.mimic.joint,
                                   multiplier=_format([joint.mimic.multiplier]),
                                   offset=_format([joint.mimic.offset]))
        link = ElementTree.SubElement(robot, 'link', name=chain.link_names[index])
        _add_visual(link, _cylinder(radius * 1.3, radius * 3.0),
                    Pose(np.zeros(3), _rotation_from_z(joint.axis)), 'fabrik_joint')
        _add_link_cylinders(link, outgoing[index + 1], radius)
    for effector in chain.effectors:
        if chain.is_joint_link(effector):
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


def _visual_radius(chain: Chain) -> float:
    """Return a link cylinder radius (metres) in proportion to the typical link length."""
    lengths = [float(np.linalg.norm(v)) for v in
               [j.origin_xyz for j in chain.joints] + [e.offset for e in chain.effectors]]
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
