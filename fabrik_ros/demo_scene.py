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
The single-arm demo's scene: a table and a pillar, and how clear of them the arm stays.

The scene is config/overlays/scene.yaml, the parameters file the IK node gets too
(fabrik_ros.scene reads it as the node does). ClearanceScore keeps the smallest clearance
of the commands (the node's answers) and of the measured arm, per phase, against the
node's collision_margin, and which pair it was. Pure numpy (no ROS).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import re

from fabrik_ros.chain import Chain
from fabrik_ros.collision import Box, Cylinder, Obstacle, Scene
from fabrik_ros.config import load_config
from fabrik_ros.scene import SCENE_LIST, scene_obstacles
import numpy as np

SCENES = {'single': 'overlays/scene.yaml'}  # mode -> its scene, in the package's config/
MARGIN = 'collision_margin'  # the node's parameter: every answer keeps this clear
DEFAULT_MARGIN = 0.01  # metres, its default (fabrik_ros.ik_parameters, which imports rclpy)
OBSTACLE_LABEL = re.compile(r'obstacle (\d+) \(\w+\)')  # how the solver names obstacle i


@dataclass(frozen=True)
class DemoScene:
    """The obstacles of a scene file (base frame), their names and the node's margin."""

    path: Path
    names: tuple[str, ...]
    obstacles: tuple[Obstacle, ...]
    margin: float

    @classmethod
    def load(cls, path: Path, parameters: dict[str, object]) -> DemoScene:
        """
        Read the scene of `path`; `parameters`: the node's other files' (the margin).

        Raises ValueError for a bad entry or a frame other than the base link (the demo
        has no tf2 to place it).
        """
        values = {**parameters, **load_config(path)}
        scene, problems = scene_obstacles(values.get(SCENE_LIST), values)
        base = values.get('base_link', 'base_link')
        problems += [f'obstacle.{item.name}.frame_id: the demo places obstacles in '
                     f'{base!r} only, got {item.frame_id!r}'
                     for item in scene if item.frame_id not in ('', base)]
        if problems:
            raise ValueError(f'{path}: {problems[0]}')
        margin = float(values.get(MARGIN, DEFAULT_MARGIN))
        return cls(path, tuple(item.name for item in scene),
                   tuple(item.obstacle for item in scene), margin)

    def label(self, name: str) -> str:
        """Return a solver's name of a body ('obstacle 1 (cylinder)') as the scene's."""
        match = OBSTACLE_LABEL.fullmatch(name)
        return self.names[int(match.group(1))] if match else name

    def kinds(self) -> list[str]:
        """Return each obstacle's shape: box, sphere or cylinder."""
        return [type(obstacle).__name__.lower() for obstacle in self.obstacles]

    def scales(self) -> np.ndarray:
        """Return (n, 3) sizes as marker scales: edges, or diameters and a length (metres)."""
        rows = []
        for obstacle in self.obstacles:
            if isinstance(obstacle, Box):
                rows.append(obstacle.size_xyz)
            elif isinstance(obstacle, Cylinder):
                rows.append((2 * obstacle.radius, 2 * obstacle.radius, obstacle.length))
            else:
                rows.append((2 * obstacle.radius,) * 3)
        return np.array(rows, dtype=float).reshape(-1, 3)


@dataclass
class ClearanceScore:
    """The smallest clearance of commands and measurements per phase (None: approach)."""

    chain: Chain
    scene: DemoScene
    commands: dict = field(default_factory=dict)  # phase -> (metres, pair names)
    measured: dict = field(default_factory=dict)
    below: dict = field(default_factory=lambda: {'commands': 0, 'measured': 0})

    def __post_init__(self) -> None:
        """Stack the obstacles once for the many checks."""
        self._stacked = Scene(self.scene.obstacles)

    def check(self, q: np.ndarray, phase: int | None, kind: str) -> float:
        """Score one pose of `kind` ('commands' or 'measured'); return its clearance, m."""
        clearance = self.chain.clearance(q, self._stacked)
        smallest = getattr(self, kind)
        if clearance < smallest.get(phase, (np.inf,))[0]:
            names = self.chain.closest_pair(q, self._stacked).names
            smallest[phase] = (clearance, tuple(self.scene.label(n) for n in names))
        if clearance < self.scene.margin and phase is not None:
            self.below[kind] += 1
        return clearance

    def summary(self, phase_names: tuple[str, ...]) -> dict:
        """Return the smallest clearances over the run and at the approach, metres."""
        def smallest(kind: str, run: bool) -> dict | None:
            items = [value for phase, value in getattr(self, kind).items()
                     if (phase is not None) == run]
            if not items:
                return None
            clearance, pair = min(items)
            return {'min_m': round(float(clearance), 4), 'pair': list(pair)}

        return {'obstacles': list(self.scene.names), 'margin_m': self.scene.margin,
                'commands': smallest('commands', True), 'measured': smallest('measured', True),
                'approach_measured': smallest('measured', False),
                'below_margin': dict(self.below),
                'measured_per_phase_m': {phase_names[phase]: round(float(value[0]), 4)
                                         for phase, value in sorted(
                                             (p, v) for p, v in self.measured.items()
                                             if p is not None)}}


def format_scene(scene: dict) -> list[str]:
    """Return the summary lines of the scene's clearance."""
    def clear(entry: dict | None) -> str:
        return ('n/a' if entry is None
                else f'{entry["min_m"]:.3f} m ({" - ".join(entry["pair"])})')

    below = scene['below_margin']
    never = not below['commands'] and not below['measured']
    return [
        f'  scene               {", ".join(scene["obstacles"])}: smallest clearance over the '
        'run',
        f'    commanded         {clear(scene["commands"])}',
        f'    measured arm      {clear(scene["measured"])}; approaching the path '
        f'{clear(scene["approach_measured"])}',
        f'    margin            {scene["margin_m"]:.3f} m: '
        + ('never below it' if never else
           f'BELOW it in {below["commands"]} commands, {below["measured"]} measurements'),
    ]
