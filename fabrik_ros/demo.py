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
The main job: IK node + simulated arm + moving targets, a live view and a summary.

Run it from the repository (or anywhere once the package is installed):
    python3 -m fabrik_ros.demo                      # one arm: a figure eight behind a pillar,
                                                    # the tool turning on it, then out of reach
    python3 -m fabrik_ros.demo --no-scene           # ... with neither table nor pillar
    python3 -m fabrik_ros.demo --mode double        # two arms on one torso
    python3 -m fabrik_ros.demo --mode spider        # six legs stepping in a tripod gait
    python3 -m fabrik_ros.demo --mode spider --free-body  # ... walking; its body slides
    python3 -m fabrik_ros.demo --mode jog           # one arm jogged by a scripted joystick
    python3 -m fabrik_ros.demo --record arm.npz     # keep the run for fabrik_ros.render
    python3 -m fabrik_ros.demo --log-dir logs       # keep the nodes' logs

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
- out of reach: the remaining distance, measured and as the node reports it;
- joints: the largest step of a joint between two commands on the path (a flip to another
  branch would show), commands past a joint limit;
- the scene (single mode on its own config: config/overlays/scene.yaml, which both nodes
  get too): a table under the figure eight and a pillar between the arm and it, where the
  arm without the scene would put its upper arm; the smallest clearance of the commands and
  of the measured arm over the run, and whether it went below the node's collision_margin.
  The simulated arm starts on the pillar's far side, and the node from where it is measured
  (feedback_topic joint_states): its commands start there and go around the pillar.

With ``--free-body`` the node runs with ``root: free``: the targets (in ``odom``) drift
along +x while the feet step, the body follows, and at the end the first effector's target
goes far ahead while the others stay: the body slides toward it as far as the other feet,
holding their targets (``effector_weights`` FOOTHOLD_WEIGHT), let it. The node's
``~/body_pose`` places the measured chain in ``odom``; the summary reports the body's
travel.

With ``--mode jog`` the node streams at 100 Hz and a scripted joystick drives it through
``ik_node/delta_twist_cmds`` and ``ik_node/delta_joint_cmds`` (fabrik_ros.demo_jog,
demo_joystick): circles, a push past full stretch, joint jogs back, a turn through the
wrist singularity, silence; the summary compares commanded and achieved tool velocity and
reports the joints' velocity against their limits and the time to rest (``--plot`` draws
it).

DDS stays on this machine (ROS_LOCALHOST_ONLY, ROS_AUTOMATIC_DISCOVERY_RANGE), on
ROS_DOMAIN_ID 42 unless the environment sets another. The nodes' logs go to a temporary
folder removed at the end (a node that fails has its last lines printed), or to
``--log-dir``. Exit code 0 on success, 1 when a node died or never came up, 130 on Ctrl-C.
"""

import argparse
from collections.abc import Callable, Sequence
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
from fabrik_ros.demo_jog import format_jog_summary, JOG_ACCELERATION, JOG_RATE, plot
from fabrik_ros.demo_joystick import JoystickNode
from fabrik_ros.demo_plan import (format_summary, MODES, OUT_OF_REACH_TIME, REACHED_M,
                                  REACHED_RAD, ready_pose, SETTLE_TIME, TargetPlan, Tracker)
from fabrik_ros.demo_scene import ClearanceScore, DemoScene, SCENES
from fabrik_ros.ik import IkSolver
from fabrik_ros.node_process import NodeProcess
from geometry_msgs.msg import PoseStamped
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState

DEFAULT_DOMAIN_ID = '42'
LIVE_PERIOD = 0.5  # seconds between live view lines
APPROACH_TIMEOUT = 10.0  # seconds to reach the path's start before the clock starts
STARTUP_TIMEOUT = 30.0  # seconds for both nodes to come up
DIAGNOSTICS_WAIT = 1.1  # seconds: the node reports once a second; get the final result
ODOM_FRAME = 'odom'  # ik_node's default odom_frame: targets of a free body are in it
FOOTHOLD_WEIGHT = 100.0  # free body: effector_weights of the other effectors (they stay)


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
    clearance: list[float] = field(default_factory=list)  # metres to the scene, NaN: none

    def save(self, path: Path, chain: Chain, plan: TargetPlan,
             scene: DemoScene | None = None) -> None:
        """
        Write joint points, tips, tool frames and body over time (target frame, metres).

        target_rotations (k, m, 3, 3) are NaN where the targets had no orientation. With a
        scene: its obstacles, the measured clearance, and the posture a solve without the
        scene gives the last moving target (from the neutral pose).
        """
        body = np.array(self.body)
        extra = {} if scene is None else scene_arrays(chain, scene, self)
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
            phase_names=np.array(TargetPlan.PHASE_NAMES), **extra)


def scene_arrays(chain: Chain, scene: DemoScene, recording: Recording) -> dict:
    """Return a recording's scene: obstacles, clearance, and the posture without them."""
    moving = [i for i, phase in enumerate(recording.phase) if phase == 0]
    index = moving[-1] if moving else len(recording.q) - 1
    orientation = recording.orientations[index]
    unchecked = IkSolver(chain).solve(
        recording.targets[index][0], seed=chain.neutral(),
        orientation=None if orientation is None else quaternion_from_rotation(orientation[0]))
    poses = [obstacle.pose for obstacle in scene.obstacles]
    return {'obstacle_names': np.array(scene.names), 'obstacle_kinds': np.array(scene.kinds()),
            'obstacle_scales': scene.scales(),
            'obstacle_poses': np.array(poses).reshape(-1, 4, 4),
            'clearance': np.array(recording.clearance), 'margin': scene.margin,
            'unchecked_index': index,
            'unchecked_joint_positions': chain.joint_positions(unchecked.q),
            'unchecked_effector_positions': chain.effector_positions(unchecked.q),
            'unchecked_clearance': chain.clearance(unchecked.q, scene.obstacles),
            'unchecked_pair': np.array([scene.label(name) for name in
                                        chain.closest_pair(unchecked.q, scene.obstacles).names])}


def _remember(recent: dict, key: object, value: object, size: int = 64) -> None:
    """Keep `value` under `key` among the `size` latest entries of `recent`."""
    recent[key] = value
    while len(recent) > size:
        del recent[next(iter(recent))]


class DemoNode(Node):
    """Publish the plan's targets; score the node's commands and the arm's measurements."""

    def __init__(self, chain: Chain, plan: TargetPlan, recording: Recording | None,
                 scene: DemoScene | None = None) -> None:
        """Wire target publishers and the joint_states/joint_commands/diagnostics inputs."""
        super().__init__('fabrik_demo')
        self.chain, self.plan, self.recording = chain, plan, recording
        self.tracker = Tracker(chain, clearance=None if scene is None
                               else ClearanceScore(chain, scene))
        self.start: float | None = None  # monotonic seconds when the run's clock started
        self.phase: int | None = None  # None while approaching the path
        self._index = {name: i for i, name in enumerate(chain.joint_names)}
        self._measured = False
        # A free body: the node stamps a command and the body pose it moves with alike; each
        # command is scored with its own (the two arrive on two topics, in either order).
        self._bodies: dict[tuple[int, int], np.ndarray] = {}
        self._unpaired: dict[tuple[int, int], tuple[np.ndarray, int | None]] = {}
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
            self.recording.clearance.append(self.tracker.last_clearance)

    def _on_command(self, msg: JointState) -> None:
        q = self._joint_vector(msg)
        if q is None:
            return
        if not self.plan.free_body:
            self.tracker.command(q, self.phase)
            return
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if stamp in self._bodies:
            self.tracker.command(q, self.phase, self._bodies[stamp])
        else:
            _remember(self._unpaired, stamp, (q, self.phase))

    def _on_body(self, msg: PoseStamped) -> None:
        position = msg.pose.position
        body = self.tracker.body = np.array([position.x, position.y, position.z])
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        if stamp in self._unpaired:
            q, phase = self._unpaired.pop(stamp)
            self.tracker.command(q, phase, body)
        else:
            _remember(self._bodies, stamp, body)

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
            # The node's report says it solved (an arm that starts on the path's first target
            # is there before the node's first answer).
            if (tracker.last_arm_error < REACHED_M and tracker.last_ik_error < REACHED_M
                    and not tracker.last_orientation_error > REACHED_RAD
                    and tracker.node_error is not None):
                return

    def drive(self, children: list[NodeProcess]) -> None:
        """Run the plan at its target rate, printing the live view."""
        print(f'{"t [s]":>6} {"phase":<13}{"target [m]":^26}{"IK err":>10}{"IK rot":>11}'
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
        rotation = f'{angle:7.3f}deg' if np.isfinite(angle) else f'{"-":>10}'
        return (f'{t:6.1f} {self.plan.PHASE_NAMES[self.phase]:<13}({target}) '
                f'{1e3 * tracker.last_ik_error:7.3f}mm {rotation}'
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


def run_steps(steps: Callable[[], None], node: Node, children: list[NodeProcess]) -> int:
    """
    Run a demo's steps, then stop its node, rclpy and the children; return the exit code.

    0, 1 when a step failed (RuntimeError, said in one line) or a child did not stop,
    130 on Ctrl-C.
    """
    exit_code = 0
    try:
        steps()
    except RuntimeError as error:
        print(f'demo failed: {error}', file=sys.stderr)
        exit_code = 1
    except KeyboardInterrupt:
        exit_code = 130
    finally:
        node.destroy_node()
        if rclpy.ok():  # rclpy.try_shutdown() is newer than Humble
            rclpy.shutdown()
        if not stop_all(children):
            exit_code = exit_code or 1
    return exit_code


def run(args: argparse.Namespace) -> int:
    """Run the demo with the nodes' logs in --log-dir, or in a folder removed afterwards."""
    if args.log_dir:
        log_dir = Path(args.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        return run_with_logs(args, log_dir)
    with tempfile.TemporaryDirectory(prefix='fabrik_demo_') as scratch:
        return run_with_logs(args, Path(scratch))


def run_with_logs(args: argparse.Namespace, log_dir: Path) -> int:
    """Start the nodes, drive the targets, print the live view and summary; return exit code."""
    os.environ.update(ros_environment(os.environ))  # before rclpy.init() reads it
    share = package_share_dir()
    config_name = MODES.get(args.mode, 'arm.yaml')  # jog: one arm
    config = Path(args.config) if args.config else share / 'config' / config_name
    chain = chain_from_parameters(load_config(config), share)
    if args.mode == 'jog':
        return run_jog(args, chain, config, log_dir)
    plan = TargetPlan.for_mode(chain, args.mode, args.duration, args.free_body)
    scene = None
    if args.mode in SCENES and not (args.no_scene or args.config):  # the mode's own robot
        scene = DemoScene.load(share / 'config' / SCENES[args.mode], load_config(config))
    logs = f', node logs in {log_dir}' if args.log_dir else ''
    scene_text = '' if scene is None else f' + {scene.path} ({", ".join(scene.names)})'
    print(f'fabrik_ros demo: mode {args.mode}{", free body" * args.free_body}, {config}'
          f'{scene_text}, ROS_DOMAIN_ID {os.environ["ROS_DOMAIN_ID"]}{logs}', flush=True)
    params = ['--params-file', str(config)]
    node_start, sim_start = [], []  # where the arm starts; the node takes it from there
    if scene is not None:  # both nodes, as the launch file gives them its overlays
        params += ['--params-file', str(scene.path)]
        node_start, sim_start = scene_start(chain)
    root = []
    if args.free_body:
        root = ['-p', 'root:=free'] + [
            argument for name in chain.effector_names[1:]
            for argument in ('-p', f'effector_weights.{name}:={FOOTHOLD_WEIGHT}')]
    # Targets without orientations (trees, short chains) are sent with the identity: the
    # node is told to solve their positions only.
    position_only = [] if plan.tool_frames is not None else ['-p', 'orientation_mode:=position']
    children = [
        NodeProcess('ik_node', params + root + position_only + node_start,
                    log_dir / 'ik_node.log'),
        NodeProcess('sim_arm', params + sim_start, log_dir / 'sim_arm.log'),
    ]
    # Ctrl-C stays a KeyboardInterrupt: the demo stops its nodes and prints the summary.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    demo = DemoNode(chain, plan, Recording() if args.record else None, scene)

    def steps() -> None:
        print(f'nodes up after {demo.wait_for_nodes(children):.1f} s; approaching the path',
              flush=True)
        demo.approach()
        demo.drive(children)
    exit_code = run_steps(steps, demo, children)
    summary = {**demo.tracker.summary(plan), 'config': str(config), 'exit_code': exit_code}
    print(format_summary(summary), flush=True)
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(summary, indent=2))
    if args.record and demo.recording.t:
        demo.recording.save(Path(args.record), chain, plan, scene)
        print(f'recording written to {args.record}', flush=True)
    return exit_code


def scene_start(chain: Chain) -> tuple[list[str], list[str]]:
    """
    Return the ik_node and the sim_arm arguments that start a run among obstacles clear.

    The arm starts bent on the pillar's far side (the ready pose), not straight up, and the
    node takes the measured state as where it starts: open loop it would command its
    neutral pose first, and the motion between two commands is not checked yet.
    """
    pose = ', '.join(f'{value:.6f}' for value in ready_pose(chain))
    return ['-p', 'feedback_topic:=joint_states'], ['-p', f'sim.initial_positions:=[{pose}]']


def run_jog(args: argparse.Namespace, chain: Chain, config: Path, log_dir: Path) -> int:
    """Run the jogging phase (fabrik_ros.demo_jog) on one arm; return the exit code."""
    rates = ['-p', f'command_rate:={JOG_RATE}', '-p',
             f'default_max_acceleration:={JOG_ACCELERATION}']
    children = [NodeProcess('ik_node', ['--params-file', str(config)] + rates,
                            log_dir / 'ik_node.log'),
                NodeProcess('sim_arm', ['--params-file', str(config)], log_dir / 'sim_arm.log')]
    print(f'fabrik_ros demo: jogging one arm, {config}, ROS_DOMAIN_ID '
          f'{os.environ["ROS_DOMAIN_ID"]}', flush=True)
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity, 2.0)
    stick = JoystickNode(chain, velocity)
    alive = lambda: all(child.running() for child in children)  # noqa: E731

    def steps() -> None:
        stick.wait_for_node(alive, STARTUP_TIMEOUT)
        print('nodes up; joint-jogging to the ready pose, then the stick', flush=True)
        stick.go_ready()
        stick.play(alive)
    exit_code = run_steps(steps, stick, children)
    summary = {'mode': 'jog', 'config': str(config), 'exit_code': exit_code,
               'jog': stick.score.summary()}
    print(f'summary (jog, {config.name}, {stick.script.duration:.1f} s)\n'
          + format_jog_summary(summary['jog']), flush=True)
    if args.summary_json:
        Path(args.summary_json).write_text(json.dumps(summary, indent=2))
    if args.plot and stick.score.samples:
        plot(stick.score, Path(args.plot))
        print(f'picture written to {args.plot}', flush=True)
    return exit_code


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the command line options."""
    parser = argparse.ArgumentParser(prog='python3 -m fabrik_ros.demo',
                                     description=__doc__.strip().split('\n')[0])
    parser.add_argument('--mode', choices=sorted([*MODES, 'jog']), default='single',
                        help='single arm, double (two arms, one torso), spider (six legs) or '
                        'jog (one arm driven by a scripted joystick on ~/delta_twist_cmds)')
    parser.add_argument('--duration', type=float, default=20.0,
                        help='seconds of moving targets (the tool turning on the path for the '
                        'last 40 %% of them), hold and out-of-reach (default 20)')
    parser.add_argument('--config', help="params file for both nodes (default: the mode's "
                        'config/*.yaml)')
    parser.add_argument('--no-scene', action='store_true',
                        help='single mode: without the table and the pillar '
                        '(config/overlays/scene.yaml, placed for the demo arm: a --config '
                        'runs without them too)')
    parser.add_argument('--free-body', action='store_true',
                        help='the base slides toward the targets (ik_node root: free)')
    parser.add_argument('--record', help='write the run to this .npz for fabrik_ros.render')
    parser.add_argument('--summary-json', help='write the summary to this JSON file')
    parser.add_argument('--plot', help='jog: draw the tool speeds and joint velocities to '
                        'this picture (PNG)')
    parser.add_argument('--log-dir', help="keep the nodes' logs in this folder (default: a "
                        'temporary one, removed at the end)')
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
