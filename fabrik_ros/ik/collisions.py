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
Collision-aware answers: every answer's clearance, and the search for a clear one.

The solver checks each answer (fabrik_ros.collision: the links' capsules against each other
and against the obstacles) when there is a pair to check. An answer at least
collision_margin clear is returned exactly as found. Otherwise the search runs
constrained closing steps: damped least squares on the target's error, with the distance
of every pair near the margin kept above it as a linearised inequality (its gradient from
the pair's closest points), a step accepted only if the new pose is clearer (while in
collision) or clear and closer (once clear). Where the answer reached its target, other
branches come first: a closed form's exact solutions (fabrik_ros.ik.branches: all of an arm
of the UR family's, none clear meaning the pose has none; a Panda-like arm's at its seventh
angle swept), nearest the seed first, the first clear one the answer (all listed: measured
from the solver's own FK, fabrik_ros.ik.clear_solution). A redundant arm's
answer then gets closing steps; arms whose solutions were not all listed solve from the
restart seeds. Closing steps then start from the seed (and the answer).
The clear pose with the smallest error wins and is reached only if within the tolerances;
a target reachable only in collision ends at that compromise, not reached. With no clear
pose found the clearest is returned, not reached.
"""

from __future__ import annotations

from functools import cached_property
import math
from typing import Iterator, NamedTuple, Sequence, TYPE_CHECKING

from fabrik_ros.chain import ChainError
from fabrik_ros.collision import CollisionModel, Obstacle, Scene
from fabrik_ros.collision.nearest import CheckRows, nearest_pair, pair_bodies
import numpy as np

from .answer_frames import AnswerFrames
from .branches import exact_solutions
from .clear_solution import first_clear_solution
from .constrained import constrained_step
from .result import IkResult
from .rotations import _rotation_error
from .search_task import Geometry, goal_turns, goals_met, Task

if TYPE_CHECKING:   # the solver imports this module
    from .solver import IkSolver

INFLUENCE = 0.05        # m: pairs closer than margin + this constrain a closing step
BUFFER = 0.002          # m: a step aims this far beyond the margin
CLOSING_STEPS = 40      # constrained closing steps from one start
RESTART_CLOSING_STEPS = 12
COLLISION_RESTARTS = 16     # solves from clear seeds looking for a clear branch
CLOSED_CANDIDATES = 1       # of their answers, the closest gets closing steps too
SEEDS = 64                  # random configurations the clear seeds are drawn from
SEED_RANDOM = 2026
SLOW_STEPS = 2          # clear steps that barely close the error end a start's closing:
SLOW_RATIO = 0.25       # one whose squared error stays above this share of the last's
MAX_STEP = 0.25         # rad or m: the largest joint motion of one step
DAMPING = 1e-3          # the damping's start (Jacobian entries are metres per radian)
DAMPING_MAX = 1e3


class Problem(NamedTuple):
    """One solve's parsed inputs, as the search re-solves them."""

    targets: list           # per effector (3,) metres or None
    rotations: list | None  # per effector 9-tuple or None; None: position only
    seed: object            # as solve takes it (None: neutral); (n,) clipped for the search
    deadline: float         # the solver's clock


def checked_margin(margin: object) -> float:
    """Return collision_margin as a float, or raise ValueError (one line)."""
    try:
        value = float(margin)
    except (TypeError, ValueError):
        raise ValueError(f'collision_margin must be a number of metres, got {margin!r}'
                         ) from None
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f'collision_margin must be a finite distance >= 0 metres, got '
                         f'{margin!r}')
    return value


def described_self_collision(chain: object) -> tuple[bool, str]:
    """
    Return whether the chain's URDF gives its links <collision> geometry, and why not.

    The reason is '' but for a description whose geometry cannot be read (a mesh whose
    package is not installed, say): then self-collision is off, and that reason says why.
    """
    urdf = chain.collision_source.urdf_xml
    if urdf is None or '<collision' not in urdf:    # no model built for nothing
        return False, ''
    try:
        return chain.collision.described, ''
    except ChainError as error:
        return False, f'self-collision off: {error}'


class Collisions:
    """A solver's collision settings, obstacles and the check of its answers."""

    def __init__(self, chain: object, margin: object, self_collision: object) -> None:
        """
        Validate the settings; build the chain's collision model if self pairs count.

        self_collision None (auto): on where the chain's URDF gives its links <collision>
        geometry, off otherwise (capsules along the links are guesses; obstacles are
        still checked against them); a URDF whose geometry cannot be read turns it off,
        the reason in `status`. True with unreadable geometry raises ChainError.
        """
        if self_collision is not None and not isinstance(self_collision, (bool, np.bool_)):
            raise ValueError(f'self_collision must be True, False or None (auto), got '
                             f'{self_collision!r}')
        self.chain = chain
        self.margin = checked_margin(margin)
        self.status = ''
        self._model: CollisionModel | None = None
        self._geometry: Geometry | None = None
        self._frames = AnswerFrames(chain)  # answers checked from the solver's FK
        self._seeds: np.ndarray | None = None
        self._clear_seeds: tuple[Scene | None, dict[int, bool]] = (None, {})
        # rows() of the scene, and the names of its pairs as they are asked for
        self._rows: tuple[Scene | None, CheckRows | None, dict[int, tuple[str, str]]] = (
            None, None, {})
        self.neutral = chain.neutral().tolist()     # the seed of a solve given none
        self.scene = Scene([])  # the obstacles (set_obstacles)
        if self_collision is None:
            self_collision, self.status = described_self_collision(chain)
        self.self_collision = bool(self_collision)
        if self.self_collision:
            self._model = chain.collision
        self.active = self._model is not None and len(self._model.pairs) > 0
        if self.active:     # built here, not by the first solve
            self.rows()

    @property
    def model(self) -> CollisionModel:
        """Return the checked model: the chain's, without its self pairs if those are off."""
        if self._model is None:
            bodies = self.chain.collision.bodies
            self._model = CollisionModel(bodies, ())
        return self._model

    def set_obstacles(self, obstacles: Scene | Sequence[Obstacle]) -> None:
        """
        Replace the obstacles (base frame); TypeError naming one that is no primitive.

        The check's rows against them are built here (nearest.CheckRows), once.
        """
        if isinstance(obstacles, Scene):
            scene = obstacles
        else:
            try:
                items = list(obstacles)
            except TypeError:
                raise TypeError('obstacles must be a list of Box, Sphere and Cylinder, got '
                                f'{type(obstacles).__name__}') from None
            scene = Scene(items)
        model = self.model if len(scene) else self._model
        self.scene = scene
        self.active = model is not None and (len(model.pairs) > 0 or
                                             (len(scene) > 0 and len(model.bodies) > 0))
        if self.active:     # the check's rows for these obstacles: not the next solve's work
            self.rows()

    @property
    def obstacles(self) -> tuple:
        """Return the obstacles the answers keep clear of."""
        return self.scene.obstacles

    def clear_seeds(self) -> Iterator[np.ndarray]:
        """
        Yield the search's seeds clear of the obstacles and of themselves, in a fixed order.

        Each seed is checked once per scene, when first needed.
        """
        if self._clear_seeds[0] is not self.scene:
            self._clear_seeds = (self.scene, {})
        known = self._clear_seeds[1]
        for index, seed in enumerate(self.seeds()):
            if index not in known:
                known[index] = self.model.is_clear(self.chain.world_frames(seed), self.scene,
                                                   self.margin)
            if known[index]:
                yield seed

    def seeds(self) -> np.ndarray:
        """Return the search's seeds: random configurations (the same for a chain)."""
        if self._seeds is None:
            chain = self.chain
            low = np.where(np.isfinite(chain.lower), chain.lower, -np.pi)
            high = np.where(np.isfinite(chain.upper), chain.upper, np.pi)
            low, high = np.maximum(low, -np.pi), np.minimum(high, np.pi)
            high = np.maximum(high, low)
            self._seeds = np.random.default_rng(SEED_RANDOM).uniform(low, high,
                                                                     (SEEDS, chain.dof))
        return self._seeds

    def rows(self) -> CheckRows:
        """Return the check's rows of the model against the obstacles (nearest.CheckRows)."""
        scene, rows, _ = self._rows
        if scene is not self.scene:
            rows = self.model.check_rows(self.scene)
            self._rows = (self.scene, rows, {})
        return rows

    def nearest(self, world: np.ndarray, floor: float = -math.inf,
                suspects: Sequence[int] = ()) -> tuple[float, int]:
        """Return the clearance at `world`, its pair (rows().pairs, -1: none); see nearest_pair."""
        rows = self.rows()
        if not rows.any:
            return math.inf, -1
        distance, pair, _ = nearest_pair(rows, world, floor, suspects=suspects)
        return distance, pair

    def pair_names(self, pair: int) -> tuple[str, str]:
        """Return the names of a pair of rows() (as Clearance.names; -1: '', '')."""
        rows = self.rows()
        names = self._rows[2]
        if pair not in names:
            bodies = pair_bodies(rows, pair) if pair >= 0 else (-1, -1)
            names[pair] = self.model.body_names(self.scene, *bodies)
        return names[pair]

    def _world(self, q: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Return the FK frames of q, moved by a free root's base."""
        world = self.chain.world_frames(q)
        if base.any():
            world[:, :3, 3] += base
        return world

    def checked(self, solver: IkSolver, answer: IkResult, problem: Problem) -> IkResult:
        """Return answer with its clearance if clear, else the search's answer (see module)."""
        # floor: below the margin the first pair found, not the smallest (see the search)
        rows, floor = self.rows(), self.margin if solver.root != 'free' else -math.inf
        found = rows.any and self._frames.nearest(rows, solver, answer, floor)
        answer.clearance, pair = found or self.nearest(self._world(answer.q,
                                                                   answer.base_position), floor)
        if answer.clearance >= self.margin:
            answer.closest_pair = self.pair_names(pair)
            return answer
        reached, answer.reached = answer.reached, False
        listed = reached and solver.root != 'free' and first_clear_solution(
            self, solver, answer, problem, rows, pair)
        if listed:
            return listed
        answer.closest_pair = self.pair_names(pair)
        if solver.root == 'free':   # the base moves too: the answer is reported as it is
            return answer
        if self._geometry is None:
            self._geometry = Geometry(self.chain, self.model)
        seed = self.chain.neutral() if problem.seed is None else self.chain.clip(problem.seed)
        search = _Search(self, solver, problem._replace(seed=seed), answer)
        return search.run(reached, pair)


class CollisionSettings:
    """IkSolver's collision settings and obstacles (kept in its Collisions)."""

    _collisions: Collisions

    @property
    def collision_margin(self) -> float:
        """Return how far apart (metres) every checked pair stays in a reached answer."""
        return self._collisions.margin

    @property
    def self_collision(self) -> bool:
        """Return whether the links are checked against each other."""
        return self._collisions.self_collision

    @property
    def collision_status(self) -> str:
        """Return why self-collision checking is off though asked for ('' if it is not)."""
        return self._collisions.status

    @property
    def obstacles(self) -> tuple:
        """Return the obstacles answers keep clear of (base frame)."""
        return self._collisions.obstacles

    def set_obstacles(self, obstacles: object) -> None:
        """
        Replace the obstacles: a list of Box, Sphere and Cylinder (fabrik_ros.collision).

        Poses in the base frame; [] removes them. Raises TypeError naming an item that is
        not one of them.
        """
        self._collisions.set_obstacles(obstacles)


class _Pose(NamedTuple):
    """A pose the search found, and what ranks it."""

    q: np.ndarray
    clearance: float
    objective: float        # squared weighted residual (NaN: not needed, see _exact_branches)
    met: bool               # the goals within their tolerances
    world: np.ndarray       # its FK frames, kept for the result
    pair: int               # the closest pair (Collisions.pair_names)
    measured: tuple | None = None   # _Search._measured(world) where already measured


class _Search:
    """The search for a clear answer of one solve (see the module docstring)."""

    def __init__(self, collisions: Collisions, solver: IkSolver, problem: Problem,
                 answer: IkResult) -> None:
        """Keep the solve's pieces; the answer's counters carry on."""
        self.collisions = collisions
        self.solver = solver
        self.problem = problem
        self.answer = answer
        self.geometry = collisions._geometry
        self.turns = goal_turns(solver, problem.rotations or [None] * len(problem.targets))
        # _measured's goals as plain floats: math.dist and _rotation_error read them
        # element by element, which numpy's scalars make dearer.
        self._goals = [None if goal is None else [float(value) for value in goal]
                       for goal in problem.targets]
        self._turn_targets = [rotation.ravel().tolist() for _, _, rotation, _ in self.turns]
        self.margin = collisions.margin
        self.model = collisions.model
        self.lower, self.upper = solver.chain.lower, solver.chain.upper
        self.steps = 0
        self.restarts = 0
        self.timed_out = answer.timed_out

    @cached_property
    def task(self) -> Task:
        """Return the residual's terms, built when first needed (not for an exact answer)."""
        return Task(self.solver, self.geometry, self.problem)

    def run(self, other_branches: bool, pair: int) -> IkResult:
        """
        Return the best pose: exact branches, a redundant chain's closing, other seeds' solves.

        other_branches: solve from the clear seeds (the answer reached its target, so other
        branches may reach it too; an unreachable target only gets the closings). pair: one
        of the answer's pairs closer than the margin (rows()').
        """
        found = []
        listed = other_branches and self._exact_branches(found, pair)
        if not self._done(found) and self.task.redundant:   # room to move clear
            found.append(self._close(self.answer.q, CLOSING_STEPS))
        if other_branches and not listed:
            self._other_branches(found)
        if not self._done(found):
            starts = [self.problem.seed] + ([] if self.task.redundant else [self.answer.q])
            starts += [pose.q for pose in sorted(found, key=lambda pose: pose.objective)
                       [:CLOSED_CANDIDATES]]
            for start in starts:
                if self._done(found) or self._late():
                    break
                found.append(self._close(start, RESTART_CLOSING_STEPS))
        clear = [pose for pose in found if pose.clearance >= self.margin]
        best = (min(clear, key=lambda pose: (not pose.met, pose.objective)) if clear
                else max(found or [self._evaluate(self.answer.q)[0]],     # late: the answer
                         key=lambda pose: pose.clearance))
        return self._result(best)

    def _exact_branches(self, found: list[_Pose], pair: int) -> bool:
        """
        Add the first clear exact solution (see the module); False: not all listed.

        A solution is first measured on the pairs closer than the margin at the answer (pair)
        and at the solutions tried before: one of them closer there too rules it out
        without the bounds.
        """
        problem, limits = self.problem, self.solver.limits
        solutions = problem.rotations is not None and exact_solutions(
            getattr(self.solver._split, 'arm', None), problem.targets[0], problem.rotations[0],
            problem.seed.tolist(), limits.lower, limits.upper)
        if not solutions:
            return False
        answer, colliding = self.answer.q.tolist(), [pair]
        for q in solutions[0]:
            if self._late():
                break
            if not any(abs(a - b) > 1e-9 for a, b in zip(q, answer)):
                continue
            world = self.solver.chain.world_frames(q)
            nearest = self.collisions.nearest(world, self.margin, colliding)
            if nearest[0] < self.margin:
                colliding.append(nearest[1])
            else:   # the smallest distance, no pair below the margin
                # met, it is the answer (found holds nothing else): no residual, no ranking
                measured = self._measured(world)
                met = self._met(*measured)
                found.append(_Pose(np.array(q), nearest[0], math.nan, met, world, nearest[1],
                                   measured) if met else
                             self._evaluate(np.array(q), world=world, nearest=nearest)[0])
                break
        return solutions[1]

    def _other_branches(self, found: list[_Pose]) -> None:
        """Add the answers of solves from clear seeds until one is clear and reached."""
        tried = 0
        for seed in self.collisions.clear_seeds():
            if self._done(found) or self._late() or tried == COLLISION_RESTARTS:
                break
            tried += 1
            self.restarts += 1
            free = self.solver._answer(self.problem.targets, self.problem.rotations,
                                       seed, self.problem.deadline)
            self.steps += free.iterations
            found.append(self._evaluate(free.q)[0])

    def _done(self, found: list[_Pose]) -> bool:
        """Return whether a clear pose meets the goals."""
        return any(pose.met and pose.clearance >= self.margin for pose in found)

    def _late(self) -> bool:
        """Return whether the solve's time is up (and note it)."""
        if self.solver.clock() > self.problem.deadline:
            self.timed_out = True
        return self.timed_out

    def _evaluate(self, q: np.ndarray, jacobian: bool = False,
                  world: np.ndarray | None = None,
                  nearest: tuple[float, int] | None = None
                  ) -> tuple[_Pose, np.ndarray, np.ndarray | None, np.ndarray]:
        """
        Return the pose at q, its residual, its Jacobian (if asked) and FK frames.

        world, nearest: q's FK frames and Collisions.nearest of them, where known.
        """
        if world is None:
            world = self.solver.chain.world_frames(q)
        clearance, pair = nearest or self.collisions.nearest(world)
        residual, jacobian_rows, met = self.task.residual(world, jacobian)
        return (_Pose(q, clearance, float(residual @ residual), met, world, pair), residual,
                jacobian_rows, world)

    def _close(self, q: np.ndarray, steps: int) -> _Pose:
        """Return the pose after constrained closing steps from q (see the module)."""
        q = np.clip(np.asarray(q, dtype=float), self.lower, self.upper)
        pose, residual, jacobian, world = self._evaluate(q, True)
        constraints = self._constraints(world)
        damping, slow = DAMPING, 0
        for _ in range(steps):
            if (pose.met and pose.clearance >= self.margin) or self._late() or slow == SLOW_STEPS:
                break
            step = constrained_step(jacobian, residual, damping, *constraints,
                                    self.margin + BUFFER)
            largest = float(np.max(np.abs(step))) if len(step) else 0.0
            capped = largest > MAX_STEP     # far from the target: progress is the cap's
            if capped:
                step *= MAX_STEP / largest
            trial = np.clip(q + step, self.lower, self.upper)
            taken = self._taken(trial, pose)
            if taken is not None:
                candidate, residual, jacobian = taken
                self.steps += 1
                slow += pose.clearance >= self.margin and not capped and \
                    candidate.objective > SLOW_RATIO * pose.objective
                q, pose, world = trial, candidate, candidate.world
                constraints = self._constraints(world)
                damping = max(damping / 3.0, 1e-9)
            else:
                damping *= 4.0
                if damping > DAMPING_MAX:
                    break
        return pose

    def _taken(self, trial: np.ndarray, pose: _Pose
               ) -> tuple[_Pose, np.ndarray, np.ndarray] | None:
        """
        Return the pose at trial, its residual and Jacobian if the step there is taken.

        Taken: clearer than pose while it collides, clear and closer once it is clear. The
        trial's clearance is measured down to what rules it out (the pose's, the margin),
        its residual only where that leaves the step to be taken.
        """
        world = self.solver.chain.world_frames(trial)
        floor = min(pose.clearance, self.margin)
        clearance, pair = self.collisions.nearest(world, floor)
        if clearance < floor or clearance <= pose.clearance < self.margin:
            return None
        if pose.clearance >= self.margin:   # clear: only a closer pose is taken
            residual = self.task.residual(world, False)[0]
            if not float(residual @ residual) < pose.objective:
                return None
        residual, jacobian, met = self.task.residual(world, True)
        return (_Pose(trial, clearance, float(residual @ residual), met, world, pair),
                residual, jacobian)

    def _constraints(self, world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """
        Return the distances (k,) of the pairs near the margin and their gradients (k, n).

        A pair's gradient is its closest points' motion apart. Where those points coincide
        (a link's axis inside an obstacle: no direction between them, and a depth that
        does not change), the link is pushed out from the obstacle's centre.
        """
        pairs = self.model.pair_distances(world, self.collisions.scene,
                                          within=self.margin + INFLUENCE)
        near = np.arange(len(pairs.distances))
        if not len(near):
            return np.empty(0), np.empty((0, self.solver.chain.dof))
        first_points, second_points = pairs.points_first[near], pairs.points_second[near]
        gap = first_points - second_points
        length = np.linalg.norm(gap, axis=1)
        inside = (length <= 1e-12) & (near >= pairs.self_pairs)
        if inside.any():
            obstacles = self.collisions.scene.obstacles
            outward = first_points[inside] - np.array(
                [obstacles[index].pose[:3, 3] for index in pairs.second[near[inside]].tolist()])
            gap[inside] = np.sign(pairs.distances[near[inside]])[:, None] * outward
            length[inside] = np.linalg.norm(outward, axis=1)
        keep = length > 1e-12
        near, gap, length = near[keep], gap[keep], length[keep]
        first_points, second_points = first_points[keep], second_points[keep]
        distances = pairs.distances[near]
        normal = np.sign(distances)[:, None] * gap / length[:, None]
        axes = self.geometry.axes(world)
        frames = self.geometry.body_frames
        moving = self.geometry.point_jacobians(world, axes, first_points,
                                               frames[pairs.first[near]])
        gradient = np.einsum('kc,kcd->kd', normal, moving)
        own = near < pairs.self_pairs
        if np.any(own):
            other = self.geometry.point_jacobians(world, axes, second_points[own],
                                                  frames[pairs.second[near[own]]])
            gradient[own] -= np.einsum('kc,kcd->kd', normal[own], other)
        return distances, gradient

    def _measured(self, world: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the tool positions (m, 3) at world, their errors and angles (NaN: no goal)."""
        tools = self.geometry.tool_frames(world)
        positions = tools[:, :3, 3]
        rows = tools[:, :3].tolist()    # per tool: its three rows, rotation and position
        errors = np.array([math.dist(goal, (x[3], y[3], z[3])) if goal is not None
                           else math.nan for goal, (x, y, z) in zip(self._goals, rows)])
        angles = np.full(len(positions), math.nan)
        for (row, mode, rotation, axis), target in zip(self.turns, self._turn_targets):
            if mode == 'axis':
                cosine = float((tools[row, :3, :3] @ axis) @ (rotation @ axis))
                angles[row] = math.acos(max(-1.0, min(1.0, cosine)))
            else:
                x, y, z = rows[row]
                angles[row] = _rotation_error(x[:3] + y[:3] + z[:3], target)[0]
        return positions, errors, angles

    def _met(self, positions: np.ndarray, errors: np.ndarray, angles: np.ndarray) -> bool:
        """Return whether measured errors are within the tolerances (search_task.goals_met)."""
        solver = self.solver
        return goals_met(solver.tolerance, solver.orientation_tolerance,
                         [error for error, goal in zip(errors.tolist(), self.problem.targets)
                          if goal is not None],
                         [(mode, angles[row]) for row, mode, *_ in self.turns])

    def _result(self, pose: _Pose) -> IkResult:
        """Return pose as the solve's IkResult, errors measured from its FK (once)."""
        answer = self.answer
        positions, errors, angles = pose.measured or self._measured(pose.world)
        clearance, names = pose.clearance, self.collisions.pair_names(pose.pair)
        error = max(error for error in errors.tolist() if error == error)   # NaN: no target
        reached = pose.met and clearance >= self.margin
        return IkResult(
            q=pose.q.copy(), error=error, errors=errors,
            iterations=answer.iterations + self.steps, reached=reached,
            base_position=answer.base_position, effector_positions=positions,
            fabrik_iterations=answer.fabrik_iterations,
            closing_steps=answer.closing_steps + self.steps,
            restarts=answer.restarts + self.restarts, initial_error=answer.initial_error,
            fabrik_error=answer.fabrik_error, history=answer.history, trace=answer.trace,
            timed_out=self.timed_out,
            orientation_error=(max(float(angles[row]) for row, *_ in self.turns)
                               if self.turns else math.nan),
            orientation_errors=angles, clearance=clearance, closest_pair=names)
