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
The solver's tuning: every constant that sets a heuristic, one line each.

Why each value is what it is, and the measurements behind it (with the commit they were
taken on), are in docs/solver.md under the heading the group's comment names.
"""

# docs/solver.md, Heuristics: Numerical thresholds
FAR_WEIGHT = 1e-3       # fit 'next': weight of the points beyond the next (they break ties)
COLOCATED = 1e-9        # metres: joint origins closer than this form one point
PARALLEL = 0.1          # sine of the angle below which two axes at a point count as one
SNAP = 1e-15            # a compiled constant this close to 0 or +-1 is taken as that value
ON_AXIS = 1e-10         # m^2: a weaker fit means the points lie on the axis: keep the angle

# docs/solver.md, Heuristics: Damping schedule (damping as a multiple of the
# squared error: large far from the target, vanishing near it)
DAMPING_START = 0.1     # the first closing step's damping
DAMPING_MIN = 1e-3      # the least damping a successful step lowers it to
STRETCH_DAMPING_DROP = 0.5  # out of reach: the damping's factor per Gauss-Newton step taken
DAMPING_MAX = 1e8       # beyond this no step lowers the error: the closing step has stalled
DAMPING_FLOOR = 1e-12   # m^2: keeps J J^T + damping I invertible in floating point

# docs/solver.md, Heuristics: Compiled straight-line code
COMPILED_PRODUCTS = 600  # damped solves of at most this many products run as compiled code
COMPILED_PAIRS = 600    # an effector's Hessian is compiled up to this many pairs of joints
MOMENT_POINTS = 8       # a run of this many fit points or more is fitted from moment sums

# docs/solver.md, Heuristics: Newton polish out of reach (damping as a multiple of the Hessian's
# largest diagonal entry)
NEWTON_DAMPING_START = 1e-3  # the polish starts near a minimum: light damping
NEWTON_DAMPING_MIN = 1e-9    # the least damping a successful Newton step lowers it to
NEWTON_JOINTS = 200     # Newton's steps for an effector moved by at most this many joints
NEWTON_STALL = 1e-12    # a model gain below this fraction of the objective has converged
CONVEX_SHIFT = 1e-9     # of the largest diagonal entry: a curvature below minus this is a saddle

# docs/solver.md, Heuristics: Pose damping floor
POSE_DAMPING_FLOOR = 2.5e-5  # m^2: the least damping of an orientation solve's steps

# docs/solver.md, Heuristics: Explore stall, Pose stall
STALL = 1e-2            # tolerances: a closing step gaining less than this (plus ...) stalls
STALL_RELATIVE = 1e-5   # ... this fraction of the error (a far target's rounding) stalls
EXPLORE_STALL = 1e-2    # exploring seeds: a step gaining less than this share of the excess
CONFIRM_STALL = 0.1     # ... and this share once a restart is back at the best residual
POSE_STALL = 0.1        # an orientation solve's step gaining less than this share restarts
CREEP = 0.1             # out of reach: a step gaining less than this share of the excess creeps

# docs/solver.md, Heuristics: Limit steering
LIMIT_MARGIN = 0.3      # radians (metres for a slide): nearer a limit, closing steps shrink
LIMIT_MARGIN_SHARE = 0.15  # ... or this share of the joint's range where that is less
LIMIT_WEIGHT_MIN = 0.05  # ... but its weight never below this, so it can reach the limit
LIMIT_PUSH = 0.2        # share of a joint's intrusion into the margin the null space undoes

# docs/solver.md, Heuristics: Basin test and the nudged retry
SADDLE_EXCESS = 0.5     # of the reach: this far above its floor an attempt may sit on a saddle
NUDGE = 0.1             # radians: how far a retry out of reach turns each joint
STOP_RETRIES = 2        # out of reach: retries from random seeds while a root stays at a stop

# docs/solver.md, Heuristics: Tracking fast path
TRACK_STEPS = 3         # closing steps the lean tracking path takes before the full solve's

# docs/solver.md, Heuristics: Tracking starts ahead on a fast track
MOMENTUM = 0.8          # share of the last tracked move a fast-tracked solve starts ahead by
MOMENTUM_MOST = 0.3     # rad (m for a slide): after a joint's larger move, none ahead
REDUNDANT_MOMENTUM = 0.65  # ... with redundancy (seven joints or more): less, see _note_move
REDUNDANT_MOVE_LEAST = 0.02  # rad (m): ... and only after some joint's larger move
CARRY_WAIT = 15         # solves at most between tries of a carried closing step (_tracked)

# docs/solver.md, Heuristics: Confirming restarts, Tracking keeps its branch
RESTART_SEED = 20111    # the restart seeds' random generator seed: solves are reproducible
RESTART_ERROR = 10.0    # tolerances: the default restart_error ...
RESTART_ERROR_REACH = 1e-3  # ... but at most this share of the reach (small robots)
AGREE = 1e-3            # of the reach (at least a tolerance): restarts this close agree
UNREACHABLE_AFTER = 2   # default unreachable_after per effector sharing joints (redundant)

# docs/solver.md, Heuristics: Outer shell, Workspace map
FARTHEST_SAMPLES = 200  # random poses besides the restart seeds to find the farthest reach
FARTHEST_STARTS = 12    # ... the farthest of them pushed out by Newton steps ...
FARTHEST_STEPS = 100    # ... at most this many steps each
MAP_SAMPLES = 1024      # random poses whose effector points map the workspace
BEYOND_SHELL = 0.01     # of the reach: a target this far beyond the farthest reach is outside

# docs/solver.md, Heuristics: Wrist splits
WRIST_RESTARTS = 2      # restarts of the wrist centre's solve before the whole arm's
WRIST_BRANCHES = 2      # solves from other seeds where the wrist's limits rule a branch out
FREE_STEP = 0.5         # radians: a redundant shoulder joint's step where its seed angle fits none
FREE_STEPS = 6          # ... steps either way tried before the iterative solve of the centre
TRACK_FREES = (0.05, 0.1, 0.2, 0.4, 0.7, 1.0, 1.5, 2.0, 3.0)  # rad: tracking's nearest exact
#                         solution scans the free shoulder angle this far either way of the seed's

# docs/solver.md, Heuristics: Caches
KEPT_WEIGHTS = 16       # sets of subtree weights a tree keeps (one per targeted subset)
KEPT_LAYOUTS = 64       # pass layouts kept (one per set of groups a pass solves)

# docs/solver.md, Heuristics: Held effectors
HELD_WEIGHT = 1e4       # default weight of an effector without a target: it holds
