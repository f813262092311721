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
What the IK controller's solves and commands are made from: the settings, without ROS.

`Settings.from_parameters` turns the node's flat parameters (SETTING_NAMES, the per-joint
`joint_limits.<joint>.<field>` and per-effector `effector_weights.<effector>`) into one
frozen object, or raises ValueError naming the parameter and why it is unusable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import math

from fabrik_ros.chain import Chain
from fabrik_ros.config import LIMIT_FIELDS, LIMITS_PREFIX, with_limit_overrides
from fabrik_ros.ik import IkSolver, ORIENTATION_MODES, ROOT_MODES
from fabrik_ros.motion import MotionLimits
import numpy as np

# Names of the parameters Settings are made from (the node declares them).
SETTING_NAMES = ('tolerance', 'max_iterations', 'max_restarts', 'max_joint_step',
                 'target_timeout', 'feedback_timeout', 'target_window',
                 'default_max_velocity', 'default_max_acceleration', 'root', 'solve_timeout',
                 'max_body_velocity', 'orientation_mode', 'orientation_tolerance', 'tool_axis',
                 'self_collision', 'collision_margin', 'collision_slowdown_distance')
# effector_weights.<effector>: the effector's weight in conflicts (0: the solver's default).
WEIGHTS_PREFIX = 'effector_weights.'
# rad/s^2: a joint_limits.<joint>.max_acceleration above it is a typo (1.7e308 overflows
# the braking distances); 10,000 rad/s^2 takes a joint to 10 rad/s in a millisecond.
MAX_ACCELERATION = 1e4


@dataclass(frozen=True)
class Settings:
    """What solves and commands are made from; replaced whole when a parameter changes."""

    chain: Chain  # the model with the joint limit overrides applied
    motion: MotionLimits
    tolerance: float = 1e-4  # metres
    max_iterations: int = 100
    max_restarts: int = 24
    target_timeout: float = 0.0  # seconds, 0: never
    feedback_timeout: float = 0.5  # seconds
    target_window: float = 0.0  # seconds, trees only
    root: str = 'pinned'  # or 'free': the base slides toward the targets (see the module)
    solve_timeout: float = 0.0  # seconds per solve, 0: none
    max_body_velocity: float = 0.5  # m/s of the free body's pose
    # effector name -> weight > 0; effectors not named get the solver's defaults
    effector_weights: Mapping[str, float] = field(default_factory=dict)
    orientation_mode: str = 'full'  # what a target orientation fixes: full, axis, position
    orientation_tolerance: float = 1e-3  # radians
    tool_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)  # tool frame, unit ('axis' mode)
    self_collision: bool = True  # where the description gives collision geometry
    collision_margin: float = 0.01  # metres every checked pair keeps in a reached answer
    # metres beyond the margin within which the stream slows what approaches (0: no slowdown)
    collision_slowdown_distance: float = 0.1

    @classmethod
    def from_parameters(cls, model: Chain, values: Mapping[str, object]) -> Settings:
        """
        Return the settings of the flat node parameters `values` for the chain `model`.

        `values` holds SETTING_NAMES, any joint_limits.<joint>.<field> overrides
        (position and velocity may only narrow the model) and effector_weights.<effector>
        (0: the solver's default). ValueError names what is unusable: an unknown joint,
        field or effector, a widening, a bad acceleration, weight, root or timeout, an
        unknown orientation mode, a tool axis that is no direction.
        """
        limits = {name: value for name, value in values.items()
                  if name.startswith(LIMITS_PREFIX)}
        chain = with_limit_overrides(model, limits)
        velocity = np.where(np.isfinite(chain.max_velocity), chain.max_velocity,
                            values['default_max_velocity'])
        acceleration = np.array([
            float(limits.get(f'{LIMITS_PREFIX}{joint}.max_acceleration',
                             values['default_max_acceleration']))
            for joint in chain.joint_names])
        for joint, number in zip(chain.joint_names, acceleration):
            if not 0.0 < number <= MAX_ACCELERATION:  # inf would switch the limit off
                raise ValueError(f'{LIMITS_PREFIX}{joint}.max_acceleration must be above 0 '
                                 f'and at most {MAX_ACCELERATION:g} rad/s^2, got {number}')
        step = float(values['max_joint_step'])
        if not step > 0.0:  # NaN too
            raise ValueError('max_joint_step must be positive (or .inf for no limit), radians, '
                             f'got {step}')
        if values['root'] not in ROOT_MODES:
            raise ValueError(f"root must be one of {list(ROOT_MODES)}, got {values['root']!r}")
        for name in ('solve_timeout', 'max_body_velocity', 'collision_slowdown_distance'):
            if not 0.0 <= values[name] < math.inf:
                raise ValueError(f'{name} must be a finite number >= 0, got {values[name]}')
        mode = values['orientation_mode']
        if mode not in ORIENTATION_MODES:
            raise ValueError(f'orientation_mode must be one of {", ".join(ORIENTATION_MODES)}, '
                             f'got {mode!r}')
        axis = np.asarray(values['tool_axis'], dtype=float)
        norm = float(np.linalg.norm(axis)) if axis.shape == (3,) else math.nan
        if not 1e-9 < norm < math.inf:
            raise ValueError('tool_axis must be a direction [x, y, z] in the tool frame, '
                             f'got {list(values["tool_axis"])}')
        return cls(chain=chain,
                   motion=MotionLimits.create(chain.lower, chain.upper, velocity,
                                              acceleration, values['max_joint_step']),
                   tolerance=float(values['tolerance']),
                   max_iterations=int(values['max_iterations']),
                   max_restarts=int(values['max_restarts']),
                   target_timeout=float(values['target_timeout']),
                   feedback_timeout=float(values['feedback_timeout']),
                   target_window=float(values['target_window']),
                   root=values['root'], solve_timeout=float(values['solve_timeout']),
                   max_body_velocity=float(values['max_body_velocity']),
                   effector_weights=effector_weights(chain, values),
                   orientation_mode=mode,
                   orientation_tolerance=float(values['orientation_tolerance']),
                   tool_axis=tuple((axis / norm).tolist()),
                   self_collision=bool(values['self_collision']),
                   collision_margin=float(values['collision_margin']),
                   collision_slowdown_distance=float(values['collision_slowdown_distance']))

    def solver(self, **overrides: object) -> IkSolver:
        """Return a solver for these settings (solve_timeout 0: no time budget), but overrides."""
        return IkSolver(self.chain, **{
            'tolerance': self.tolerance, 'max_iterations': self.max_iterations,
            'max_restarts': self.max_restarts, 'root': self.root,
            'timeout': self.solve_timeout or None, 'effector_weights': self.effector_weights,
            'orientation_mode': self.orientation_mode,
            'orientation_tolerance': self.orientation_tolerance, 'tool_axis': self.tool_axis,
            'self_collision': None if self.self_collision else False,  # None: where described
            'collision_margin': self.collision_margin, **overrides})


def effector_weights(chain: Chain, values: Mapping[str, object]) -> dict[str, float]:
    """Return the effector_weights.<effector> of `values` set above 0; ValueError if bad."""
    weights = {}
    for key, weight in values.items():
        if not key.startswith(WEIGHTS_PREFIX):
            continue
        name = key[len(WEIGHTS_PREFIX):]
        if name not in chain.effector_names:
            raise ValueError(f'{key}: unknown effector; the chain has {chain.effector_names}')
        if not 0.0 <= weight < math.inf:
            raise ValueError(f'{key} must be a finite number >= 0 (0: the default), got '
                             f'{weight}')
        if weight > 0.0:
            weights[name] = float(weight)
    return weights


def model_limits(model: Chain, default_max_velocity: float,
                 default_max_acceleration: float) -> dict[str, float]:
    """Return every joint_limits.<joint>.<field> of the model before any override."""
    columns = {'min_position': model.lower, 'max_position': model.upper,
               'max_velocity': np.where(np.isfinite(model.max_velocity), model.max_velocity,
                                        default_max_velocity),
               'max_acceleration': np.full(model.dof, default_max_acceleration)}
    return {f'{LIMITS_PREFIX}{joint}.{name}': float(columns[name][index])
            for index, joint in enumerate(model.joint_names) for name in LIMIT_FIELDS}
