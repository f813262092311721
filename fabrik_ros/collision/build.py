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
A chain's collision model, from its URDF's <collision> elements or from its links' lengths.

Imports numpy and the standard library only (meshes: see urdf_geometry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from fabrik_ros.collision.capsules import fit_capsule
from fabrik_ros.collision.model import (Body, checked_pairs, CollisionModel, SAMPLES,
                                        srdf_disabled_pairs)
from fabrik_ros.collision.urdf_geometry import links_from_urdf
import numpy as np

LINK_RADIUS_SHARE = 0.05    # a plain chain's capsule radius, per metre of mean link length


@dataclass(frozen=True)
class CollisionSource:
    """Where a chain's collision geometry comes from: its URDF, or none (plain capsules)."""

    urdf_xml: str | None = None
    urdf_dir: str | Path | None = None      # where relative mesh names resolve
    package_dirs: Mapping[str, str | Path] = field(default_factory=dict)
    srdf_xml: str | None = None             # its <disable_collisions> are never checked
    samples: int = SAMPLES                  # random configurations that sort the pairs
    link_radius: float | None = None        # plain chains; None: LINK_RADIUS_SHARE of mean


def collision_model(chain: Any, source: CollisionSource) -> CollisionModel:
    """
    Return the collision model of a Chain: URDF capsules if its URDF has geometry, else plain.

    Plain capsules run from each joint to its children and effectors, with one radius; a
    model from a URDF's <collision> geometry is `described`.
    """
    links = []
    if source.urdf_xml is not None:
        links = links_from_urdf(source.urdf_xml, chain.base_link, chain.all_joint_names,
                                source.urdf_dir, source.package_dirs)
    if links:
        bodies = [Body(link.link, link.frame, *link.capsule) for link in links]
        adjacent = [(link.link, link.parent) for link in links if link.parent is not None]
    else:
        bodies, adjacent = _plain_bodies(chain, source.link_radius)
    pairs = checked_pairs(CollisionModel(bodies, ()), adjacent,
                          srdf_disabled_pairs(source.srdf_xml), chain.world_frames,
                          chain.lower, chain.upper, source.samples)
    model = CollisionModel(bodies, pairs)
    model.described = bool(links)
    return model


def _plain_bodies(chain: Any, link_radius: float | None
                  ) -> tuple[list[Body], list[tuple[str, str]]]:
    """Return a capsule per joint around its offsets to its children, and the adjacent pairs."""
    offsets: list[list[np.ndarray]] = [[np.zeros(3)] for _ in chain.joints]
    for joint in chain.joints:
        if joint.parent >= 0:
            offsets[joint.parent].append(np.asarray(joint.origin_xyz))
    for effector in chain.effectors:
        offsets[effector.parent].append(np.asarray(effector.offset))
    lengths = [np.linalg.norm(offset) for points in offsets for offset in points[1:]]
    lengths = [length for length in lengths if length > 0.0]
    radius = (link_radius if link_radius is not None
              else LINK_RADIUS_SHARE * (float(np.mean(lengths)) if lengths else 1.0))
    bodies = []
    for index, (joint, points) in enumerate(zip(chain.joints, offsets)):
        points = np.array(points)
        capsule = fit_capsule(points, np.full(len(points), radius))
        bodies.append(Body(joint.link_name, index + 1, *capsule))
    adjacent = [(joint.link_name, chain.joints[joint.parent].link_name)
                for joint in chain.joints if joint.parent >= 0]
    return bodies, adjacent
