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
FABRIK inverse kinematics on chains and trees of revolute, prismatic and mimic joints.

Targets are positions or full poses (orientation per effector: full, a free roll about a
tool axis, or none); the answer's joint values are exact (FK-consistent) and within limits.

The solver sees the model as points, FABRIK style: the base, the distinct joint origins
(co-located joints such as a spherical wrist form one multi-axis point) and the effectors.
One FABRIK iteration is

1. a tip-to-root pass: every effector point goes to its goal (its target, or where it is if
   it has none: it holds its pose) and each point is pulled back onto its child at the fixed
   link length; a point with several children (a sub-base) goes to the centroid of their
   proposals (Aristidou & Lasenby 2011, multi-end-effector scheme);
2. a root-to-tip pass that is a forward-kinematics sweep: at each joint the angle about its
   axis is chosen in closed form to rotate the downstream points (at their current angles)
   as close as possible to the points of pass 1 (least squares), then clamped to the
   limits. Angles and positions stay consistent with forward kinematics by construction,
   so offsets off the link line are handled exactly and limits are never violated.

FABRIK does the large moves; once it is within a closing radius of the target (or stops
gaining fast), damped least-squares steps on the true kinematics (the sweep yields each
joint's axis and origin, hence the position Jacobian) close the rest quadratically. Those
steps keep redundant joints off their limits (weighted least norm, and a null-space push
back toward mid-range), so warm-started tracking stays on the seed's branch; a solve that
stalls well short of a possibly reachable target restarts from other seeds. Every accepted
step lowers the error, and the best pose is kept. Targets out of reach lay the chain
straight toward them (FABRIK's rule), then end as close as the joints allow.

Hot paths are written on plain floats: for 3-vectors and 3x3 frames this is several times
faster in CPython than numpy calls. Frames are row-major 9-tuples in a canonical form whose
local z axis is the joint axis, so a joint rotation is a 2D rotation of two columns. The
sweep is compiled per chain to straight-line code with its constants folded.
The package imports numpy and the standard library only. Units: metres, radians.

Modules, bottom-up (each imports only those before it when it runs): tuning (every
heuristic's constant), rotations, validation, linalg, limits, points, writer, kernels, moves
(the tracking path's position move), sweep, layout, model (the point model), passes
(FABRIK's tip-to-root pass), orientations, objective, result, groups, closing (the closing
and Newton steps), attempt (one pass of a solve), wrist (closed forms), splits (the wrist
splits), tracking, restarts, workspace, inputs, branches (every exact solution of a closed
form), collisions (the check of every answer, the search for a clear one) and solver
(IkSolver, the orchestrator).
"""

from .result import IkResult
from .solver import IkSolver
from .tuning import HELD_WEIGHT
from .validation import (FIT_MODES, MAX_COORDINATE_M, ORIENTATION_MODES, quaternion_rotation,
                         ROOT_MODES)

__all__ = ['FIT_MODES', 'HELD_WEIGHT', 'IkResult', 'IkSolver', 'MAX_COORDINATE_M',
           'ORIENTATION_MODES', 'quaternion_rotation', 'ROOT_MODES']
