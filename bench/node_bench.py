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
End-to-end benchmark of ik_node over loopback DDS: latency and sustained target rate.

    bash scripts/ros_venv.sh python3 bench/node_bench.py [--config config/arm.yaml] [--quick]

Starts ik_node as its own process (publish_rate 0: a JointState only when a target is
solved) and, from this process, measures (the same for bench/echo_node.py first, a bare
rclpy echo through the same QoS and executor: the floor under ik_node's numbers):

1. latency: one target at a time, each waiting for its JointState; median and p99 of
   target published -> JointState received (both hops of loopback DDS, the solve and the
   rclpy executor on both sides);
2. throughput: targets streamed at rising rates; every JointState is matched to the target
   it solves (its FK tip lies on that target). At each rate: does the node keep up
   (>= 99 % of the targets get their own JointState), and is there no backlog (latency
   does not grow during the run, the node's resident memory does not grow)? A rate is
   sustained when both hold. The node keeps one target per topic, so above what it keeps
   up with it skips targets rather than queueing them: no backlog at any rate;
3. soak: the goal rate for longer, the node's RSS sampled every second.

Targets follow a smooth loop through the workspace (FK of a joint-space loop, so all are
reachable), about a millimetre apart, like a 500 Hz teleoperation stream. They are positions
(the identity quaternion only makes the message valid): the node runs with orientation_mode
position, else it would chase that orientation, out of reach on most of the loop. Prints a summary
and writes bench/results/node_bench.json. Goals: the rate the echo sustains in the
same run, p99 latency <= 2 ms, flat memory (the soak at the echo's rate grows the node's
resident memory by at most 1 MiB). Also printed and written: the node's latency over the
echo's (median and p99), what the node itself adds; the echo's own p99 bounds the goal from
below, and where it is above 2 ms no node through this path meets it on that machine.
"""

import argparse
from collections.abc import Callable
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO

from fabrik_ros.chain import Chain
from fabrik_ros.config import chain_from_parameters, load_config
from geometry_msgs.msg import PoseStamped
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / 'bench' / 'results' / 'node_bench.json'
GOAL_P99_MS = 2.0
GOAL_RSS_GROWTH_MB = 1.0  # over the soak
RATES_HZ = (250.0, 500.0, 750.0, 1000.0, 1500.0, 2000.0, 3000.0)
ANSWERED_FRACTION = 0.99  # of the targets of a phase, for the rate to count as sustained
MATCH_DISTANCE = 0.5e-3  # metres: a JointState solves the target its FK tip is this close to
TARGET_SPACING = 1e-3  # metres between consecutive targets
STARTUP_TIMEOUT = 20.0  # seconds for the node to start and be discovered
REPLY_TIMEOUT = 0.5  # seconds before a latency sample counts as lost


def target_loop(chain: Chain, spacing: float) -> np.ndarray:
    """
    Return reachable targets `spacing` metres apart on a smooth closed loop, (k, 3).

    Even spacing lets every JointState be matched to the one target its tip lies on.
    """
    phase = np.linspace(0.0, 2.0 * np.pi, 20000, endpoint=False)[:, np.newaxis]
    bounded = np.isfinite(chain.lower) & np.isfinite(chain.upper)
    span = np.where(bounded, np.minimum(chain.upper - chain.lower, 2.0), 2.0)
    centre = np.zeros(chain.dof)
    centre[bounded] = (chain.lower[bounded] + chain.upper[bounded]) / 2.0
    offsets = np.arange(chain.dof) * 2.0 * np.pi / chain.dof
    poses = centre + 0.3 * span * np.sin(phase + offsets)
    dense = np.array([chain.tip_position(chain.clip(q)) for q in poses])
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(dense, axis=0), axis=1))])
    stations = np.arange(0.0, arc[-1], spacing)
    return np.column_stack([np.interp(stations, arc, dense[:, axis]) for axis in range(3)])


def node_rss_mb(pid: int) -> float:
    """Return the resident set size of a process, MiB (Linux /proc)."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f'no VmRSS for process {pid}')


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU time a process has used, seconds (Linux /proc)."""
    fields = Path(f'/proc/{pid}/stat').read_text().rpartition(')')[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def percentile_ms(seconds: list[float], q: float) -> float:
    """Return the q-th percentile of durations in seconds, as milliseconds."""
    return float(np.percentile(np.asarray(seconds) * 1e3, q)) if seconds else float('nan')


class Bench:
    """The bench's rclpy side: publishes targets, timestamps the node's JointStates."""

    def __init__(self, name: str, base_link: str, targets: np.ndarray,
                 tip_of: Callable[[np.ndarray], np.ndarray]) -> None:
        """
        Create the node, its publisher and subscription, and spin it in a thread.

        `tip_of` maps the positions of an answer to the point it reached, metres.
        """
        self.tip_of = tip_of
        self.process: subprocess.Popen | None = None  # the node under test
        self.targets = targets
        self.node = rclpy.create_node(name)
        self.publisher = self.node.create_publisher(PoseStamped, 'target_pose', 10)
        self.received: list[tuple[float, tuple[float, ...]]] = []
        self.arrived = threading.Event()
        self.node.create_subscription(JointState, 'joint_states', self._on_command, 1000)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()
        self.message = PoseStamped()
        self.message.header.frame_id = base_link
        self.message.pose.orientation.w = 1.0

    def _on_command(self, msg: JointState) -> None:
        self.received.append((time.perf_counter(), tuple(msg.position)))
        self.arrived.set()

    def wait_for_node(self, process: subprocess.Popen) -> None:
        """Take `process` as the node under test; wait until it is connected."""
        self.process = process
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while (self.publisher.get_subscription_count() == 0
               or self.node.count_publishers('joint_states') == 0):
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError('the node did not come up')
            time.sleep(0.05)
        time.sleep(0.5)

    def check_alive(self) -> None:
        """Raise if the node under test has exited."""
        if self.process.poll() is not None:
            raise RuntimeError(f'the node exited with code {self.process.returncode}')

    def send(self, index: int) -> float:
        """Publish target `index` (modulo the loop); return the send time."""
        x, y, z = self.targets[index % len(self.targets)]
        position = self.message.pose.position
        position.x, position.y, position.z = float(x), float(y), float(z)
        sent = time.perf_counter()
        self.publisher.publish(self.message)
        return sent

    def latency(self, samples: int) -> dict:
        """Ping-pong: send one target, wait for its JointState, repeat."""
        latencies, lost = [], 0
        for index in range(samples):
            self.arrived.clear()
            sent = self.send(index)
            if self.arrived.wait(REPLY_TIMEOUT):
                latencies.append(self.received[-1][0] - sent)
            else:
                lost += 1
                self.check_alive()
        return {'samples': samples, 'lost': lost,
                'median_ms': percentile_ms(latencies, 50),
                'p99_ms': percentile_ms(latencies, 99),
                'max_ms': percentile_ms(latencies, 100)}

    def stream(self, rate_hz: float, seconds: float, first: int, pid: int) -> dict:
        """Stream targets at `rate_hz` for `seconds`; match every answer to its target."""
        self.check_alive()
        count = int(rate_hz * seconds)
        sent_at = np.empty(count)
        start_received = len(self.received)
        rss_start = node_rss_mb(pid)
        cpu_start = cpu_seconds(pid)
        period = 1.0 / rate_hz
        start = time.perf_counter()
        for index in range(count):
            # After a late send, catch up gradually: no bursts of back-to-back targets.
            due = max(start + index * period, sent_at[index - 1] + period / 2 if index else 0.0)
            time.sleep(max(due - time.perf_counter(), 0.0))  # no busy wait: leave the CPU
            sent_at[index] = self.send(first + index)
        duration = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_start
        time.sleep(REPLY_TIMEOUT)
        rss_end = node_rss_mb(pid)
        answers = self.received[start_received:]
        latency_of: dict[int, float] = {}
        window = np.array([self.targets[(first + i) % len(self.targets)] for i in range(count)])
        for received_at, position in answers:
            tip = self.tip_of(np.array(position))
            sent_before = int(np.searchsorted(sent_at, received_at, side='right'))
            recent = np.arange(max(sent_before - 256, 0), sent_before)
            if recent.size == 0:
                continue
            distances = np.linalg.norm(window[recent] - tip, axis=1)
            best = int(np.argmin(distances))
            if distances[best] <= MATCH_DISTANCE:
                index = int(recent[best])
                latency_of.setdefault(index, received_at - sent_at[index])
        order = sorted(latency_of)
        latencies = [latency_of[i] for i in order]
        fifth = max(len(latencies) // 5, 1)
        growth = (percentile_ms(latencies[-fifth:], 50) - percentile_ms(latencies[:fifth], 50)
                  if latencies else float('nan'))
        answered = len(latency_of) / count
        result = {
            'rate_hz': rate_hz, 'sent': count, 'sent_rate_hz': round(count / duration, 1),
            'answers': len(answers), 'node_cpu_percent': round(100 * cpu / duration, 1),
            'answered_fraction': round(answered, 4),
            'latency_median_ms': percentile_ms(latencies, 50),
            'latency_p99_ms': percentile_ms(latencies, 99),
            'latency_growth_ms': growth,
            'rss_start_mb': round(rss_start, 2), 'rss_end_mb': round(rss_end, 2),
        }
        result['keeps_up'] = bool(answered >= ANSWERED_FRACTION)
        result['no_backlog'] = bool(growth <= 1.0 and rss_end - rss_start <= 1.0)
        result['sustained'] = result['keeps_up'] and result['no_backlog']
        return result

    def close(self) -> None:
        """Stop spinning and destroy the node."""
        self.executor.shutdown()
        self.node.destroy_node()


def soak(bench: Bench, rate_hz: float, seconds: float, pid: int) -> dict:
    """Stream at `rate_hz` in one-second chunks, sampling the node's RSS after each."""
    rss, fractions = [node_rss_mb(pid)], []
    for second in range(int(seconds)):
        phase = bench.stream(rate_hz, 1.0, second * int(rate_hz), pid)
        rss.append(phase['rss_end_mb'])
        fractions.append(phase['answered_fraction'])
    slope = float(np.polyfit(np.arange(len(rss)), rss, 1)[0])
    return {'rate_hz': rate_hz, 'seconds': seconds, 'rss_mb': [round(v, 2) for v in rss],
            'rss_growth_mb': round(rss[-1] - rss[0], 2), 'rss_slope_mb_per_s': round(slope, 4),
            'answered_fraction_min': min(fractions)}


def run_phases(bench: Bench, seconds: float, samples: int, label: str) -> dict:
    """Measure latency, then stream at every rate of RATES_HZ; print as it goes."""
    pid = bench.process.pid
    bench.latency(200)  # warm-up: imports, first solves, DDS matching
    latency = bench.latency(samples)
    print(f'{label}: latency target -> JointState median {latency["median_ms"]:.2f} ms, '
          f'p99 {latency["p99_ms"]:.2f} ms, max {latency["max_ms"]:.2f} ms, '
          f'lost {latency["lost"]}/{latency["samples"]}')
    phases, first = [], 0
    for rate in RATES_HZ:
        phase = bench.stream(rate, seconds, first, pid)
        first += phase['sent']
        phases.append(phase)
        print(f'{label}: {rate:6.0f} targets/s: answered '
              f'{100 * phase["answered_fraction"]:5.1f} %, latency median '
              f'{phase["latency_median_ms"]:.2f} ms p99 {phase["latency_p99_ms"]:.2f} ms '
              f'(growth {phase["latency_growth_ms"]:+.2f} ms), CPU '
              f'{phase["node_cpu_percent"]:.0f} %, RSS {phase["rss_start_mb"]:.1f} -> '
              f'{phase["rss_end_mb"]:.1f} MiB{"" if phase["no_backlog"] else "  BACKLOG"}'
              f'{"  sustained" if phase["sustained"] else ""}')
    return {'latency': latency, 'throughput': phases,
            'max_sustained_rate_hz': max((p['rate_hz'] for p in phases if p['sustained']),
                                         default=0.0)}


def start(command: list[str], log: IO[bytes]) -> subprocess.Popen:
    """Start a node process from the repository, output to `log`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get('PYTHONPATH')])))
    return subprocess.Popen([sys.executable, *command], cwd=REPO_ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    """Stop a node process like Ctrl-C does."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(5.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> None:
    """Run the benchmark, print a summary and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--config', default='config/arm.yaml',
                        help='parameters file of the node, relative to the repository')
    parser.add_argument('--quick', action='store_true', help='short phases (a smoke run)')
    options = parser.parse_args()
    config = REPO_ROOT / options.config
    chain = chain_from_parameters(load_config(config), REPO_ROOT)
    targets = target_loop(chain, TARGET_SPACING)
    spacing = np.linalg.norm(np.diff(targets, axis=0), axis=1)
    seconds = 1.0 if options.quick else 3.0
    samples = 300 if options.quick else 4000  # a p99 from its 40 slowest

    # DDS stays on this machine, in a domain of its own (the nodes inherit it).
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ['ROS_LOCALHOST_ONLY'] = '1'
    os.environ.setdefault('ROS_DOMAIN_ID', str(50 + os.getpid() % 50))
    rclpy.init()
    log = tempfile.TemporaryFile()
    results = {'config': options.config, 'joints': chain.dof, 'quick': options.quick,
               'cpus': os.cpu_count(),
               'target_spacing_mm': {'min': float(spacing.min() * 1e3),
                                     'median': float(np.median(spacing) * 1e3)}}
    try:
        # The floor: a bare rclpy echo through the same QoS, executor and stream.
        echo = Bench('node_bench_echo', chain.base_link, targets, lambda position: position)
        echo.wait_for_node(start(['bench/echo_node.py'], log))
        results['echo_baseline'] = run_phases(echo, seconds, samples, 'echo   ')
        stop(echo.process)
        echo.close()

        bench = Bench('node_bench', chain.base_link, targets, chain.tip_position)
        bench.wait_for_node(start(
            ['-m', 'fabrik_ros.ik_node', '--ros-args', '--params-file', str(config),
             '-p', 'publish_rate:=0.0', '-p', 'marker_rate:=0.0',
             '-p', 'orientation_mode:=position',
             '-p', 'joint_command_topic:=joint_states'], log))
        results.update(run_phases(bench, seconds, samples, 'ik_node'))
        goal_rate = results['echo_baseline']['max_sustained_rate_hz']
        soaked = soak(bench, goal_rate, 5.0 if options.quick else 15.0, bench.process.pid)
        print(f'ik_node: soak at {soaked["rate_hz"]:.0f} targets/s for {soaked["seconds"]:.0f} '
              f's: RSS {soaked["rss_mb"][0]:.1f} -> {soaked["rss_mb"][-1]:.1f} MiB '
              f'({soaked["rss_slope_mb_per_s"]:+.3f} MiB/s), answered >= '
              f'{100 * soaked["answered_fraction_min"]:.1f} % every second')
        stop(bench.process)
        bench.close()
    except BaseException:
        log.seek(0)
        print(f'--- node output ---\n{log.read().decode(errors="replace")}', file=sys.stderr)
        raise
    finally:
        if rclpy.ok():  # rclpy.try_shutdown() is newer than Humble
            rclpy.shutdown()
    latency, best = results['latency'], results['max_sustained_rate_hz']
    floor = results['echo_baseline']['latency']
    # What the node itself adds: the echo shares every other part of the path.
    added = {key: latency[key] - floor[key] for key in ('median_ms', 'p99_ms')}
    results.update({
        'latency_over_echo': added,
        'backlog_free_at_every_rate': all(p['no_backlog'] for p in results['throughput']),
        'soak': soaked, 'load_average_1min_at_end': os.getloadavg()[0],
        'goals': {'p99_ms': GOAL_P99_MS, 'rate_hz': goal_rate,
                  'rss_growth_mb': GOAL_RSS_GROWTH_MB},
        'goals_met': {'p99': latency['p99_ms'] <= GOAL_P99_MS, 'rate': best >= goal_rate,
                      'memory': soaked['rss_growth_mb'] <= GOAL_RSS_GROWTH_MB},
    })
    met = {key: 'met' if value else 'MISSED' for key, value in results['goals_met'].items()}
    print(f'ik_node: max sustained rate {best:.0f} targets/s, the echo {goal_rate:.0f} '
          f'({met["rate"]}); p99 {latency["p99_ms"]:.2f} ms <= {GOAL_P99_MS} ms ({met["p99"]}); '
          f'RSS +{soaked["rss_growth_mb"]:.2f} MiB over the soak <= {GOAL_RSS_GROWTH_MB} MiB '
          f'({met["memory"]})')
    print(f'ik_node: latency over the echo\'s: {added["median_ms"]:+.2f} ms at the median, '
          f'{added["p99_ms"]:+.2f} ms at p99; the echo\'s own p99 {floor["p99_ms"]:.2f} ms'
          + (f' is above the {GOAL_P99_MS} ms goal: no node through this path meets it on '
             'this machine' if floor['p99_ms'] > GOAL_P99_MS else ''))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + '\n')
    print(f'wrote {RESULTS.relative_to(REPO_ROOT)}')


if __name__ == '__main__':
    main()
