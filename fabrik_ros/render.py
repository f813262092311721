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
Draw a recorded demo run: the chain at work, the target path, the tip path, the errors.

The pictures in docs/images come from real runs, regenerated with (from the repository
root, each command behind ``bash scripts/ros_venv.sh``):
    python3 -m fabrik_ros.demo --mode single --record /tmp/single.npz
    python3 -m fabrik_ros.render /tmp/single.npz -o docs/images/single.png
    python3 -m fabrik_ros.demo --mode double --record /tmp/double.npz
    python3 -m fabrik_ros.render /tmp/double.npz -o docs/images/double.png
    python3 -m fabrik_ros.demo --mode spider --record /tmp/spider.npz
    python3 -m fabrik_ros.render /tmp/spider.npz -o docs/images/spider.png
    python3 -m fabrik_ros.demo --mode spider --free-body --record /tmp/spider_free.npz
    python3 -m fabrik_ros.render /tmp/spider_free.npz -o docs/images/spider_free.png

Left: a 3D view with the measured chain at a few moments of the last lap of the moving
phase (faded oldest to newest), the final stretched pose toward the out-of-reach targets,
the target paths (dashed) and the measured tip paths; where the tool turned ('orienting'
phase), its measured frame and the target frame as red/green/blue axes at a few moments.
Right: the measured tip's distance from its target over time, per phase, and the angle
between the measured and the target tool frames. A free body's path is drawn too (the
chain hangs from it). A run with a scene (single mode) shows its obstacles, the posture a
solve without them gives the last moving target (dashed), and below the errors the measured
arm's clearance over time against the node's margin. Needs matplotlib (``pip install
matplotlib``); no ROS.
"""

import argparse
from collections.abc import Sequence
from pathlib import Path

from fabrik_ros.paths import rotation_angles
import numpy as np

SNAPSHOTS = 5  # poses drawn along the moving phase
FRAME_SNAPSHOTS = 6  # tool frames drawn along the orienting phase
FRAME_SIZE = 0.08  # metres: length of a drawn tool frame axis
SMOOTHING = 0.25  # seconds of the error plot's rolling median
VIEW_ELEVATION = 20.0  # degrees
VIEW_OFFSET = 35.0  # degrees of azimuth off the line from the base to the paths
SCENE_VIEW = (30.0, -60.0)  # elevation, offset: a scene seen from beside the base
PHASE_COLOURS = {'moving': '#e8f1fb', 'orienting': '#f3ecfa', 'holding': '#eef7ea',
                 'out of reach': '#fbeaea'}
AXIS_COLOURS = ('#d62728', '#2ca02c', '#1f77b4')  # x, y, z
CHAIN_COLOUR = '#1f4e79'
STRETCHED_COLOUR = '#c0392b'
TARGET_COLOUR = '#e67e22'
TIP_COLOUR = '#27ae60'
BODY_COLOUR = '#8e44ad'
ANGLE_COLOUR = '#16a085'
OBSTACLE_COLOUR = '#7f8c8d'
UNCHECKED_COLOUR = '#4d4d4d'
SURFACE_STEPS = 24  # facets around a drawn cylinder or sphere


def phase_mask(run: dict, name: str) -> np.ndarray:
    """Return which samples are in the phase called ``name`` (none if the run has none)."""
    names = [str(n) for n in run['phase_names']]
    return run['phase'] == names.index(name) if name in names else np.zeros_like(
        run['phase'], dtype=bool)


def orientation_errors(run: dict) -> np.ndarray:
    """
    Return per sample the largest angle (radians) of a measured tool frame off its target.

    NaN where the targets have no orientation (and for recordings made before orientations).
    """
    if 'target_rotations' not in run:
        return np.full(len(run['t']), np.nan)
    targets = run['target_rotations']
    angles = rotation_angles(run['effector_rotations'], np.nan_to_num(targets))  # (k, m)
    angles[np.isnan(targets).any(axis=(2, 3))] = np.nan
    return np.array([np.nanmax(a) if np.isfinite(a).any() else np.nan for a in angles])


def draw_frame(ax, origin: np.ndarray, rotation: np.ndarray, width: float,
               alpha: float) -> None:
    """Draw a tool frame as red/green/blue axes of FRAME_SIZE metres."""
    for axis, colour in zip(rotation.T, AXIS_COLOURS):
        ax.plot(*np.array([origin, origin + FRAME_SIZE * axis]).T, color=colour,
                linewidth=width, alpha=alpha)


def link_segments(joint_positions: np.ndarray, joint_parents: np.ndarray,
                  effector_positions: np.ndarray, effector_parents: np.ndarray,
                  base: np.ndarray | None = None) -> list[np.ndarray]:
    """Return the (2, 3) segments of one pose: parent joint (or the base) to child."""
    root = np.zeros(3) if base is None else base

    def anchor(parent: int) -> np.ndarray:
        return joint_positions[parent] if parent >= 0 else root

    return ([np.array([anchor(p), point]) for p, point in zip(joint_parents, joint_positions)]
            + [np.array([anchor(p), point])
               for p, point in zip(effector_parents, effector_positions)])


def draw_pose(ax, run: dict, index: int, colour: str, alpha: float) -> None:
    """Draw the chain of sample ``index``: links, joints and tips."""
    joints, tips = run['joint_positions'][index], run['effector_positions'][index]
    base = run['body'][index] if 'body' in run else None
    for segment in link_segments(joints, run['joint_parents'], tips, run['effector_parents'],
                                 base):
        ax.plot(*segment.T, color=colour, alpha=alpha, linewidth=2.5, solid_capstyle='round')
    ax.scatter(*joints.T, color=colour, alpha=alpha, s=12, depthshade=False)
    ax.scatter(*tips.T, color=colour, alpha=alpha, s=18, marker='s', depthshade=False)


def draw_scene(ax, run: dict) -> None:
    """Draw the 3D view: poses, target and tip paths, tool frames, the out-of-reach target."""
    phase, t = run['phase'], run['t']
    moving = np.flatnonzero(phase_mask(run, 'moving'))
    # Spread over the last lap, so periodic paths show different poses.
    end = t[moving[-1]]
    times = np.linspace(max(end - float(run['period']), t[moving[0]]), end, SNAPSHOTS,
                        endpoint=False)
    for rank, moment in enumerate(times):
        index = moving[np.argmin(np.abs(t[moving] - moment))]
        draw_pose(ax, run, index, CHAIN_COLOUR, 0.25 + 0.6 * rank / max(SNAPSHOTS - 1, 1))
    draw_pose(ax, run, len(phase) - 1, STRETCHED_COLOUR, 0.9)
    draw_tool_frames(ax, run)
    corners = draw_obstacles(ax, run)
    on_path = ~phase_mask(run, 'out of reach')
    for effector in range(run['targets'].shape[1]):
        ax.plot(*run['effector_positions'][on_path, effector].T, color=TIP_COLOUR,
                linewidth=3.0, alpha=0.5, label='measured tip' if effector == 0 else None)
        ax.plot(*run['targets'][on_path, effector].T, '--', color=TARGET_COLOUR, linewidth=1.2,
                label='target path' if effector == 0 else None)
    beyond = run['targets'][-1]
    body = run['body'] if bool(run.get('free_body', False)) else np.zeros((1, 3))
    if len(body) > 1:  # a free body: only the first target goes out of reach
        beyond = beyond[:1]
        ax.plot(*body.T, color=BODY_COLOUR, linewidth=2.5, label='body path')
    ax.scatter(*beyond.T, color=STRETCHED_COLOUR, marker='x', s=60, depthshade=False,
               label='out-of-reach target')
    ax.scatter(*body[:1].T, color='black', marker='^', s=40, label='base')
    points = np.concatenate([run['joint_positions'].reshape(-1, 3), beyond, body, corners])
    low, high = points.min(axis=0), points.max(axis=0)
    ax.set_box_aspect(np.maximum(high - low, 1e-3))
    # Look at the paths nearly face on: from their side of the base, a little off axis.
    middle = run['targets'][on_path].reshape(-1, 3).mean(axis=0)
    # A scene from beside the base: the pillar before the paths, the arm around it.
    elevation, offset = SCENE_VIEW if len(corners) else (VIEW_ELEVATION, VIEW_OFFSET)
    if np.hypot(middle[0], middle[1]) > 0.1 * np.max(high - low):
        ax.view_init(elev=elevation, azim=np.degrees(np.arctan2(middle[1], middle[0])) + offset)
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')
    ax.set_zlabel('z [m]')
    ax.legend(loc='upper left', fontsize=8)


def obstacle_surface(kind: str, scale: np.ndarray, pose: np.ndarray) -> np.ndarray:
    """
    Return (3, k, l) surface points of a box, cylinder or sphere in the base frame.

    scale as a marker's: a box's edges, a cylinder's diameters and length, a sphere's
    diameter. A box or cylinder is its bottom cap, wall and top cap around its rim.
    """
    half = np.asarray(scale, dtype=float) / 2.0
    around = np.linspace(0.0, 2.0 * np.pi, SURFACE_STEPS + 1)
    if kind == 'sphere':
        polar = np.linspace(0.0, np.pi, SURFACE_STEPS // 2 + 1)[:, np.newaxis]
        local = half[0] * np.array([np.sin(polar) * np.cos(around),
                                    np.sin(polar) * np.sin(around),
                                    np.cos(polar) * np.ones_like(around)])
    else:
        if kind == 'box':
            rim = np.array([[-1, 1, 1, -1, -1], [-1, -1, 1, 1, -1]]) * half[:2, np.newaxis]
        else:
            rim = np.array([np.cos(around), np.sin(around)]) * half[:2, np.newaxis]
        zero = np.zeros_like(rim[0])
        heights = np.array([-1.0, -1.0, 1.0, 1.0])[:, np.newaxis] * half[2] + zero
        local = np.array([[zero, rim[0], rim[0], zero], [zero, rim[1], rim[1], zero],
                          heights])
    return np.einsum('ij,jkl->ikl', pose[:3, :3], local) + pose[:3, 3, np.newaxis, np.newaxis]


def draw_obstacles(ax, run: dict) -> np.ndarray:
    """Draw the scene's obstacles and the posture without them; return points to frame."""
    if 'obstacle_poses' not in run:
        return np.zeros((0, 3))
    points = []
    for index, (kind, scale, pose) in enumerate(zip(run['obstacle_kinds'],
                                                    run['obstacle_scales'],
                                                    run['obstacle_poses'])):
        surface = obstacle_surface(str(kind), scale, pose)
        ax.plot_surface(*surface, color=OBSTACLE_COLOUR, alpha=0.3, linewidth=0.0,
                        shade=True, label='obstacles' if index == 0 else None)
        points.append(surface.reshape(3, -1).T)
    joints = run['unchecked_joint_positions']
    segments = link_segments(joints, run['joint_parents'], run['unchecked_effector_positions'],
                             run['effector_parents'])
    clearance, pair = float(run['unchecked_clearance']), [str(n) for n in run['unchecked_pair']]
    said = (f'{" through ".join(pair)}' if clearance < 0.0
            else f'{1e3 * clearance:.0f} mm clear')
    for number, segment in enumerate(segments):
        ax.plot(*segment.T, '--', color=UNCHECKED_COLOUR, linewidth=1.6, alpha=0.8,
                label=f'the same target solved without the scene: {said}' if number == 0
                else None)
    return np.concatenate(points)


def draw_clearance(ax, run: dict) -> None:
    """Draw the measured arm's clearance over time against the node's margin."""
    t, clearance = run['t'], 1e3 * run['clearance']
    for index, name in enumerate(run['phase_names']):
        inside = t[run['phase'] == index]
        if len(inside):
            ax.axvspan(inside[0], inside[-1], color=PHASE_COLOURS[str(name)])
    ax.plot(t, clearance, color=CHAIN_COLOUR, linewidth=1.4,
            label=f'measured arm to {", ".join(str(n) for n in run["obstacle_names"])}')
    ax.axhline(1e3 * float(run['margin']), color=STRETCHED_COLOUR, linestyle='--',
               linewidth=1.0, label='collision_margin')
    smallest = int(np.nanargmin(clearance))
    ax.annotate(f'{clearance[smallest]:.0f} mm at least', (t[smallest], clearance[smallest]),
                xytext=(0, -14), textcoords='offset points', ha='center', fontsize=8)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('clearance [mm]')
    ax.grid(True, alpha=0.4)
    ax.legend(loc='upper right', fontsize=8)


def draw_tool_frames(ax, run: dict) -> None:
    """Draw the first tool's measured (thick) and target (thin) frames while orienting."""
    orienting = np.flatnonzero(phase_mask(run, 'orienting'))
    if not len(orienting) or 'target_rotations' not in run:
        return
    for index in orienting[np.linspace(0, len(orienting) - 1, FRAME_SNAPSHOTS).astype(int)]:
        draw_frame(ax, run['effector_positions'][index, 0],
                   run['effector_rotations'][index, 0], 2.5, 0.9)
        draw_frame(ax, run['targets'][index, 0], run['target_rotations'][index, 0], 1.0, 0.6)
    ax.plot([], [], color=AXIS_COLOURS[2], linewidth=2.5,
            label='tool frame x/y/z (thin: target), orienting')


def rolling_median(values: np.ndarray, window: int) -> np.ndarray:
    """Return the median of each value and up to ``window - 1`` before it."""
    return np.array([np.median(values[max(0, i - window + 1):i + 1])
                     for i in range(len(values))])


def draw_errors(ax, run: dict) -> None:
    """Draw the measured tip error over time (max over effectors), phases shaded."""
    t, phase = run['t'], run['phase']
    errors = 1e3 * np.max(
        np.linalg.norm(run['effector_positions'] - run['targets'], axis=2), axis=1)
    for index, name in enumerate(run['phase_names']):
        inside = t[phase == index]
        if len(inside):
            ax.axvspan(inside[0], inside[-1], color=PHASE_COLOURS[str(name)], label=str(name))
    floor = 1e-4  # mm: exact hits would vanish from a log axis
    window = max(1, int(SMOOTHING / np.median(np.diff(t)))) if len(t) > 1 else 1
    ax.semilogy(t, np.maximum(errors, floor), color=CHAIN_COLOUR, linewidth=0.5, alpha=0.35,
                label='each sample')
    ax.semilogy(t, np.maximum(rolling_median(errors, window), floor), color=CHAIN_COLOUR,
                linewidth=1.8, label=f'median over {SMOOTHING:g} s')
    ax.annotate(f'{errors[-1]:.0f} mm left: out of reach', (t[-1], errors[-1]),
                xytext=(-10, -18), textcoords='offset points', ha='right', fontsize=8)
    ax.set_xlabel('time [s]')
    ax.set_ylabel('measured tip to target [mm]')
    ax.grid(True, which='major', alpha=0.4)
    ax.legend(loc='upper left', fontsize=8)
    angles = np.degrees(orientation_errors(run))
    if np.isfinite(angles).any():
        twin = ax.twinx()
        twin.semilogy(t, np.maximum(rolling_median(angles, window), floor), color=ANGLE_COLOUR,
                      linewidth=1.4, label=f'tool frame off target, median over {SMOOTHING:g} s')
        twin.set_ylabel('measured tool frame to target [deg]', color=ANGLE_COLOUR)
        twin.legend(loc='upper right', fontsize=8)


def render(recording: Path, output: Path) -> None:
    """Render ``recording`` (an .npz from ``fabrik_ros.demo --record``) to ``output``."""
    # Imported here: matplotlib draws the README pictures; nothing else of the package needs it.
    from matplotlib.figure import Figure  # no pyplot: no display or GUI backend involved

    with np.load(recording) as data:
        run = {key: data[key] for key in data.files}
    figure = Figure(figsize=(13, 6), dpi=100)
    grid = figure.add_gridspec(1, 2, width_ratios=(1.25, 1.0))
    scene = figure.add_subplot(grid[0], projection='3d')
    draw_scene(scene, run)
    if 'clearance' in run:
        right = grid[1].subgridspec(2, 1, height_ratios=(2.0, 1.0))
        errors = figure.add_subplot(right[0])
        draw_clearance(figure.add_subplot(right[1], sharex=errors), run)
    else:
        errors = figure.add_subplot(grid[1])
    draw_errors(errors, run)
    free = ', free body' if bool(run.get('free_body', False)) else ''
    among = (f' among obstacles ({", ".join(str(n) for n in run["obstacle_names"])})'
             if 'obstacle_names' in run else '')
    figure.suptitle(f'fabrik_ros demo, {run["mode"]} mode{free}{among}: IK node + simulated '
                    'arm, measured over DDS')
    figure.tight_layout()
    figure.savefig(output)


def main(argv: Sequence[str] | None = None) -> None:
    """Render a recording given on the command line."""
    parser = argparse.ArgumentParser(prog='python3 -m fabrik_ros.render',
                                     description=__doc__.strip().split('\n')[0])
    parser.add_argument('recording', type=Path, help='.npz from fabrik_ros.demo --record')
    parser.add_argument('-o', '--output', type=Path, required=True, help='PNG to write')
    args = parser.parse_args(argv)
    render(args.recording, args.output)
    print(f'wrote {args.output}')


if __name__ == '__main__':
    main()
