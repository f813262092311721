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
The demo's jogging phase without ROS: a scripted joystick and the scorekeeping.

JogScript is the stick: base-frame tool twists at JOG_RATE, segment by segment: circles in
a horizontal plane, a push out past full stretch (with a sideways part, which a stretched
arm can still follow), back to the ready pose by joint jogs (at full stretch the pull back
is the singular direction itself: a twist frees the arm only slowly, for MoveIt Servo too),
a turn through the wrist singularity (wrist pitch through zero, the tool moving sideways
meanwhile), then silence. Directions that depend on the
pose are fixed from the commanded joints as each segment starts. JogScore scores the
node's commands (their positions and velocities) against the twist in force: the achieved
tool velocity, what is kept along the directions that stay well conditioned, the largest
joint velocity as a share of its limit, the time to rest after the stream stops; and
draws them (plot). fabrik_ros.demo_joystick wires both to ROS.
"""

from dataclasses import dataclass, field
from pathlib import Path

from fabrik_ros.chain import Chain
from fabrik_ros.jog import achieved_twist
import numpy as np

JOG_RATE = 100.0  # Hz of twist messages and of the node's command stream
JOG_ACCELERATION = 8.0  # rad/s^2, the node's default_max_acceleration in the jog demo
JOG_READY = np.array([0.0, 0.5, 1.0, 0.0, 0.8, 0.0])  # well conditioned, the circles' start
SEGMENTS = (('circles', 4.0), ('stretch', 3.0), ('back', 2.5), ('wrist', 3.5))  # name, s
JOINT_SEGMENTS = {'back'}  # joint jogs toward JOG_READY, not twists
SILENCE_S = 1.5  # s after the stream stops
RAMP_S = 0.2  # s of each segment not scored: the arm accelerates to the new twist
CIRCLE_RADIUS, CIRCLE_PERIOD = 0.06, 2.0  # m, s
STRETCH_SPEED, SIDEWAYS_SPEED = 0.15, 0.05  # m/s
WRIST_RATE = 0.4  # rad/s about the wrist pitch axis
WELL_CONDITIONED = 17.0  # a direction conditioned better than this should be followed
SHOULDER, WRIST_PITCH = 1, 4  # joint indices in the demo arm (config/arm.yaml)


def _jacobian(chain: Chain, q: np.ndarray) -> np.ndarray:
    """Return the (6, n) tool Jacobian of a serial revolute arm (unit length scale)."""
    kinematics = chain.forward(q)
    linear = np.cross(kinematics.axes, chain.tip_position(q) - kinematics.positions)
    return np.vstack([linear.T, kinematics.axes.T])


def remaining(chain: Chain, q: np.ndarray, twist: np.ndarray) -> np.ndarray:
    """Return ``twist`` less its parts along directions conditioned worse than 17."""
    u, sigma, _ = np.linalg.svd(_jacobian(chain, q))
    weak = u[:, sigma * WELL_CONDITIONED < sigma[0]]
    return twist - weak @ (weak.T @ twist)


@dataclass
class JogScript:
    """The scripted joystick; see the module docstring."""

    chain: Chain
    _fixed: dict[int, np.ndarray] = field(default_factory=dict)  # segment -> its twist

    @property
    def stream_time(self) -> float:
        """Return the seconds of twists (then SILENCE_S of none)."""
        return sum(seconds for _, seconds in SEGMENTS)

    @property
    def duration(self) -> float:
        """Return the seconds of the whole phase."""
        return self.stream_time + SILENCE_S

    def segment(self, t: float) -> int | None:
        """Return the index into SEGMENTS at ``t`` seconds; None once the stream stopped."""
        start = 0.0
        for index, (_, seconds) in enumerate(SEGMENTS):
            if t < start + seconds:
                return index
            start += seconds
        return None

    def segment_time(self, t: float) -> float:
        """Return the seconds since the segment at ``t`` began."""
        index = self.segment(t)
        return t - sum(seconds for _, seconds in SEGMENTS[:index or 0])

    def twist(self, t: float, q: np.ndarray) -> np.ndarray | None:
        """Return the (6,) base-frame twist at ``t`` (``q``: the commanded joints) or None."""
        index = self.segment(t)
        if index is None:
            return None
        name = SEGMENTS[index][0]
        if name == 'circles':
            omega = 2.0 * np.pi / CIRCLE_PERIOD
            phase = omega * self.segment_time(t)
            speed = CIRCLE_RADIUS * omega
            return np.array([-speed * np.sin(phase), speed * np.cos(phase), 0.0, 0.0, 0.0, 0.0])
        if name in JOINT_SEGMENTS:
            return None
        if index not in self._fixed:
            self._fixed[index] = self._segment_twist(name, q)
        return self._fixed[index]

    def _segment_twist(self, name: str, q: np.ndarray) -> np.ndarray:
        chain = self.chain
        outward = chain.tip_position(q) - chain.joint_positions(q)[SHOULDER]
        outward /= np.linalg.norm(outward)
        if name == 'stretch':
            return np.concatenate([STRETCH_SPEED * outward + [0.0, SIDEWAYS_SPEED, 0.0],
                                   np.zeros(3)])
        axis = chain.forward(q).axes[WRIST_PITCH]  # turned so that the pitch goes to zero
        turn = -np.sign(q[WRIST_PITCH]) or 1.0
        return np.concatenate([[0.0, SIDEWAYS_SPEED / 2.0, 0.0], turn * WRIST_RATE * axis])


@dataclass
class JogScore:
    """What the node's commands did with the twists; see the module docstring."""

    chain: Chain
    max_velocity: np.ndarray  # rad/s, the node's per-joint limits
    period: float = 1.0 / JOG_RATE
    samples: list[tuple] = field(default_factory=list)  # (t, segment, twist, achieved, share)
    statuses: dict[int, set[int]] = field(default_factory=dict)  # segment -> status codes
    stopped_at: float | None = None  # t of the last twist
    rest_at: float | None = None  # t of the first command at rest after it

    def status(self, segment: int | None, code: int) -> None:
        """Note a ~/status code seen during ``segment``."""
        if segment is not None:
            self.statuses.setdefault(segment, set()).add(int(code))

    def command(self, t: float, segment: int | None, twist: np.ndarray | None,
                q: np.ndarray, velocity: np.ndarray) -> None:
        """Score a command received at ``t`` (phase seconds) while ``twist`` is in force."""
        if segment is None and self.stopped_at is not None and self.rest_at is None \
                and not np.any(velocity):
            self.rest_at = t
        before = q - velocity * self.period  # the jogger's velocity is its step per period
        achieved = achieved_twist(self.chain, before, q, self.period)
        share = float(np.max(np.abs(velocity) / self.max_velocity))
        self.samples.append((t, segment, twist, achieved, share, before))

    def summary(self) -> dict:
        """Return the phase's figures per segment and the time to rest."""
        segments = {}
        for index, (name, _) in enumerate(SEGMENTS):
            start = sum(seconds for _, seconds in SEGMENTS[:index])
            rows = [s for s in self.samples if s[1] == index and s[0] >= start + RAMP_S
                    and s[2] is not None]
            if rows:
                segments[name] = self._segment(rows, self.statuses.get(index, set()))
        shares = [s[4] for s in self.samples]
        return {'segments': segments,
                'max_joint_velocity_share': round(max(shares), 3) if shares else None,
                'rest_after_stream_s': None if self.rest_at is None or self.stopped_at is None
                else round(self.rest_at - self.stopped_at, 3)}

    def _segment(self, rows: list[tuple], statuses: set[int]) -> dict:
        commanded = np.array([np.linalg.norm(r[2][:3]) for r in rows])
        achieved = np.array([np.linalg.norm(r[3][:3]) for r in rows])
        errors = np.array([np.linalg.norm(r[3][:3] - r[2][:3]) for r in rows]) / commanded
        cosines = [r[3][:3] @ r[2][:3] / max(np.linalg.norm(r[3][:3]) * c, 1e-12)
                   for r, c in zip(rows, commanded)]
        directions = np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0)))
        kept = []
        for row in rows:
            wanted = remaining(self.chain, row[5], row[2])
            norm = float(np.linalg.norm(wanted))
            if norm > 1e-6:
                kept.append(float(row[3] @ wanted) / norm ** 2)
        return {'commanded_speed_m_s': round(float(np.median(commanded)), 4),
                'achieved_speed_m_s': round(float(np.median(achieved)), 4),
                'speed_error': {'median': round(float(np.median(errors)), 4),
                                'max': round(float(np.max(errors)), 4)},
                'direction_deg': {'median': round(float(np.median(directions)), 2),
                                  'max': round(float(np.max(directions)), 2)},
                'kept_well_conditioned': {'median': round(float(np.median(kept)), 3),
                                          'min': round(float(np.min(kept)), 3)}
                if kept else None,
                'max_joint_velocity_share': round(max(r[4] for r in rows), 3),
                'statuses': sorted(statuses)}


def format_jog_summary(summary: dict) -> str:
    """Return the jogging figures as a few aligned lines."""
    lines = ["  jogging (commanded vs achieved tool velocity, after each segment's "
             f'{RAMP_S:g} s ramp)']
    for name, row in summary['segments'].items():
        kept = row['kept_well_conditioned']
        lines.append(
            f'    {name:<8} {row["commanded_speed_m_s"]:.3f} -> '
            f'{row["achieved_speed_m_s"]:.3f} m/s, error median '
            f'{100 * row["speed_error"]["median"]:.1f} % (max '
            f'{100 * row["speed_error"]["max"]:.0f} %), direction '
            f'{row["direction_deg"]["median"]:.1f} deg; well-conditioned part kept '
            + ('n/a' if kept is None else f'{kept["median"]:.2f} (min {kept["min"]:.2f})')
            + f'; joints <= {100 * row["max_joint_velocity_share"]:.0f} % of their velocity '
            f'limits; status {row["statuses"]}')
    rest = summary['rest_after_stream_s']
    lines.append('    at rest ' + ('never' if rest is None else f'{rest:.3f} s')
                 + ' after the last twist (jog_timeout 0.1 s + braking)')
    return '\n'.join(lines)


def plot(score: JogScore, path: Path) -> None:
    """Draw commanded and achieved tool speed and the joint velocity share over time."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    t = np.array([s[0] for s in score.samples])
    commanded = np.array([np.linalg.norm(s[2][:3]) if s[2] is not None else 0.0
                          for s in score.samples])
    achieved = np.array([np.linalg.norm(s[3][:3]) for s in score.samples])
    share = np.array([s[4] for s in score.samples])
    figure, (speed, joints) = pyplot.subplots(2, 1, sharex=True, figsize=(9, 5))
    speed.plot(t, commanded, label='commanded', color='0.4', linestyle='--')
    speed.plot(t, achieved, label='achieved (commands)', color='tab:blue')
    speed.set_ylabel('tool speed, m/s')
    joints.plot(t, share, color='tab:red')
    joints.axhline(1.0, color='0.5', linewidth=0.8)
    joints.set_ylabel('fastest joint /\nits velocity limit')
    joints.set_xlabel('s')
    start = 0.0
    for index, (name, seconds) in enumerate(SEGMENTS):
        for axes in (speed, joints):
            axes.axvspan(start, start + seconds, color=f'C{index}', alpha=0.08)
        speed.text(start + 0.05, 0.98, name, transform=speed.get_xaxis_transform(),
                   va='top', fontsize=9)
        start += seconds
    speed.legend(loc='upper right', fontsize=9)
    figure.suptitle('fabrik_ros jogging: a scripted joystick on ~/delta_twist_cmds')
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
