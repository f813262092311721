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


"""IkSolver: the settings, and the solve that runs the attempts, restarts and splits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
import math
import time

from fabrik_ros.chain import Chain
import numpy as np

from .attempt import _Solve, PassSettings
from .collisions import Collisions, CollisionSettings, Problem
from .groups import _Group, _independent_groups, _passes
from .inputs import _Inputs
from .limits import JointLimits
from .model import _Tree
from .orientations import _Orientations
from .passes import _stretched_fits, stretched
from .points import _Fit, _State
from .reach import _ClosedReach
from .restarts import _Restarts, _unreachable_after
from .result import _packaged, _Steps, IkResult
from .rotations import _ORIGIN
from .splits import _Split
from .tracking import _Tracking
from .tuning import HELD_WEIGHT, RESTART_ERROR, RESTART_ERROR_REACH
from .validation import _checked_settings, _checked_timeout, _orientation_mode, _unit_axis
from .workspace import _restart_seeds, _Workspace


class IkSolver(_Inputs, _Tracking, _Restarts, _Workspace, CollisionSettings):
    """
    FABRIK inverse kinematics for a Chain: one or several effectors, pinned or free root.

    tolerance: metres; a solve stops when every effector with a target (or a held pose) is
    this close. max_iterations: FABRIK iterations plus closing steps of the whole solve,
    all attempts together. timeout: seconds, the solve's time budget (like MoveIt's
    kinematics_solver_timeout), None for none; when it runs out the best pose found is
    returned (result.timed_out). clock: the time source in seconds (time.perf_counter;
    tests pass their own).
    root: 'pinned' (the base stays) or 'free' (the base slides toward the targets like the
    end of a rope; result.base_position says where it went).
    fit: which downstream points a joint's angle brings onto the FABRIK points for a
    reachable target: 'chain' (the whole downstream chain) or 'next' (the next points, the
    classic forward pass, the tips below breaking ties). The default, 'auto', is 'next'
    where every joint point turns about two or more axes (universal or ball joints,
    FABRIK's own model: each point can take the next one's FABRIK position, and the classic
    pass needs fewer iterations) and 'chain' otherwise (hinges and arms, whose points
    cannot: the whole chain is the better compromise). Out of reach, FABRIK lays the chain
    on the straight line to the target; joints fit the next points on it, every farther
    point breaking ties, except in the first attempt of a single chain fitted 'chain'
    toward a position target, which keeps the whole-chain fit (see solve).
    fabrik_gain, closing_radius: FABRIK iterates while each iteration cuts the error below
    fabrik_gain times the previous one and the error exceeds closing_radius (metres,
    default 10 % of the reach); then damped least-squares steps close the rest, quadratic
    where FABRIK is linear. A seed already within closing_radius goes straight to them.
    max_restarts: attempts from other seeds when a solve stalls short of a target that may
    be reachable. unreachable_after: restarts that end at the best pose's residual
    (within 0.1 % of the reach, at least one tolerance) without a closer one in between,
    after which the target counts as unreachable (a hole behind the joint limits) and the
    solve ends; None runs all max_restarts. The default, 'auto', is 2 for a chain with
    more joints than three per effector (position leaves it redundant: wide basins, so
    agreeing seeds tell), times the effectors of the largest group sharing joints (4 for
    two arms on one torso), and None otherwise (isolated solutions in small basins). For
    one effector's position on a pinned root the first restart starts from the pose of a
    workspace map whose effector lies nearest the target (1024 random poses, mapped on the
    first such restart: a few milliseconds, which can take that one solve past its time
    budget); unless unreachable_after is None, that restart ending back at the best
    residual settles the target as unreachable on its own. Unless None, a position solve
    on a pinned root also stops restarting when its best pose is
    about as close as any pose can be: the target lies farther from the effector's anchor
    than the effector ever gets by more than 1 % of the reach (that distance is found on
    the first such solve: a few milliseconds, which can take that one solve past its time
    budget).
    restart_error: metres (default 10 tolerances, at most 0.1 % of the reach, at least one
    tolerance); when tracking (the seed's effectors start within
    closing_radius of their targets) only a solve that stalls farther than this restarts;
    closer, the seed's branch is kept: a miss that small is a target a joint limit keeps
    just out of reach, not a wrong branch, and a restart would jump to another branch (a
    flip) for a fraction of it.
    effector_weights: effector name -> weight > 0. The solver minimises sum w_i d_i^2 over
    the effectors with a target or holding (d_i metres from its goal): where targets
    conflict over shared joints (a torso), the weights set the compromise. Defaults: 1 for
    an effector with a target, 100 for one holding its pose, so held effectors hold.
    Effectors that share no joint with an unreachable one reach their targets whatever
    the weights.

    Orientation targets (solve(..., orientation=...)): orientation_tolerance, radians, is
    how close the tool frame must come. orientation_mode says which of its freedoms the
    target fixes, one for every effector or a mapping effector name -> mode: 'full' (the
    whole frame), 'axis' (the tool axis points along the target's, the roll about it is
    free: drills, cameras, 5-DOF arms) or 'position' (the orientation is reported, not
    sought). tool_axis: that axis in the tool frame (a 3-vector, or a mapping per effector),
    default z. Inside, an orientation error of a radians weighs as much as
    orientation_scale * a metres of position error, orientation_scale = tolerance /
    orientation_tolerance (0.1 m by default): both tolerances weigh the same. An
    orientation solve treats the effectors as one group, and with unreachable_after
    'auto' it tries every restart seed (an oriented tool has little redundancy).
    A serial arm whose last three joints turn about axes through one point (a spherical
    wrist, like most industrial six-joint arms: fabrik_ros.ik.wrist) splits a full pose in two:
    the joints above the wrist bring its centre where the target pose puts it (a position
    solve: FABRIK and closing steps, or closed form where the joints above the wrist are a
    spherical shoulder and an elbow), then the wrist turns the tool onto the target
    orientation in closed form (exact, the solution nearest the seed; in 'axis' mode, where
    the centre lies on the tool axis, it points that axis, the last wrist joint at its seed
    angle), unless the seed is within closing_radius (tracking keeps to closing steps, which
    move it on continuously). Where the wrist's limits allow neither solution on the arm's
    branches tried, or the centre is missed, the whole arm's solve takes over from the seed
    with the iterations left. An arm of the UR family (three parallel joints, an offset
    wrist) takes cold full poses in closed form, the solution nearest the seed of its eight;
    so does a seven-joint arm of the Franka Panda's kind (a spherical shoulder, an elbow, a
    fifth and a sixth axis that meet: fabrik_ros.ik.offset_elbow), its seventh joint at its
    seed angle, or else at the nearest angle of a sweep at which a solution fits the limits.
    Seven joints: a spherical shoulder, an elbow, a wrist (iiwa, Panda): cold positions in
    closed form, the wrist's joints at their seeds' angles (fabrik_ros.ik.reach).

    Collisions (fabrik_ros.ik.collisions): collision_margin, metres, is how far apart every
    checked pair must be in a reached answer: the links against each other
    (self_collision, the chain's collision model: chain.collision; default None: on where
    the URDF gives the links <collision> geometry, else off) and against the obstacles
    of set_obstacles. An answer that clear is returned exactly as found; a
    closer one starts a search for a clear pose (constrained closing steps, then solves
    from other seeds), and a target reachable only in collision ends at the best clear
    compromise, not reached. result.clearance and result.closest_pair report the answer's
    smallest distance and its pair. With nothing to check (self_collision=False and no
    obstacles, or a model without checked pairs) solves are exactly those without it.
    """

    def __init__(self, chain: Chain, tolerance: float = 1e-4, max_iterations: int = 100,
                 root: str = 'pinned', *, fit: str = 'auto', fabrik_gain: float = 0.8,
                 closing_radius: float | None = None, max_restarts: int = 24,
                 restart_error: float | None = None,
                 unreachable_after: int | None | str = 'auto',
                 timeout: float | None = None, clock: Callable[[], float] = time.perf_counter,
                 effector_weights: Mapping[str, float] | None = None,
                 orientation_tolerance: float = 1e-3,
                 orientation_mode: str | Mapping[str, str] = 'full',
                 tool_axis: object = (0.0, 0.0, 1.0), collision_margin: float = 0.01,
                 self_collision: bool | None = None) -> None:
        _checked_settings(tolerance, max_iterations, root, fit, fabrik_gain, max_restarts,
                          orientation_tolerance)
        self._unreachable_auto = unreachable_after == 'auto'
        self.unreachable_after = _unreachable_after(unreachable_after, chain)
        self.timeout = _checked_timeout(timeout)
        self.clock = clock
        self.chain = chain
        self.tolerance = float(tolerance)
        self.orientation_tolerance = float(orientation_tolerance)
        self.orientation_scale = self.tolerance / self.orientation_tolerance
        self._effector_index = {name: i for i, name in enumerate(chain.effector_names)}
        self.orientation_modes = tuple(self._per_effector(
            orientation_mode, 'orientation_mode', _orientation_mode, 'full'))
        self.tool_axes = self._per_effector(tool_axis, 'tool_axis', _unit_axis,
                                            (0.0, 0.0, 1.0))
        self._pose_trees: dict[tuple[str, ...], tuple[_Tree, list]] = {}
        self.max_iterations = max_iterations
        self.root = root
        self.fabrik_gain = float(fabrik_gain)
        self._tree = _Tree(chain)
        if fit == 'auto':
            fit = 'next' if self._tree.ball_joints else 'chain'
        self.fit = fit
        self._fits = self._tree.whole_fit if fit == 'chain' else self._tree.next_fit
        reach = max(effector.reach for effector in self._tree.effectors)
        self.reach = reach
        if closing_radius is None:
            closing_radius = 0.1 * reach
        if not closing_radius >= 0.0:   # inf allowed: the closing step alone
            raise ValueError(f'closing_radius must be >= 0 metres, got {closing_radius}')
        self.closing_radius = float(closing_radius)
        # With a pinned root, effectors that share no joint are independent sub-problems;
        # a free root moves them all.
        everything = _Group(tuple(range(len(chain.effectors))), tuple(range(chain.dof)))
        self._groups = (_independent_groups(chain.moves_effector) if root == 'pinned'
                        else (everything,))
        self._everything = (everything,)
        self.effector_weights = self._weights(effector_weights or {})
        # One effector, pinned, at weight 1: a seed already close takes the lean path (_track)
        # (position only: unless joints that do not move it make a group of their own).
        self._trackable = root == 'pinned' and len(chain.effectors) == 1 and \
            self.effector_weights.get(chain.effector_names[0], 1.0) == 1.0
        self._trackable_position = self._trackable and self._groups == self._everything
        self.limits = JointLimits.of(chain.lower.tolist(), chain.upper.tolist())
        self._last = (self._tree, self._tree.neutral)  # the last answer's state (see _start)
        self.max_restarts = max_restarts
        if restart_error is None:
            restart_error = max(self.tolerance, min(RESTART_ERROR * self.tolerance,
                                                    RESTART_ERROR_REACH * reach))
        if not restart_error >= self.tolerance:
            raise ValueError(f'restart_error must be >= tolerance ({self.tolerance} m), got '
                             f'{restart_error}')
        self.restart_error = float(restart_error)
        self._seed_box, self._restart_seeds = _restart_seeds(chain, max_restarts)
        self._farthest_found: list[float | None] = [None] * len(self._tree.effectors)
        self._workspace_map: tuple[list[list[float]], np.ndarray, np.ndarray] | None = None
        self._split = _Split.of(self, max_restarts) \
            if self._trackable and self.orientation_modes != ('position',) else None
        self._collisions = Collisions(chain, collision_margin, self_collision)
        self._reach = _ClosedReach.of(self)    # cold position solves in closed form

    # ------------------------------------------------------------------ solve

    def solve(self, target: object, seed: object = None, trace: bool = False,
              timeout: float | None = None, *, orientation: object = None) -> IkResult:
        """
        Return joint angles that bring the effectors to their targets.

        target: (3,) metres in the base frame for a single effector; (m, 3) with all-NaN rows
        for effectors without a target; or a mapping effector name -> (3,). Effectors
        without a target hold the position the seed gives them. seed: (n,) radians, clipped
        into the limits; default chain.neutral(). timeout: seconds for this solve (default
        the solver's). An unreachable target leaves the chain stretched toward it as far as
        the joints allow; result.error is the remaining distance and reached is False.
        Raises ValueError on NaN/inf, wrong shapes, unknown effector names, an all-NaN
        target, a non-finite seed or a timeout that is not a positive number.

        orientation: the tool frame's target orientation, a quaternion (x, y, z, w) in ROS
        order, base frame, normalised if not unit; for trees a mapping effector name ->
        quaternion (or (m, 4) with NaN rows), each for an effector with a position target.
        What it fixes follows orientation_mode; None (default): position only, exactly the
        solve without orientations. An unreachable pose ends at the best compromise of
        both errors (see orientation_scale), both reported.

        Obstacles and self-collision: see the class docstring; result.clearance is the
        answer's clearance (inf with nothing to check).
        """
        targets = self._targets(target)
        rotations = self._orientations(orientation, targets) if orientation is not None \
            else None
        budget = self.timeout if timeout is None else _checked_timeout(timeout)
        deadline = self.clock() + budget if budget is not None else math.inf
        answer = self._answer(targets, rotations, seed, deadline, trace)
        if not self._collisions.active:
            return answer
        return self._collisions.checked(self, answer, Problem(targets, rotations, seed,
                                                              deadline))

    def _answer(self, targets: list[tuple[float, float, float] | None],
                rotations: list | None, seed: object, deadline: float,
                trace: bool = False) -> IkResult:
        """Return the answer of a solve's parsed inputs, collisions aside (see solve)."""
        orientations = None
        tree, tree_fits, all_groups = self._tree, self._fits, self._groups
        unreachable_after = self.unreachable_after
        trackable = self._trackable_position
        if rotations is not None:
            modes = self.orientation_modes if None not in rotations else tuple(
                mode if rotation is not None else 'position'
                for rotation, mode in zip(rotations, self.orientation_modes))
            if modes.count('position') < len(modes):
                tree, tree_fits = self._pose_tree(modes)
                orientations = _Orientations(tree, rotations, modes, self.tool_axes,
                                             self.orientation_scale)
                all_groups = self._everything
                trackable = self._trackable
                if self._unreachable_auto:
                    # An oriented tool leaves little or no redundancy (six joints, a full
                    # pose: isolated solutions; a free roll: one family) in small basins.
                    unreachable_after = None
        start = self._start(seed, tree)
        if trackable and not trace:
            tracked = self._tracked(tree, start, targets, rotations, orientations, deadline)
            if tracked is not None:
                return tracked
        spent = None    # what a wrist's split solve spent before handing over (_Split)
        if self._split is not None and orientations is not None:
            split, spent = self._split.solve(tree, start, targets, rotations, orientations,
                                             deadline, trace, self._result)
            if split is not None:
                return split
        elif orientations is None and self._reach is not None:
            reached = self._reach.solve(tree, start, targets, rotations, trace, self._result)
            if reached is not None:
                return reached
        return self._full_solve(tree, tree_fits, all_groups, start, targets, rotations,
                                orientations, unreachable_after, deadline, trace, spent)

    def _full_solve(self, tree: _Tree, tree_fits: list[_Fit], all_groups: tuple[_Group, ...],
                    start: _State, targets: list[tuple[float, float, float] | None],
                    rotations: list | None, orientations: _Orientations | None,
                    unreachable_after: int | None, deadline: float, trace: bool,
                    spent: _Steps | None) -> IkResult:
        """
        Return the answer of the passes, their attempts and restarts (see solve).

        spent: what a split solve spent before handing over (see _Split), or None.
        """
        free_root = self.root == 'free'
        goals = [goal if goal is not None else start.points[effector.point]
                 for goal, effector in zip(targets, tree.effectors)]
        weights = [self.effector_weights.get(name, 1.0 if goal is not None else HELD_WEIGHT)
                   for name, goal in zip(self.chain.effector_names, targets)]
        stretch, floors = (stretched(tree, targets, start, self.tolerance) if not free_root
                           else ({}, [0.0] * len(targets)))
        if orientations is not None:    # the target frames, out of reach where they can be
            bases = [stretch.get(effector.point, goal)
                     for goal, effector in zip(goals, tree.effectors)]
            orientations.goals = orientations.marker_goals(bases)
        passes, rest = _passes(all_groups, goals, weights, floors, stretch, start, tree)
        solve = spent
        settings = PassSettings(self.tolerance, self.reach, self.closing_radius,
                                self.fabrik_gain, self.restart_error, self.max_iterations,
                                self.clock)
        for groups, pass_stretch in passes:
            fits = retry_fits = tree_fits
            if pass_stretch:
                fits, retry_fits = _stretched_fits(
                    tree, tree_fits, pass_stretch,
                    self.fit == 'chain' and orientations is None and len(tree.effectors) == 1)
            solve = _Solve(settings, self.limits, self._tree, groups, goals, weights, floors,
                           pass_stretch, fits, free_root, rest, trace, deadline, solve,
                           orientations, retry_fits)
            solve.attempt(start)
            self._restart(solve, start, bool(pass_stretch), unreachable_after)
            rest = solve.pose(), solve.best_fit.objective
        return self._result(solve.final(), solve.tree, targets, rotations, _Steps(
            solve.fabrik_iterations, solve.closing_steps, solve.restarts, solve.initial_error,
            solve.fabrik_error, solve.history, solve.trace, solve.timed_out), orientations)

    def _result(self, state: _State, tree: _Tree, targets: list, rotations: list | None,
                steps: _Steps, orientations: _Orientations | None = None) -> IkResult:
        """
        Package a final state; errors are measured from its forward kinematics.

        orientations: the solve's, whose errors of the state are reused where it has them.
        """
        if state.base == _ORIGIN:   # a free root moved: a seed's state is not this one
            self._last = (tree, state)
        return _packaged(state, tree, targets, rotations, steps, orientations,
                         self.tolerance, self.orientation_tolerance)
