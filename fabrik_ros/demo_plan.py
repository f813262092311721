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
The demo's choreography and scorekeeping: where the targets go, and how well they are met.

TargetPlan says where every effector's target is at each time of a run and in which phase
(moving, orienting, holding, out of reach); Tracker scores the IK node's commands and the
arm's measurements against the targets sent and sums the run up; format_summary prints
that. fabrik_ros.demo wires them to ROS. Pure numpy (no ROS), so a run can be planned
and scored in a unit test.
"""

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from fabrik_ros.chain import Chain
from fabrik_ros.demo_scene import ClearanceScore, format_scene
from fabrik_ros.paths import ellipse, figure_eight, pointing_sweep, rotation_angles
import numpy as np

MODES = {'single': 'arm.yaml', 'double': 'dual_arm.yaml', 'spider': 'spider.yaml'}
TARGET_RATE = 50.0  # Hz of target messages, shared by the effectors of a tree
MIN_TARGET_RATE = 20.0  # Hz per effector at the least
SETTLE_TIME = 1.0  # seconds the last path point is held before going out of reach
OUT_OF_REACH_TIME = 2.0  # seconds
REACHED_M = 1e-3  # a command reaches its target within this distance
REACHED_RAD = np.radians(1.0)  # and within this angle, where the target has an orientation
ORIENTING_SHARE = 0.4  # of the path time, spent turning the tool (arms that can orient)
ORIENTING_TILT = 0.35  # radians the tool axis circles away from the ready pose's (20 deg)
ORIENTING_ROLL = 0.6  # radians the tool rolls about its axis, each way (34 deg)
ORIENTING_TURNS = 2  # times the tool axis goes around
MIN_ORIENTING_DOF = 6  # joints a single tool needs for any orientation at a position
READY_FRACTION = 0.5  # ready pose: symmetric joints bend this far toward their upper limit
LOPSIDED = 0.1  # a range whose middle is this fraction of its span off neutral is lopsided
OUT_OF_REACH_FACTOR = 1.25  # out-of-reach targets lie this far beyond the longest reach
RECENT = 0.25  # seconds: a command answers one of the targets sent this recently (lag)
DRIFT_FRACTION = 0.5  # free body: targets drift this fraction of the reach bound, along +x
FAR_FRACTION = 2.0  # free body: the far target lies this many reach bounds ahead
ON_PATH = (0, 1, 2)  # phases whose commands follow each other closely: moving to holding
LIMIT_SLACK = 1e-9  # radians: a command this far past a limit is rounding, not a violation


# ---- the choreography --------------------------------------------------------------------

def ready_pose(chain: Chain) -> np.ndarray:
    """
    Return a bent, in-limit pose whose tips make good path centres (away from stretch).

    A joint with lopsided limits (an elbow that bends one way) goes to the middle of its
    range; a joint with limits centred on neutral bends READY_FRACTION toward its upper
    limit; a continuous joint stays at neutral.
    """
    neutral = chain.neutral()
    finite = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    with np.errstate(invalid='ignore'):  # inf - inf of continuous joints, not selected
        middle = np.where(finite, (chain.lower + chain.upper) / 2.0, neutral)
        bent = np.where(finite, neutral + READY_FRACTION * (chain.upper - neutral), neutral)
        lopsided = np.abs(middle - neutral) > LOPSIDED * (chain.upper - chain.lower)
    return chain.clip(np.where(lopsided, middle, bent))


def can_orient(chain: Chain) -> bool:
    """Tell whether the chain is one tool with the joints to take any orientation."""
    return len(chain.effectors) == 1 and chain.dof >= MIN_ORIENTING_DOF


def branch_lengths(chain: Chain) -> tuple[np.ndarray, np.ndarray]:
    """
    Return per effector the limb length (first joint to tip) and an upper reach bound.

    Both sum link lengths along the branch; the bound adds the first joint's offset from
    the base, so no pose puts the tip farther than it from the base origin (pinned root).
    """
    limbs, bounds = [], []
    for effector in chain.effectors:
        length, joint = float(np.linalg.norm(effector.offset)), effector.parent
        while joint >= 0 and chain.joints[joint].parent >= 0:
            length += float(np.linalg.norm(chain.joints[joint].origin_xyz))
            joint = chain.joints[joint].parent
        first = chain.joints[joint].origin_xyz if joint >= 0 else np.zeros(3)
        limbs.append(length)
        bounds.append(length + float(np.linalg.norm(first)))
    return np.array(limbs), np.array(bounds)


def path_plane(center: np.ndarray) -> np.ndarray:
    """Return axes (2, 3): horizontal, across the line from the base, and up."""
    across = np.cross([0.0, 0.0, 1.0], center)
    norm = np.linalg.norm(across)
    across = across / norm if norm > 1e-9 else np.array([0.0, 1.0, 0.0])
    return np.array([across, [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class TargetPlan:
    """
    Where every effector's target is at each time of the run, and in which phase.

    Positions follow the path through 'moving' and 'orienting'; a tool that can be oriented
    also gets target orientations: its ready pose's, turned by pointing_sweep while
    'orienting'. Trees and short chains get positions only (tool_frames None).
    """

    mode: str
    centers: np.ndarray  # (m, 3) path centres, metres, base frame
    axes: np.ndarray  # (m, 2, 3) path planes
    sizes: np.ndarray  # (m, 2) width, height, metres
    phases: np.ndarray  # (m,) radians along each path
    out_of_reach: np.ndarray  # (m, 3) final targets, beyond every reach
    reach_bounds: np.ndarray  # (m,) metres
    moving_time: float  # seconds
    orienting_time: float  # seconds, 0 for position-only targets
    tool_frames: np.ndarray | None  # (m, 3, 3) nominal target orientations, base frame
    period: float  # seconds per lap
    rate: float  # Hz at which targets are sent
    drift: np.ndarray = field(default_factory=lambda: np.zeros(3))  # metres over the path
    free_body: bool = False  # odom targets; out of reach: the first far, the others stay

    PHASE_NAMES = ('moving', 'orienting', 'holding', 'out of reach')

    @classmethod
    def for_mode(cls, chain: Chain, mode: str, duration: float,
                 free_body: bool = False) -> 'TargetPlan':
        """
        Plan ``duration`` seconds: path (the tool turning on it), hold, out of reach.

        free_body: the paths drift along +x (the body follows), and out of reach only the
        first effector's target goes far ahead while the others stay where they ended.
        """
        path_time = duration - SETTLE_TIME - OUT_OF_REACH_TIME
        if path_time <= 0.0:
            raise ValueError(f'duration must exceed {SETTLE_TIME + OUT_OF_REACH_TIME:g} s')
        ready = ready_pose(chain)
        centers = chain.effector_positions(ready)
        oriented = can_orient(chain)
        orienting_time = ORIENTING_SHARE * path_time if oriented else 0.0
        limbs, bounds = branch_lengths(chain)
        count = len(centers)
        if mode == 'spider':  # tripod gait: alternate legs step together
            sizes = np.column_stack([0.3 * limbs, 0.15 * limbs])
            phases = np.pi * (np.arange(count) % 2)
            period = 3.0
        else:
            sizes = np.column_stack([0.25 * limbs, 0.15 * limbs])
            phases = np.pi * np.arange(count) / count
            period = 8.0
        directions = centers / np.maximum(np.linalg.norm(centers, axis=1, keepdims=True), 1e-9)
        beyond = OUT_OF_REACH_FACTOR * bounds[:, np.newaxis] * directions
        drift = np.zeros(3)
        if free_body:
            drift = np.array([DRIFT_FRACTION * bounds.max(), 0.0, 0.0])
            beyond = centers + drift  # replaced by where the paths end (see targets())
            beyond[0] = centers[0] + drift + [FAR_FRACTION * bounds.max(), 0.0, 0.0]
        return cls(mode, centers, np.array([path_plane(c) for c in centers]), sizes, phases,
                   beyond, bounds, path_time - orienting_time, orienting_time,
                   chain.effector_poses(ready)[:, :3, :3] if oriented else None, period,
                   max(TARGET_RATE / count, MIN_TARGET_RATE), drift, free_body)

    @property
    def path_time(self) -> float:
        """Return the seconds the targets move: 'moving' and 'orienting'."""
        return self.moving_time + self.orienting_time

    @property
    def duration(self) -> float:
        """Return the planned run time, seconds (after the approach)."""
        return self.path_time + SETTLE_TIME + OUT_OF_REACH_TIME

    def phase(self, t: float) -> int:
        """Return the index into PHASE_NAMES at ``t`` seconds."""
        if t < self.moving_time:
            return 0
        if t < self.path_time:
            return 1
        return 2 if t < self.path_time + SETTLE_TIME else 3

    def targets(self, t: float) -> np.ndarray:
        """Return the (m, 3) targets at ``t`` seconds (t < 0: the path's start)."""
        if self.phase(t) == 3 and not self.free_body:
            return self.out_of_reach.copy()
        along = float(np.clip(t, 0.0, self.path_time))
        shape = ellipse if self.mode == 'spider' else figure_eight
        targets = np.array([
            shape(np.array([along]), center, axes, width, height, self.period, phase)[0]
            for center, axes, (width, height), phase in zip(
                self.centers, self.axes, self.sizes, self.phases)])
        targets += self.drift * along / self.path_time
        if self.phase(t) == 3:  # a free body: the first target far ahead, the others stay
            targets[0] = self.out_of_reach[0]
        return targets

    def orientations(self, t: float) -> np.ndarray | None:
        """Return the (m, 3, 3) target tool frames at ``t`` seconds; None: position only."""
        if self.tool_frames is None:
            return None
        return np.array([
            pointing_sweep(np.array([t - self.moving_time]), frame, ORIENTING_TILT,
                           ORIENTING_ROLL, self.orienting_time, ORIENTING_TURNS)[0]
            for frame in self.tool_frames])


# ---- scoring -------------------------------------------------------------------------------

@dataclass
class Tracker:
    """
    Errors of commands and measurements against the targets, per phase.

    A command answers one of the targets sent of late: per effector, the one it is nearest
    to, 1 mm counting as much as 1 degree; its position and orientation errors are that
    target's. Orientation errors are NaN where the targets have no orientation.
    """

    chain: Chain
    recent: deque = field(default_factory=deque)  # (seconds, (m, 3), (m, 3, 3) or None)
    target: np.ndarray | None = None  # (m, 3) current targets
    ik_errors: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    orientation_errors: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    arm_errors: list[list[float]] = field(default_factory=lambda: [[], [], [], []])
    iterations: list[int] = field(default_factory=list)
    solve_ms: list[float] = field(default_factory=list)  # the last solve of each node report
    solve_max_ms: list[float] = field(default_factory=list)  # the slowest of each report
    solves: float = 0.0
    solve_rate: float = 0.0  # Hz, last the node reported
    targets_sent: int = 0
    node_error: float | None = None  # metres, last the node reported
    node_orientation_error: float | None = None  # radians, last the node reported
    node_reached: bool | None = None
    last_arm_error: float = float('nan')
    last_ik_error: float = float('nan')
    last_arm_errors: np.ndarray | None = None  # (m,) metres, each effector's
    body: np.ndarray = field(default_factory=lambda: np.zeros(3))  # free body, odom, metres
    body_start: np.ndarray | None = None  # where the body was when the run's clock started
    last_orientation_error: float = float('nan')
    clearance: ClearanceScore | None = None  # the scene's, where the run has one
    last_clearance: float = float('nan')  # metres, of the last measured pose
    largest_step: float = 0.0  # radians, one joint between two commands on the path
    outside_limits: int = 0  # commands with a joint past its limits
    _last_command: tuple | None = field(default=None, init=False, repr=False)  # (q, phase)

    def sent(self, targets: np.ndarray, now: float,
             orientations: np.ndarray | None = None) -> None:
        """Note targets (one message per effector) published at ``now`` (seconds)."""
        self.target = targets
        self.recent.append((now, targets, orientations))
        while now - self.recent[0][0] > RECENT:
            self.recent.popleft()
        self.targets_sent += len(targets)

    def command(self, q: np.ndarray, phase: int | None, body: np.ndarray | None = None) -> None:
        """
        Score a command against the targets sent of late.

        The node solves the latest target it has received, which may be a few behind the
        latest sent while it is busy. body: a free body's pose that came with the command
        (default the latest).
        """
        self._joints(q, phase)
        if self.target is None:
            return
        tips = self.chain.effector_positions(q) + (self.body if body is None else body)
        distances = np.linalg.norm(np.array([t for _, t, _ in self.recent]) - tips, axis=2)
        angles = np.full(distances.shape, np.nan)  # (k, m)
        if all(orientations is not None for _, _, orientations in self.recent):
            angles = rotation_angles(self.chain.effector_poses(q)[np.newaxis, :, :3, :3],
                                     np.array([o for _, _, o in self.recent]))
        mismatch = distances + np.nan_to_num(angles) * (REACHED_M / REACHED_RAD)
        answered = np.argmin(mismatch, axis=0), np.arange(distances.shape[1])
        self.last_ik_error = float(np.max(distances[answered]))
        self.last_orientation_error = float(np.max(angles[answered]))
        if phase is not None:
            self.ik_errors[phase].append(self.last_ik_error)
            self.orientation_errors[phase].append(self.last_orientation_error)

    def _joints(self, q: np.ndarray, phase: int | None) -> None:
        """Score a command's joints: within the limits, no jump on the path, its clearance."""
        chain = self.chain
        if np.any(q < chain.lower - LIMIT_SLACK) or np.any(q > chain.upper + LIMIT_SLACK):
            self.outside_limits += 1
        if self._last_command is not None and phase in ON_PATH \
                and self._last_command[1] in ON_PATH:
            self.largest_step = max(self.largest_step,
                                    float(np.max(np.abs(q - self._last_command[0]))))
        self._last_command = (q, phase)
        if self.clearance is not None:
            self.clearance.check(q, phase, 'commands')

    def measured(self, q: np.ndarray, phase: int | None) -> None:
        """Score a measured pose against the current targets (and the scene)."""
        if self.clearance is not None:
            self.last_clearance = self.clearance.check(q, phase, 'measured')
        if self.target is None:
            return
        tips = self.chain.effector_positions(q) + self.body
        self.last_arm_errors = np.linalg.norm(tips - self.target, axis=1)
        self.last_arm_error = float(np.max(self.last_arm_errors))
        if phase is not None:
            self.arm_errors[phase].append(self.last_arm_error)

    def diagnostics(self, values: dict[str, str], counting: bool) -> None:
        """Take the node's report (solve rate, errors, iterations)."""
        self.solve_rate = float(values.get('solve_rate_hz', 0.0))
        if counting:
            self.solves += self.solve_rate
            if 'iterations' in values:
                self.iterations.append(int(values['iterations']))
            if 'solve_time_ms' in values:
                self.solve_ms.append(float(values['solve_time_ms']))
                self.solve_max_ms.append(float(values['solve_time_max_ms']))
        if 'error_m' in values:
            self.node_error = float(values['error_m'])
            self.node_reached = values.get('reached') == 'True'
        if 'orientation_error_rad' in values:
            self.node_orientation_error = float(values['orientation_error_rad'])

    def summary(self, plan: TargetPlan) -> dict:
        """Return the run's figures (errors in mm and degrees, distances in m)."""
        ik = [np.array(e) for e in self.ik_errors]
        angles = [np.degrees(e) for e in self.orientation_errors]
        arm_moving, _, arm_holding, arm_beyond = (np.array(e) for e in self.arm_errors)

        def mm(values: np.ndarray, how) -> float | None:
            return round(float(how(values)) * 1e3, 4) if len(values) else None

        def degrees(values: np.ndarray) -> dict:
            known = values[np.isfinite(values)]
            return {'median': round(float(np.median(known)), 4) if len(known) else None,
                    'max': round(float(np.max(known)), 4) if len(known) else None}

        def reached(phase: int) -> float | None:
            if not len(ik[phase]):
                return None
            within = (ik[phase] <= REACHED_M) & ~(angles[phase] > np.degrees(REACHED_RAD))
            return float(np.mean(within))

        free_body = {}
        if plan.free_body and self.body_start is not None:
            others = self.last_arm_errors[1:] if self.last_arm_errors is not None else []
            free_body = {'free_body': {
                'travel_m': round(float(np.linalg.norm(self.body - self.body_start)), 4),
                'position_m': [round(float(x), 4) for x in self.body],
                'other_feet_max_mm': mm(np.asarray(others), np.max)}}
        return {
            'mode': plan.mode,
            'duration_s': plan.duration,
            'targets_sent': self.targets_sent,
            'solves': int(round(self.solves)),
            'commands_scored': int(sum(len(e) for e in ik)),
            'ik_error_mm': {'median': mm(ik[0], np.median), 'max': mm(ik[0], np.max)},
            'orientation_error_deg': degrees(angles[0]),
            'reached_fraction': reached(0),
            'orienting': None if not plan.orienting_time else {
                'ik_error_mm': {'median': mm(ik[1], np.median), 'max': mm(ik[1], np.max)},
                'orientation_error_deg': degrees(angles[1]),
                'reached_fraction': reached(1),
                'tilt_deg': round(float(np.degrees(ORIENTING_TILT)), 1),
                'roll_deg': round(float(np.degrees(ORIENTING_ROLL)), 1),
            },
            'arm_error_mm': {'median': mm(arm_moving, np.median),
                             'max': mm(arm_moving, np.max)},
            'arm_error_holding_mm': mm(arm_holding[-1:], np.max),
            'iterations': {'median': float(np.median(self.iterations))
                           if self.iterations else None,
                           'max': max(self.iterations, default=None)},
            'solve_time_ms': {'median': round(float(np.median(self.solve_ms)), 3)
                              if self.solve_ms else None,
                              'max': max(self.solve_max_ms, default=None)},
            'out_of_reach': {
                'reach_bound_m': round(float(np.max(plan.reach_bounds)), 4),
                'remaining_m': (round(float(arm_beyond[-1]), 4) if len(arm_beyond)
                                else None),
                'node_remaining_m': self.node_error,
                'node_orientation_error_deg': (
                    None if self.node_orientation_error is None
                    else round(float(np.degrees(self.node_orientation_error)), 3)),
                'node_reached': self.node_reached,
            },
            'joints': {'largest_step_rad': round(self.largest_step, 4),
                       'outside_limits': self.outside_limits},
            **free_body,
            **({} if self.clearance is None
               else {'scene': self.clearance.summary(TargetPlan.PHASE_NAMES)}),
        }


def format_summary(summary: dict) -> str:
    """Return the summary as a few aligned lines."""
    def value(number: float | None, unit: str, digits: int = 3) -> str:
        return 'n/a' if number is None else f'{number:.{digits}f} {unit}'

    def spread(errors: dict, unit: str, digits: int = 3) -> str:
        return (f'median {value(errors["median"], unit, digits)}, '
                f'max {value(errors["max"], unit, digits)}')

    def percent(fraction: float | None) -> str:
        return 'n/a' if fraction is None else f'{100 * fraction:.1f} %'

    ik, arm, beyond = summary['ik_error_mm'], summary['arm_error_mm'], summary['out_of_reach']
    oriented = summary['orientation_error_deg']['median'] is not None
    orienting = summary['orienting']
    unreachable = beyond['node_reached'] is False
    body = summary.get('free_body')
    joints = summary['joints']
    lines = [
        f'summary ({summary["mode"]}{", free body" * (body is not None)}, '
        f'{Path(summary["config"]).name}, '
        f'{summary["duration_s"]:.1f} s)',
        f'  targets sent        {summary["targets_sent"]}',
        f'  solves              {summary["solves"]} (node report), '
        f'{summary["commands_scored"]} commands scored',
        f'  IK error, moving    {spread(ik, "mm")}',
    ]
    if oriented:
        lines.append(f'  orientation error   {spread(summary["orientation_error_deg"], "deg")}'
                     ' (commanded tool frame vs target, tool held as in the ready pose)')
    lines.append(('  reached (1 mm, 1 deg) ' if oriented else '  reached (<= 1 mm)   ')
                 + percent(summary['reached_fraction']))
    if orienting is not None:
        lines += [
            f'  orienting           tool axis circling {orienting["tilt_deg"]:g} deg off, '
            f'rolling +-{orienting["roll_deg"]:g} deg, on the moving path:',
            f'    IK error          {spread(orienting["ik_error_mm"], "mm")}',
            f'    orientation error {spread(orienting["orientation_error_deg"], "deg")}',
            f'    reached (1 mm, 1 deg) {percent(orienting["reached_fraction"])}',
        ]
    lines += [
        f'  iterations          median {summary["iterations"]["median"]}, '
        f'max {summary["iterations"]["max"]} (the solve each node report shows, 1/s)',
        f'  solve time          median {value(summary["solve_time_ms"]["median"], "ms")} '
        '(those solves), max '
        f'{value(summary["solve_time_ms"]["max"], "ms", 1)} (every solve of the run)',
        f'  arm error, moving   {spread(arm, "mm", 2)} (measured tip vs the moving target)',
        f'  arm error, holding  {value(summary["arm_error_holding_mm"], "mm")}',
        '  out of reach        ' + (
            'not reached in this run' if beyond['remaining_m'] is None else
            f'{"unreachable" if unreachable else "NOT reported unreachable"}: '
            f'{value(beyond["remaining_m"], "m")} remaining '
            f'(node: {value(beyond["node_remaining_m"], "m")}'
            + ('' if beyond['node_orientation_error_deg'] is None else
               f', {value(beyond["node_orientation_error_deg"], "deg")} off in orientation')
            + ')'),
        *([] if body is None else [
            f'  free body           travelled {value(body["travel_m"], "m")} to '
            f'{body["position_m"]} (odom); the other feet '
            f'{value(body["other_feet_max_mm"], "mm", 2)} from their targets at most']),
        f'  joints              largest step {joints["largest_step_rad"]:.3f} rad between '
        'commands on the path; '
        + ('every command within the limits' if not joints['outside_limits']
           else f'{joints["outside_limits"]} commands PAST A LIMIT'),
        *([] if 'scene' not in summary else format_scene(summary['scene'])),
    ]
    return '\n'.join(lines)
