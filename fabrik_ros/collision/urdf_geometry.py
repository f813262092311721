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
A URDF's <collision> elements as one containing capsule per link, in its joint's frame.

Every link below the base link is placed in the frame of the nearest movable joint of the
chain above it (the base frame when none is): fixed joints are folded as the model folds
them, and joints off the chain (a gripper's fingers) are held at zero, clipped into their
limits. Boxes, cylinders, spheres and meshes are read (meshes with trimesh: STL, OBJ, and
DAE where pycollada is installed); `package://` names resolve through `package_dirs`, then
ament_index, other names relative to `urdf_dir`. Imports numpy, the standard library and,
for meshes only, trimesh and ament_index_python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, NamedTuple, Sequence
import xml.etree.ElementTree as ElementTree

from fabrik_ros.collision.capsules import (box_points, Capsule, cylinder_points, fit_capsule,
                                           sphere_points)
from fabrik_ros.model.joints import ChainError
from fabrik_ros.model.rotations import rotation_about_axis, rotation_from_rpy
from fabrik_ros.model.urdf_reader import declare_prefixes
import numpy as np


class LinkGeometry(NamedTuple):
    """One link's capsule, the row of its frame in the FK frames, and its geometric parent."""

    link: str
    frame: int              # 0 the base, k + 1 the chain's joint k
    capsule: Capsule
    parent: str | None      # the nearest link above it that has geometry


def links_from_urdf(urdf_xml: str, base_link: str, joint_names: Sequence[str],
                    urdf_dir: str | Path | None = None,
                    package_dirs: Mapping[str, str | Path] | None = None
                    ) -> list[LinkGeometry]:
    """
    Return the capsules of the links at and below base_link that have <collision> elements.

    joint_names: every movable joint of the chain (chain.all_joint_names); the frame rows
    follow their order. Raises ChainError naming the link of an unreadable geometry.
    """
    root = ElementTree.fromstring(declare_prefixes(urdf_xml))
    links = {element.get('name'): element for element in root.findall('link')}
    children: dict[str, list[ElementTree.Element]] = {}
    for joint in root.findall('joint'):
        children.setdefault(joint.find('parent').get('link'), []).append(joint)
    row_of_joint = {name: index + 1 for index, name in enumerate(joint_names)}
    resolver = _MeshFiles(urdf_dir, package_dirs or {})
    found: list[LinkGeometry] = []
    # (link, frame row, link pose in that frame, nearest link above with geometry)
    stack: list[tuple[str, int, np.ndarray, str | None]] = [(base_link, 0, np.eye(4), None)]
    while stack:
        link, frame, pose, above = stack.pop()
        points, slack = _collision_points(links.get(link), pose, resolver, link)
        if len(points):
            found.append(LinkGeometry(link, frame, fit_capsule(points, slack), above))
            above = link
        for joint in children.get(link, ()):
            child = joint.find('child').get('link')
            if joint.get('name') in row_of_joint:
                stack.append((child, row_of_joint[joint.get('name')], np.eye(4), above))
            else:
                stack.append((child, frame, pose @ _held_joint(joint), above))
    return found


def _origin(element: ElementTree.Element | None) -> np.ndarray:
    """Return an <origin>'s (4, 4) transform (identity when absent)."""
    transform = np.eye(4)
    if element is not None:
        transform[:3, :3] = rotation_from_rpy(_numbers(element, 'rpy', '0 0 0'))
        transform[:3, 3] = _numbers(element, 'xyz', '0 0 0')
    return transform


def _numbers(element: ElementTree.Element, attribute: str, default: str) -> list[float]:
    """Return an attribute's numbers."""
    return [float(v) for v in element.get(attribute, default).split()]


def _held_joint(joint: ElementTree.Element) -> np.ndarray:
    """Return a joint off the chain as a (4, 4): its origin, at zero clipped into its limits."""
    transform = _origin(joint.find('origin'))
    kind = joint.get('type')
    limit = joint.find('limit')
    if kind not in ('revolute', 'prismatic') or limit is None:
        return transform
    position = float(np.clip(0.0, float(limit.get('lower', 0)), float(limit.get('upper', 0))))
    axis_element = joint.find('axis')
    axis = np.array(_numbers(axis_element, 'xyz', '1 0 0') if axis_element is not None
                    else [1.0, 0.0, 0.0])
    axis /= np.linalg.norm(axis)
    motion = np.eye(4)
    if kind == 'revolute':
        motion[:3, :3] = rotation_about_axis(axis, position)
    else:
        motion[:3, 3] = position * axis
    return transform @ motion


def _collision_points(link: ElementTree.Element | None, pose: np.ndarray,
                      resolver: _MeshFiles, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the extreme points and slack of a link's <collision> elements, in `pose`'s frame."""
    points, slack = [np.zeros((0, 3))], [np.zeros(0)]
    for collision in ([] if link is None else link.findall('collision')):
        geometry = collision.find('geometry')
        shape = None if geometry is None else next(iter(geometry), None)
        if shape is None:
            raise ChainError(f"link '{name}' has a <collision> without a geometry")
        at = pose @ _origin(collision.find('origin'))
        try:
            if shape.tag == 'box':
                found = box_points(_numbers(shape, 'size', ''), at)
            elif shape.tag == 'sphere':
                found = sphere_points(float(shape.get('radius')), at)
            elif shape.tag == 'cylinder':
                found = cylinder_points(float(shape.get('radius')),
                                        float(shape.get('length')), at)
            elif shape.tag == 'mesh':
                vertices = resolver.vertices(shape.get('filename', ''))
                vertices = vertices * _numbers(shape, 'scale', '1 1 1')
                found = vertices @ at[:3, :3].T + at[:3, 3], np.zeros(len(vertices))
            else:
                raise ValueError(f'unknown geometry <{shape.tag}>')
        except (TypeError, ValueError, OSError) as error:
            raise ChainError(f"link '{name}' collision geometry: {error}") from None
        points.append(found[0])
        slack.append(found[1])
    return np.concatenate(points), np.concatenate(slack)


class _MeshFiles:
    """Mesh file names to vertices, each file read once."""

    def __init__(self, urdf_dir: str | Path | None, package_dirs: Mapping[str, str | Path]
                 ) -> None:
        """Keep where relative and package:// names resolve."""
        self._urdf_dir = None if urdf_dir is None else Path(urdf_dir)
        self._package_dirs = {name: Path(path) for name, path in package_dirs.items()}
        self._cache: dict[Path, np.ndarray] = {}

    def path(self, filename: str) -> Path:
        """Return the file a URDF mesh name refers to; ValueError if it cannot be resolved."""
        if filename.startswith('package://'):
            package, _, relative = filename[len('package://'):].partition('/')
            return self._package_share(package) / relative
        if filename.startswith('file://'):
            return Path(filename[len('file://'):])
        if Path(filename).is_absolute():
            return Path(filename)
        if self._urdf_dir is None:
            raise ValueError(f'mesh {filename!r} is relative and no URDF directory was given')
        return self._urdf_dir / filename

    def _package_share(self, package: str) -> Path:
        """Return a package's share directory: package_dirs first, then ament_index."""
        if package in self._package_dirs:
            return self._package_dirs[package]
        try:
            from ament_index_python.packages import get_package_share_directory
            return Path(get_package_share_directory(package))
        except (ImportError, LookupError, OSError, ValueError) as error:  # OSError: no index
            raise ValueError(f"package '{package}' is not found ({error}): install it, or "
                             'pass its share directory in package_dirs') from None

    def vertices(self, filename: str) -> np.ndarray:
        """Return a mesh file's (k, 3) vertices, in the file's units."""
        path = self.path(filename)
        if path not in self._cache:
            import trimesh
            mesh = trimesh.load(str(path), force='mesh')
            vertices = np.asarray(mesh.vertices, dtype=float)
            if vertices.size == 0:
                raise ValueError(f'mesh {str(path)!r} has no vertices')
            self._cache[path] = vertices
        return self._cache[path]
