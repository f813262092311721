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
Collision geometry and distances beside the model: link capsules, obstacles, clearance.

- shapes: the obstacles (Box, Sphere, Cylinder: exact primitives in the base frame) and a
  Scene that stacks them once for many checks.
- distance: closed-form segment-segment, segment-box and segment-slab distances.
- capsules: capsules that contain boxes, spheres, cylinders and mesh vertices.
- urdf_geometry: a URDF's <collision> elements as one capsule per link, in its frame.
- nearest: the hot check: every pair bounded in one batch (balls over the capsules, box
  face planes), the few pairs no bound rules out measured exactly in Python floats.
- closest: the closest points of single pairs in floats (the solve's near pairs).
- model: CollisionModel (bodies, checked pairs, clearance from FK frames) and pair sorting.
- build: a chain's model from its URDF or from its links' lengths.
"""

from fabrik_ros.collision.build import collision_model, CollisionSource
from fabrik_ros.collision.model import Body, Clearance, CollisionModel, PairDistances
from fabrik_ros.collision.shapes import Box, Cylinder, Obstacle, Scene, Sphere

__all__ = ['Body', 'Box', 'Clearance', 'collision_model', 'CollisionModel',
           'CollisionSource', 'Cylinder', 'Obstacle', 'PairDistances', 'Scene', 'Sphere']
