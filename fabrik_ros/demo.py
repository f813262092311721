"""
The main job: IK node + simulated arm + moving targets, a live view and a summary.

Run it from the repository (or anywhere once the package is installed):
    python3 -m fabrik_ros.demo                      # one arm: a figure eight, the tool turning
                                                    # on it, then out of reach
    python3 -m fabrik_ros.demo --mode double        # two arms on one torso
    python3 -m fabrik_ros.demo --mode spider        # six legs stepping in a tripod gait
    python3 -m fabrik_ros.demo --mode spider --free-body  # ... walking; its body slides
    python3 -m fabrik_ros.demo --record arm.npz     # keep the run for fabrik_ros.render

It starts ``ik_node`` and ``sim_arm`` as their own processes with the mode's config; the
node's commands go to ``joint_commands``, the simulated arm measures ``joint_states``.
The demo publishes targets (``target_pose``, or ``<tip>/target_pose`` per effector of a
tree), computes the measured tips with forward kinematics and reports:

- IK error: distance of each command's tip (FK of the commanded joints) from its target;
- orientation error: for a tool that can be oriented (one tip, six joints or more), the
  angle between the commanded tool frame and the target's; its targets keep the tool as
  in the ready pose on the figure eight, then turn it (the 'orienting' phase: the tool
  axis circles and the tool rolls while the figure eight goes on);
- arm error: distance of the measured tip from the current target; it lags a moving
  target by what the arm's velocity limits and the loop delay allow, and goes to zero
  when the target holds still;
- out of reach: the remaining distance, measured and as the node reports it.

With ``--free-body`` the node runs with ``root: free``: the targets (in ``odom``) drift
along +x while the feet step, the body follows, and at the end the first effector's target
goes far ahead while the others stay: the body slides toward it as far as the other feet,
holding their targets (``effector_weights`` FOOTHOLD_WEIGHT), let it. The node's
``~/body_pose`` places the measured chain in ``odom``; the summary reports the body's
travel.

DDS stays on this machine (ROS_LOCALHOST_ONLY, ROS_AUTOMATIC_DISCOVERY_RANGE), on
ROS_DOMAIN_ID 42 unless the environment sets another. Exit code 0 on success, 1 when a
node died or never came up, 130 on Ctrl-C.
"""

import argparse
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import sys
import tempfile
import time

from diagnostic_msgs.msg import DiagnosticArray
from fabrik_ros.chain import Chain, quaternion_from_rotation
from fabrik_ros.config import chain_from_parameters, load_config, package_share_dir
from fabrik_ros.node_process import NodeProcess
from fabrik_ros.paths import ellipse, figure_eight, pointing_sweep, rotation_angles
from geometry_msgs.msg import PoseStamped
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState

MODES = {'single': 'arm.yaml', 'double': 'dual_arm.yaml', 'spider': 'spider.yaml'}
DEFAULT_DOMAIN_ID = '42'
TARGET_RATE = 50.0  # Hz of target messages, shared by the effectors of a tree
MIN_TARGET_RATE = 20.0  # Hz per effector at the least
LIVE_PERIOD = 0.5  # seconds between live view lines
SETTLE_TIME = 1.0  # seconds the last path point is held before going out of reach
OUT_OF_REACH_TIME = 2.0  # seconds
APPROACH_TIMEOUT = 10.0  # seconds to reach the path's start before the clock starts
STARTUP_TIMEOUT = 30.0  # seconds for both nodes to come up
DIAGNOSTICS_WAIT = 1.1  # seconds: the node reports once a second; get the final result
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
ODOM_FRAME = 'odom'  # ik_node's default odom_frame: targets of a free body are in it
DRIFT_FRACTION = 0.5  # free body: targets drift this fraction of the reach bound, along +x
FAR_FRACTION = 2.0  # free body: the far target lies this many reach bounds ahead
FOOTHOLD_WEIGHT = 100.0  # free body: effector_weights of the other effectors (they stay)


# ---- the choreography (pure) --------------------------------------------------------------

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


# ---- bookkeeping (pure) ---------------------------------------------------------------------

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

    def sent(self, targets: np.ndarray, now: float,
             orientations: np.ndarray | None = None) -> None:
        """Note targets (one message per effector) published at ``now`` (seconds)."""
        self.target = targets
        self.recent.append((now, targets, orientations))
        while now - self.recent[0][0] > RECENT:
            self.recent.popleft()
        self.targets_sent += len(targets)

    def command(self, q: np.ndarray, phase: int | None) -> None:
        """
        Score a command against the targets sent of late.

        The node solves the latest target it has received, which may be a few behind the
        latest sent while it is busy.
        """
        if self.target is None:
            return
        tips = self.chain.effector_positions(q) + self.body
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

    def measured(self, q: np.ndarray, phase: int | None) -> None:
        """Score a measured pose against the current targets."""
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
            **free_body,
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
    lines = [
        f'summary ({summary["mode"]}, {Path(summary["config"]).name}, '
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
    ]
    return '\n'.join(lines)


# ---- processes ----------------------------------------------------------------------------

def ros_environment(environ: dict[str, str]) -> dict[str, str]:
    """Return ``environ`` with DDS pinned to loopback, a domain id and the source tree set."""
    env = dict(environ)
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['ROS_LOCALHOST_ONLY'] = '1'
    env.setdefault('ROS_DOMAIN_ID', DEFAULT_DOMAIN_ID)
    source_tree = Path(__file__).resolve().parent.parent
    if (source_tree / 'package.xml').is_file():  # a checkout: the nodes import from it too
        env['PYTHONPATH'] = os.pathsep.join(
            filter(None, [str(source_tree), env.get('PYTHONPATH')]))
    return env


# ---- the ROS side -------------------------------------------------------------------------

@dataclass
class Recording:
    """Measured poses and the targets of the moment, for fabrik_ros.render."""

    t: list[float] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    targets: list[np.ndarray] = field(default_factory=list)
    orientations: list[np.ndarray | None] = field(default_factory=list)
    phase: list[int] = field(default_factory=list)
    body: list[np.ndarray] = field(default_factory=list)  # free body in odom, metres

    def save(self, path: Path, chain: Chain, plan: TargetPlan) -> None:
        """
        Write joint points, tips, tool frames and body over time (target frame, metres).

        target_rotations (k, m, 3, 3) are NaN where the targets had no orientation.
        """
        body = np.array(self.body)
        unoriented = np.full((len(chain.effectors), 3, 3), np.nan)
        np.savez_compressed(
            path, mode=plan.mode, period=plan.period, t=np.array(self.t), q=np.array(self.q),
            joint_positions=np.array([chain.joint_positions(q) for q in self.q])
            + body[:, np.newaxis],
            effector_positions=np.array([chain.effector_positions(q) for q in self.q])
            + body[:, np.newaxis], body=body, free_body=plan.free_body,
            effector_rotations=np.array([chain.effector_poses(q)[:, :3, :3] for q in self.q]),
            targets=np.array(self.targets), phase=np.array(self.phase),
            target_rotations=np.array([unoriented if o is None else o
                                       for o in self.orientations]),
            joint_parents=np.array([j.parent for j in chain.joints]),
            effector_parents=np.array([e.parent for e in chain.effectors]),
            phase_names=np.array(TargetPlan.PHASE_NAMES))


class DemoNode(Node):
    """Publish the plan's targets; score the node's commands and the arm's measurements."""

    def __init__(self, chain: Chain, plan: TargetPlan, recording: Recording | None) -> None:
        """Wire target publishers and the joint_states/joint_commands/diagnostics inputs."""
        super().__init__('fabrik_demo')
        self.chain, self.plan, self.recording = chain, plan, recording
        self.tracker = Tracker(chain)
        self.start: float | None = None  # monotonic seconds when the run's clock started
        self.phase: int | None = None  # None while approaching the path
        self._index = {name: i for i, name in enumerate(chain.joint_names)}
        self._measured = False
        topics = (['target_pose'] if len(chain.effectors) == 1
                  else [f'{name}/target_pose' for name in chain.effector_names])
        self._target_pubs = [self.create_publisher(PoseStamped, topic, 10) for topic in topics]
        self.create_subscription(JointState, 'joint_states', self._on_state, 10)
        self.create_subscription(JointState, 'joint_commands', self._on_command, 10)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        if plan.free_body:
            self.create_subscription(PoseStamped, 'ik_node/body_pose', self._on_body, 10)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self)

    def _joint_vector(self, msg: JointState) -> np.ndarray | None:
        """Return the message's positions in chain order; None unless it names every joint."""
        if len(msg.position) != len(msg.name) or set(msg.name) != self._index.keys():
            return None
        q = np.empty(len(self._index))
        q[[self._index[name] for name in msg.name]] = msg.position
        return q

    def _on_state(self, msg: JointState) -> None:
        q = self._joint_vector(msg)
        if q is None:
            return
        self._measured = True
        self.tracker.measured(q, self.phase)
        if self.recording is not None and self.phase is not None:
            self.recording.t.append(time.monotonic() - self.start)
            self.recording.q.append(q)
            self.recording.targets.append(self.tracker.target)
            self.recording.orientations.append(self.tracker.recent[-1][2])
            self.recording.phase.append(self.phase)
            self.recording.body.append(self.tracker.body.copy())

    def _on_command(self, msg: JointState) -> None:
        q = self._joint_vector(msg)
        if q is not None:
            self.tracker.command(q, self.phase)

    def _on_body(self, msg: PoseStamped) -> None:
        position = msg.pose.position
        self.tracker.body = np.array([position.x, position.y, position.z])

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.endswith('ik_node: IK'):
                self.tracker.diagnostics({kv.key: kv.value for kv in status.values},
                                         self.phase is not None)

    def send(self, t: float) -> None:
        """Publish the plan's target pose per effector at ``t``, base frame (free body: odom)."""
        targets, orientations = self.plan.targets(t), self.plan.orientations(t)
        for index, (publisher, target) in enumerate(zip(self._target_pubs, targets)):
            msg = PoseStamped()
            msg.header.frame_id = ODOM_FRAME if self.plan.free_body else self.chain.base_link
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, target)
            if orientations is None:
                msg.pose.orientation.w = 1.0
            else:
                (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
                 msg.pose.orientation.w) = map(float,
                                               quaternion_from_rotation(orientations[index]))
            publisher.publish(msg)
        self.tracker.sent(targets, time.monotonic(), orientations)

    def wait(self, seconds: float) -> None:
        """Handle incoming messages for ``seconds``."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0.0:
            self._executor.spin_once(timeout_sec=remaining)

    def wait_for_nodes(self, children: list[NodeProcess]) -> float:
        """Wait until the arm publishes and the IK node listens and commands; return s."""
        started = time.monotonic()
        while not (self._measured and self.count_publishers('joint_commands')
                   and all(pub.get_subscription_count() for pub in self._target_pubs)):
            if any(not child.running() for child in children):
                raise RuntimeError('a node died while starting')
            if time.monotonic() - started > STARTUP_TIMEOUT:
                raise RuntimeError(f'the nodes did not come up within {STARTUP_TIMEOUT:g} s')
            self.wait(0.1)
        return time.monotonic() - started

    def approach(self) -> None:
        """Hold the path's first targets until the arm is there (or APPROACH_TIMEOUT)."""
        started = time.monotonic()
        tracker = self.tracker
        while time.monotonic() - started < APPROACH_TIMEOUT:
            self.send(0.0)
            self.wait(1.0 / self.plan.rate)
            if (tracker.last_arm_error < REACHED_M and tracker.last_ik_error < REACHED_M
                    and not tracker.last_orientation_error > REACHED_RAD):
                return

    def drive(self, children: list[NodeProcess]) -> None:
        """Run the plan at its target rate, printing the live view."""
        print(f'{"t [s]":>6} {"phase":<13}{"target [m]":^26}{"IK err":>10}{"IK rot":>9}'
              f'{"arm err":>10}{"iters":>7}{"solves/s":>9}', flush=True)
        self.start = time.monotonic()
        self.tracker.body_start = self.tracker.body.copy()
        next_line = 0.0
        while (t := time.monotonic() - self.start) < self.plan.duration:
            if any(not child.running() for child in children):
                raise RuntimeError('a node died')
            self.phase = self.plan.phase(t)
            self.send(t)
            self.wait(1.0 / self.plan.rate)
            if t >= next_line:
                next_line += LIVE_PERIOD
                print(self.live_line(t), flush=True)
        self.wait(DIAGNOSTICS_WAIT)

    def live_line(self, t: float) -> str:
        """Return one line of the live view (the first effector's target)."""
        tracker = self.tracker
        target = ', '.join(f'{v:+.3f}' for v in tracker.target[0])
        iterations = tracker.iterations[-1] if tracker.iterations else '-'
        angle = np.degrees(tracker.last_orientation_error)
        rotation = f'{angle:6.3f}deg' if np.isfinite(angle) else f'{"-":>9}'
        return (f'{t:6.1f} {self.plan.PHASE_NAMES[self.phase]:<13}({target}) '
                f'{1e3 * tracker.last_ik_error:7.3f}mm{rotation}'
                f'{1e3 * tracker.last_arm_error:8.2f}mm'
                f'{iterations:>7}{tracker.solve_rate:9.0f}')


def stop_all(children: list[NodeProcess]) -> bool:
    """Stop the nodes; return False (after printing its log) if one had died on its own."""
    healthy = True
    for child in children:
        if not child.running() and child.popen.returncode != 0:
            healthy = False
            print(f'{child.module} exited with {child.popen.returncode}:\n{child.log_tail()}',
                  file=sys.stderr)
        child.stop()
    return healthy


def run(args: argparse.Namespace) -> int:
    """Start the nodes, drive the targets, print the live view and summary; return exit code."""
    os.environ.update(ros_environment(os.environ))  # before rclpy.init() reads it
    share = package_share_dir()
    config = Path(args.config) if args.config else share / 'config' / MODES[args.mode]
    chain = chain_from_parameters(load_config(config), share)
    plan = TargetPlan.for_mode(chain, args.mode, args.duration, args.free_body)
    log_dir = Path(tempfile.mkdtemp(prefix='fabrik_demo_'))
    print(f'fabrik_ros demo: mode {args.mode}{", free body" * args.free_body}, {config}, '
          'ROS_DOMAIN_ID '
          f'{os.environ["ROS_DOMAIN_ID"]}, node logs in {log_dir}', flush=True)
    params = ['--params-file', str(config)]
    root = []
    if args.free_body:
        root = ['-p', 'root:=free'] + [
            argument for name in chain.effector_names[1:]
            for argument in ('-p', f'effector_weights.{name}:={FOOTHOLD_WEIGHT}')]
    # Targets without orientations (trees, short chains) are sent with the identity: the
    # node is told to solve their positions only.
    position_only = [] if plan.tool_frames is not None else ['-p', 'orientation_mode:=position']
    children = [
        NodeProcess('ik_node', params + root + position_only, log_dir / 'ik_node.log'),
        NodeProcess('sim_arm', params, log_dir / 'sim_arm.log'),
    ]
    # Ctrl-C stays a KeyboardInterrupt: the demo stops its nodes and prints the summary.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    demo = DemoNode(chain, plan, Recording() if args.record else None)
    exit_code = 0
    try:
        print(f'nodes up after {demo.wait_for_nodes(children):.1f} s; approaching the path',
              flush=True)
        demo.approach()
        demo.drive(children)
    except RuntimeError as error:
        print(f'demo failed: {error}', file=sys.stderr)
        exit_code = 1
    except KeyboardInterrupt:
        exit_code = 130
    finally:
        demo.destroy_node()
        if rclpy.ok():  # rclpy.try_shutdown() is newer than Humble
            rclpy.shutdown()
        if not stop_all(children):
            exit_code = exit_code or 1
    summary = {**demo.tracker.summary(plan), 'config': str(config), 'exit_code': exit_code}
    print(format_summary(summary), flush=True)
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(summary, indent=2))
    if args.record and demo.recording.t:
        demo.recording.save(Path(args.record), chain, plan)
        print(f'recording written to {args.record}', flush=True)
    return exit_code


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the command line options."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split('\n')[0])
    parser.add_argument('--mode', choices=sorted(MODES), default='single',
                        help='single arm, double (two arms, one torso) or spider (six legs)')
    parser.add_argument('--duration', type=float, default=20.0,
                        help='seconds of moving targets (the tool turning on the path for the '
                        'last 40 %% of them), hold and out-of-reach (default 20)')
    parser.add_argument('--config', help="params file for both nodes (default: the mode's "
                        'config/*.yaml)')
    parser.add_argument('--free-body', action='store_true',
                        help='the base slides toward the targets (ik_node root: free)')
    parser.add_argument('--record', help='write the run to this .npz for fabrik_ros.render')
    parser.add_argument('--summary-json', help='write the summary to this JSON file')
    args = parser.parse_args(argv)
    shortest = SETTLE_TIME + OUT_OF_REACH_TIME
    if not args.duration > shortest:
        parser.error(f'--duration must exceed {shortest:g} s (hold and out-of-reach phases)')
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the demo; exit with its code."""
    sys.exit(run(parse_args(argv)))


if __name__ == '__main__':
    main()
