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
fabrik_ros next to TRAC-IK and pinocchio on the project's arms and on published ones.

The arms, with the base and tip links a driver gives the solver: the project's demo arm and
offset arm, the UR5e (airo-models), the Franka Panda arm to its flange (example-robot-data)
and the KUKA LBR iiwa 14 (pybullet's data). Every solver reads the same URDF. Six stages per
arm, each on its own targets (FK of joint poses in the limits, so every target is
reachable), success within 1 mm (and 1 degree for full poses):

- full pose from the neutral seed; full pose tracking a smooth path (solve_timing's
  smooth_poses) and a fast one (fast_poses), each solve seeded with the solver's own
  previous answer, starting at the path's first pose as a node that was there already;
- position only, the same three.

TRAC-IK (pytracik: Speed, 5 ms, eps 1e-5) has no free-rotation bounds in that binding, so
for position targets it solves their full pose (a harder problem, labelled so); pinocchio
(a damped-least-squares loop on its frame Jacobian, joints clamped) solves the position.
Each solver first solves WARMUP targets of the stage untimed; then every target is solved
once and timed as solve_timing says, the solvers taking turns target by target.
"""

from __future__ import annotations

from importlib import metadata
import math
from pathlib import Path
from typing import Any, Callable

from fabrik_ros.chain import Chain, quaternion_from_rotation
from fabrik_ros.ik import IkSolver
import numpy as np
from solve_timing import fast_poses, in_turns, LIMIT_SLACK_RAD, limit_violation, \
    pose_errors, random_poses, SEED, smooth_poses, spread, SUCCESS_M, SUCCESS_RAD, TIGHT_M, \
    TIGHT_RAD, timed

REPO = Path(__file__).resolve().parents[1]
WARMUP = 10             # untimed solves per solver before a stage's timed ones
SMOOTH_STEPS, FAST_STEPS = 1001, 400  # the paths' poses in a full run (--quick: 201, 200)
Solve = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _repository_urdf(relative: str) -> Callable[[], str]:
    return lambda: (REPO / relative).read_text()


def _airo_models(relative: str) -> Callable[[], str]:
    def read() -> str:
        import airo_models
        text = (Path(airo_models.__file__).parent / relative).read_text()
        # Its files use a drake: prefix they do not declare; XML parsers refuse that.
        return text.replace('<robot ', '<robot xmlns:drake="urn:drake" ', 1) \
            if 'xmlns:drake' not in text else text
    return read


def _example_robot_data(relative: str) -> Callable[[], str]:
    def read() -> str:
        share = metadata.distribution('example-robot-data').locate_file(
            'cmeel.prefix/share/example-robot-data/robots')
        return (Path(share) / relative).read_text()
    return read


def _pybullet_data(relative: str) -> Callable[[], str]:
    def read() -> str:
        import pybullet_data
        return (Path(pybullet_data.getDataPath()) / relative).read_text()
    return read


# name: (URDF text, base link, tip link)
ARMS: dict[str, tuple[Callable[[], str], str, str]] = {
    'arm': (_repository_urdf('urdf/arm.urdf'), 'base_link', 'tool0'),
    'offset_arm': (_repository_urdf('urdf/offset_arm.urdf'), 'base_link', 'tool0'),
    'ur5e': (_airo_models('arms/ur5e/ur5e.urdf'), 'base_link', 'tool0'),
    'panda': (_example_robot_data('panda_description/urdf/panda.urdf'), 'panda_link0',
              'panda_link8'),
    'iiwa14': (_pybullet_data('kuka_iiwa/model.urdf'), 'lbr_iiwa_link_0', 'lbr_iiwa_link_7'),
}
TRAC_IK = 'TRAC-IK'
PINOCCHIO = 'pinocchio DLS'
STAGES = ('full_pose_from_neutral', 'full_pose_tracking_smooth', 'full_pose_tracking_fast',
          'position_from_neutral', 'position_tracking_smooth', 'position_tracking_fast')


class TracIk:
    """TRAC-IK (pytracik): KDL and SQP in two threads, the first answer wins; full pose."""

    def __init__(self, urdf: str, base: str, tip: str, chain: Chain) -> None:
        import pytracik
        self._ik = pytracik.ik
        self._solver = pytracik.TRAC_IK(base, tip, urdf, 0.005, 1e-5, pytracik.SolveType.Speed)
        # The URDF's limits exactly as the other solvers read them: on its own this build
        # holds the Panda's joints at 0 (it misreads its safety_controller) and rounds the
        # others to 32-bit floats (the iiwa's last joint 1e-7 rad past its limit).
        pytracik.set_joint_limits(self._solver, chain.lower.tolist(), chain.upper.tolist())

    def solve(self, position: np.ndarray, quaternion: np.ndarray, seed: np.ndarray
              ) -> np.ndarray:
        """Return the joint vector for the full pose, the seed where TRAC-IK finds none."""
        answer = self._ik(self._solver, seed, *position, *quaternion)
        return answer[1:] if answer[0] >= 0 else seed


class PinocchioDls:
    """Damped least squares on pinocchio's frame Jacobian, joints clamped: position only."""

    def __init__(self, urdf: str, tip: str, chain: Chain) -> None:
        import pinocchio
        self._pin = pinocchio
        # Continuous joints as wide revolute ones: pinocchio's continuous joints have two
        # coordinates (cos, sin), the other solvers one angle.
        whole = pinocchio.buildModelFromXML(urdf.replace('type="continuous"', 'type="revolute"'))
        # The chain's joints only (a Panda's fingers locked open at 0), in the chain's order.
        locked = [whole.getJointId(name) for name in list(whole.names)[1:]
                  if name not in chain.joint_names]
        self._model = pinocchio.buildReducedModel(whole, locked, pinocchio.neutral(whole)) \
            if locked else whole
        assert list(self._model.names)[1:] == chain.joint_names, 'joint order differs'
        self._data = self._model.createData()
        self._frame = self._model.getFrameId(tip)
        self._lower = np.where(np.isfinite(chain.lower), chain.lower, -4.0 * math.pi)
        self._upper = np.where(np.isfinite(chain.upper), chain.upper, 4.0 * math.pi)
        self._tolerance = IkSolver.__init__.__defaults__[0]

    def solve(self, position: np.ndarray, quaternion: np.ndarray, seed: np.ndarray
              ) -> np.ndarray:
        """Iterate dq = J^T (J J^T + lambda I)^-1 e, clamped, until within the tolerance."""
        pin, model, data, frame = self._pin, self._model, self._data, self._frame
        q = np.array(seed, dtype=float)
        identity = np.eye(3)
        for _ in range(100):
            pin.framesForwardKinematics(model, data, q)
            error = position - data.oMf[frame].translation
            squared = float(error @ error)
            if squared < self._tolerance ** 2:
                break
            jacobian = pin.computeFrameJacobian(model, data, q, frame,
                                                pin.LOCAL_WORLD_ALIGNED)[:3]
            step = jacobian.T @ np.linalg.solve(
                jacobian @ jacobian.T + (1e-6 + 0.1 * squared) * identity, error)
            q = np.clip(q + step, self._lower, self._upper)
        return q


def _installed(build: Callable[[], Any], notes: list[str]) -> Any:
    """Return build(), or None with a note where a package it needs is missing."""
    try:
        return build()
    except (ImportError, metadata.PackageNotFoundError) as error:
        notes.append(f'skipped: {error} (pip install -r bench/requirements.txt)')
        return None


def stage_figures(chain: Chain, solves: dict[str, Solve], poses: np.ndarray,
                  start: np.ndarray | None, full: bool) -> dict[str, dict[str, Any]]:
    """
    Solve FK poses (n, 4, 4) with each solve(position, quaternion, seed) -> q; figures.

    start None: every solve starts from the neutral seed; else tracking, each solve seeded
    with the solver's previous answer, the first with start. The poses become the solvers'
    input (a position and a quaternion x, y, z, w, as a ROS Pose carries them) before the
    timing; full: success needs the orientation too. tight_success_rate: the share within
    fabrik_ros's default tolerances (0.1 mm, 1 mrad), stricter than success (1 mm, 1 deg).
    """
    targets = [(pose[:3, 3].copy(), quaternion_from_rotation(pose[:3, :3])) for pose in poses]
    neutral = chain.neutral()
    for label, solve in solves.items():
        q = neutral if start is None else start
        for position, quaternion in targets[:WARMUP]:
            answer = solve(position, quaternion, q)
            q = q if start is None else answer
    last = dict.fromkeys(solves, start)
    records: dict[str, list[tuple]] = {label: [] for label in solves}
    for index, label in in_turns(solves, range(len(targets))):
        seed = neutral if start is None else last[label]
        position, quaternion = targets[index]
        answer, wall, cpu = timed(lambda: solves[label](position, quaternion, seed))
        answer = np.asarray(answer, dtype=float)
        distance, angle = pose_errors(chain, answer, poses[index])
        records[label].append((wall, cpu, distance <= SUCCESS_M and (
            angle <= SUCCESS_RAD or not full), distance <= TIGHT_M and (
            angle <= TIGHT_RAD or not full), limit_violation(chain, answer),
            float(np.max(np.abs(answer - seed)))))
        if start is not None:
            last[label] = answer
    figures = {}
    for label, rows in records.items():
        walls, cpus, successes, tight, violations, jumps = zip(*rows)
        figures[label] = {
            'targets': len(rows), 'success_rate': float(np.mean(successes)),
            'tight_success_rate': float(np.mean(tight)),
            'wall': spread(walls), 'cpu': spread(cpus),
            'limit_violations': int(np.sum(np.array(violations) > LIMIT_SLACK_RAD)),
            'max_limit_violation_rad': float(max(violations))}
        if start is not None:
            figures[label]['largest_joint_jump_rad'] = float(max(jumps))
    return figures


def stage_poses(chain: Chain, count: int, smooth_steps: int, fast_steps: int
                ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """
    Return each path's target poses (n, 4, 4) and start pose (None: from neutral).

    `count` FK poses of random joint vectors, then the smooth and the fast path (the first
    pose of each is where tracking starts, not a target); fixed seed, so every run and the
    profiler (ik_profile.py) see the same targets.
    """
    rng = np.random.default_rng(SEED + 8)
    cold = [chain.tip_pose(q) for q in random_poses(chain, count, rng)]
    smooth, fast = smooth_poses(chain, smooth_steps, rng), fast_poses(chain, fast_steps, rng)
    return {'from_neutral': (np.array(cold), None),
            'tracking_smooth': (np.array([chain.tip_pose(q) for q in smooth[1:]]), smooth[0]),
            'tracking_fast': (np.array([chain.tip_pose(q) for q in fast[1:]]), fast[0])}


def arm_chain(name: str) -> tuple[str, Chain]:
    """Return an arm's URDF and its chain from the base to the tip link of ARMS."""
    read, base, tip = ARMS[name]
    urdf = read()
    return urdf, Chain.from_urdf(urdf, base, tip)


def compare_arm(name: str, count: int, smooth_steps: int, fast_steps: int) -> dict[str, Any]:
    """
    Run the six stages on one arm: per stage and solver its figures, and fabrik_ros's ratios.

    `count` targets from neutral, paths of `smooth_steps` and `fast_steps` poses; the arm is
    skipped with a note where its description's package is not installed.
    """
    _, base, tip = ARMS[name]
    notes: list[str] = []
    loaded = _installed(lambda: arm_chain(name), notes)
    if loaded is None:
        return {'notes': notes}
    urdf, chain = loaded
    solver = IkSolver(chain)
    trac_ik = _installed(lambda: TracIk(urdf, base, tip, chain), notes)
    pinocchio = _installed(lambda: PinocchioDls(urdf, tip, chain), notes)
    full_pose: dict[str, Solve] = {
        'fabrik_ros': lambda p, o, seed: solver.solve(p, seed, orientation=o).q}
    position: dict[str, Solve] = {'fabrik_ros': lambda p, o, seed: solver.solve(p, seed).q}
    if trac_ik is not None:
        full_pose[TRAC_IK] = position[f'{TRAC_IK} (full pose)'] = trac_ik.solve
    if pinocchio is not None:
        position[PINOCCHIO] = pinocchio.solve
    paths = stage_poses(chain, count, smooth_steps, fast_steps)
    results: dict[str, Any] = {'dof': chain.dof, 'base_link': base, 'tip_link': tip,
                               'split': split_name(solver),
                               'notes': notes, 'stages': {}, 'ratios': {}}
    for kind, solves in (('full_pose', full_pose), ('position', position)):
        for path, (poses, start) in paths.items():
            stage = f'{kind}_{path}'
            figures = stage_figures(chain, solves, poses, start, kind == 'full_pose')
            results['stages'][stage] = figures
            results['ratios'][stage] = fabrik_ratios(figures)
    return results


def split_name(solver: IkSolver) -> str | None:
    """Return the closed-form split the solver found for full poses (None: no split)."""
    split = getattr(solver, '_split', None)
    return type(split).__name__.lstrip('_') if split is not None else None


def fabrik_ratios(figures: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Return fabrik_ros's wall and CPU medians over each other solver's, one stage."""
    ours = figures['fabrik_ros']
    return {label.split(' (')[0]: {
        'wall_median': ours['wall']['median_us'] / theirs['wall']['median_us'],
        'cpu_median': ours['cpu']['median_us'] / theirs['cpu']['median_us']}
        for label, theirs in figures.items() if label != 'fabrik_ros'}


def arms_report(arms: dict[str, dict[str, Any]], table: Callable[..., str]) -> str:
    """Return the markdown table of the arms' stages: wall first, CPU beside it."""
    rows = []
    for name, arm in arms.items():
        for stage in arm.get('stages', {}):
            figures, ratios = arm['stages'][stage], arm['ratios'][stage]
            cells = [f"{name} ({arm['dof']})", stage.replace('_', ' ')]
            for label in ('fabrik_ros', TRAC_IK, PINOCCHIO):
                f = next((v for k, v in figures.items() if k.split(' (')[0] == label), None)
                cells.append(
                    f"{f['wall']['median_us']:.0f} / {f['wall']['p90_us']:.0f} / "
                    f"{f['wall']['max_us']:.0f} ({f['cpu']['median_us']:.0f}), "
                    f"{f['success_rate']:.1%}, {f['limit_violations']}" if f else '')
            cells += [f"{ratios[label]['wall_median']:.2f} ({ratios[label]['cpu_median']:.2f})"
                      if label in ratios else '' for label in (TRAC_IK, PINOCCHIO)]
            rows.append(cells)
    notes = sorted({note for arm in arms.values() for note in arm['notes']})
    headline = [[f"{name} ({arm['dof']}, split: {arm['split'] or 'none'})",
                 '{:.0f} / {:.0f} µs, load {:.1f} / {:.1f}'.format(
                     *arm.get('reference_median_us', [math.nan] * 2),
                     *arm.get('load_average', [math.nan] * 2))]
                + [f"{arm['ratios'][stage][TRAC_IK]['wall_median']:.2f}x "
                   f"({arm['ratios'][stage][TRAC_IK]['cpu_median']:.2f}x)"
                   if TRAC_IK in arm['ratios'].get(stage, {}) else '' for stage in STAGES]
                for name, arm in arms.items() if 'stages' in arm]
    header = ['arm', 'reference workload median, load average'] + [
        stage.replace('_', ' ') for stage in STAGES]
    return ('fabrik_ros / TRAC-IK, wall-clock medians (CPU medians), same targets, same run; '
            "the reference workload's median and the load average before and after each arm "
            'tell how busy the machine was (a busy one delays TRAC-IK most: its two threads '
            'wait for a free core):\n\n' + table(headline, header)
            + '\n\nArms against the reference solvers (wall µs median / p90 / max (CPU median), '
            'success, limit violations; ratios of wall medians (CPU)); TRAC-IK solves the '
            'full pose of position targets:\n\n'
            + table(rows, ['arm (DOF)', 'stage', 'fabrik_ros', TRAC_IK, PINOCCHIO,
                           f'fabrik_ros / {TRAC_IK}', f'fabrik_ros / {PINOCCHIO}'])
            + ''.join(f'\n\nNote: {note}' for note in notes))
