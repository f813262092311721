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

"""What the IK controller takes and gives: targets in, commands and updates out."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Target:
    """One effector's target in the base frame."""

    position: np.ndarray  # (3,) metres
    orientation: np.ndarray | None = None  # (4,) unit quaternion x, y, z, w; None: position


def target_positions(targets: list[Target | None]) -> np.ndarray:
    """Return the (m, 3) positions of effectors' targets, NaN rows for none."""
    return np.array([target.position if target is not None else [np.nan] * 3
                     for target in targets], dtype=float)


def target_orientations(targets: list[Target | None]) -> np.ndarray:
    """Return the (m, 4) quaternions of effectors' targets, NaN rows where none has one."""
    return np.array([target.orientation if target is not None
                     and target.orientation is not None else [np.nan] * 4
                     for target in targets], dtype=float)


@dataclass(frozen=True)
class Command:
    """One joint command to send, in chain joint order."""

    position: np.ndarray  # radians
    velocity: np.ndarray | None  # rad/s of this step with a command rate, else None
    previous: np.ndarray  # the command before, radians (see IkController.duration)


@dataclass
class Update:
    """What an event asks the node to do: send a command, report refusals and warnings."""

    command: Command | None = None
    refusal: tuple[str, str] | None = None  # (kind, reason) of a refused input
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (kind, text)
