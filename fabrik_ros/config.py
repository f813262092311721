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
Chain configuration from ROS 2 parameter files, without ROS.

The config/*.yaml files are ordinary ROS 2 parameter files (`/**: ros__parameters:`), so
nodes get them through `--params-file`; this module reads the same files for benchmarks,
demos and launch files, and turns the flat parameters into a Chain.

Flat keys (nested YAML is joined with '.', exactly as rclpy flattens parameters):

- `robot_description_file` (URDF path, relative to the package share directory),
  `base_link`, `tip_links` (list): a chain or tree out of a URDF; or
- `chain.*` with `chain.segments` > 0: a plain description (see CHAIN_PARAMETERS), with the
  top-level `base_link` and `tip_links`;
- `joint_limits.<joint>.min_position` / `.max_position` (radians, as in MoveIt's
  joint_limits.yaml): per-joint overrides that may only narrow the model's limits.

The chain.* parameters have fixed ROS types (the defaults in CHAIN_PARAMETERS): lists are
always lists (`segment_length: [0.1]`), doubles are written with a decimal point.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from fabrik_ros.chain import Chain
import numpy as np
import yaml

CHAIN_PREFIX = 'chain.'
LIMITS_PREFIX = 'joint_limits.'
LIMIT_FIELDS = ('min_position', 'max_position', 'max_velocity', 'max_acceleration')
WILDCARD_NODE = '/**'

# The plain chain description: parameter name -> (default, which fixes the ROS type; meaning).
CHAIN_PARAMETERS: dict[str, tuple[Any, str]] = {
    'chain.segments': (0, 'Plain chain: segments per limb; 0 = no plain chain (use a URDF)'),
    'chain.segment_length': ([0.1], 'Plain chain: segment length, metres; one value for all '
                             'segments or one per segment'),
    'chain.joint_type': ('hinge', "Plain chain: 'hinge' (alternating yaw/pitch hinges), "
                         "'two_axis' (yaw + pitch per segment) or axis letters per segment, "
                         "cycled, e.g. 'z y y'"),
    'chain.joint_limit': ([math.pi / 2], 'Plain chain: symmetric joint limit, radians '
                          '(.inf: continuous); one for all joints or one per joint of a limb'),
    'chain.max_velocity': (2.0, 'Plain chain: joint velocity limit, rad/s'),
    'chain.legs': (0, 'Plain chain: 0 = one serial limb; N = N legs around the base, '
                   'one tip link each'),
    'chain.body_radius': (0.0, 'Plain chain: radius of the leg mounts around the base, metres'),
    'chain.mount_xyz': ([0.0, 0.0, 0.0], 'Plain chain: limb mount position, metres'),
    'chain.mount_rpy': ([0.0, 0.0, 0.0], 'Plain chain: limb mount roll/pitch/yaw, radians'),
}


def package_share_dir() -> Path:
    """Return the package's share directory: the source tree when run from it, else installed."""
    source_tree = Path(__file__).resolve().parent.parent
    if (source_tree / 'package.xml').is_file():
        return source_tree
    # Imported here: the solver core needs no ROS package, only an installed node does.
    from ament_index_python.packages import get_package_share_directory
    return Path(get_package_share_directory('fabrik_ros'))


def load_config(path: str | Path, node_name: str | None = None) -> dict[str, Any]:
    """
    Read a ROS 2 parameter file and return its parameters as one flat dict.

    The `/**` section applies to every node; the `node_name` section, if given and present,
    overrides it (as ROS does). Without node_name, a file with a single section uses it.
    Raises ValueError when the file has no usable `ros__parameters` section.
    """
    with open(path, encoding='utf-8') as stream:
        document = yaml.safe_load(stream)
    if not isinstance(document, dict) or not document:
        raise ValueError(f'{path}: expected a mapping of node names to ros__parameters')
    names = [WILDCARD_NODE]
    if node_name is not None:
        names.append(node_name)
    elif WILDCARD_NODE not in document and len(document) == 1:
        names = list(document)
    sections = [document[name] for name in names if name in document]
    if not sections:
        raise ValueError(f'{path}: no section for {names}; sections: {sorted(document)}')
    params: dict[str, Any] = {}
    for section in sections:
        if not isinstance(section, dict) or not isinstance(section.get('ros__parameters'),
                                                           dict):
            raise ValueError(f'{path}: a node section has no ros__parameters mapping')
        params.update(_flatten(section['ros__parameters']))
    return params


def _flatten(tree: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    """Return nested mappings as {'a.b.c': value}."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f'{prefix}{key}.'))
        else:
            flat[f'{prefix}{key}'] = value
    return flat


def chain_from_parameters(params: Mapping[str, Any],
                          share_dir: str | Path) -> Chain | None:
    """
    Build the Chain a flat parameter dict describes (see the module docstring).

    share_dir: the package share directory that robot_description_file is relative to.
    Returns None when the parameters describe no chain (the node then waits for the
    robot_description topic). Raises ValueError (ChainError for model problems) naming a
    missing, unknown or contradictory key.
    """
    unknown = sorted(key for key in params
                     if key.startswith(CHAIN_PREFIX) and key not in CHAIN_PARAMETERS)
    if unknown:
        raise ValueError(f'unknown parameters {unknown}; known: {list(CHAIN_PARAMETERS)}')
    urdf_file = params.get('robot_description_file', '')
    plain = params.get('chain.segments', 0) != 0
    if urdf_file and plain:
        raise ValueError('give either robot_description_file or chain.segments, not both')
    if not (urdf_file or plain):
        return None
    base_link = _required(params, 'base_link')
    tip_links = _string_list(_required(params, 'tip_links'), 'tip_links')
    if urdf_file:
        chain = Chain.from_urdf(_read_urdf(share_dir, urdf_file), base_link, tip_links)
    else:
        chain = _plain_chain(params, base_link, tip_links)
    return with_limit_overrides(chain, params)


def robot_description(params: Mapping[str, Any], share_dir: str | Path,
                      robot_name: str = 'fabrik_chain') -> str:
    """
    Return the URDF for robot_state_publisher.

    That is the robot_description_file as written, or the configured plain chain (limit
    overrides applied) written by Chain.to_urdf.
    """
    urdf_file = params.get('robot_description_file', '')
    if urdf_file:
        return _read_urdf(share_dir, urdf_file)
    chain = chain_from_parameters(params, share_dir)
    if chain is None:
        raise ValueError('no chain configured: set robot_description_file (with base_link '
                         'and tip_links) or chain.segments')
    return chain.to_urdf(robot_name)


def _read_urdf(share_dir: str | Path, urdf_file: str) -> str:
    """Return the text of robot_description_file (relative to share_dir, or absolute)."""
    urdf_path = Path(share_dir) / urdf_file
    try:
        return urdf_path.read_text(encoding='utf-8')
    except OSError as error:
        raise ValueError(f'robot_description_file: cannot read {urdf_path}: '
                         f'{error.strerror}') from None


def _plain_chain(params: Mapping[str, Any], base_link: str, tip_links: list[str]) -> Chain:
    """Return Chain.from_parameters of the chain.* keys (CHAIN_PARAMETERS defaults)."""
    def value(name: str) -> Any:
        return params.get(CHAIN_PREFIX + name, CHAIN_PARAMETERS[CHAIN_PREFIX + name][0])

    joint_type = value('joint_type')
    axes = {}
    if joint_type not in ('hinge', 'two_axis'):
        axes['segment_axes'] = joint_type.split()
        if not axes['segment_axes'] or not set(joint_type) <= set('xyz '):
            raise ValueError(f"{CHAIN_PREFIX}joint_type '{joint_type}': expected 'hinge', "
                             "'two_axis' or axis letters per segment, e.g. 'z y y' or 'zy'")
    legs = value('legs')
    return Chain.from_parameters(
        value('segments'), value('segment_length'), joint_type=joint_type, **axes,
        joint_limit=value('joint_limit'), max_velocity=value('max_velocity'), legs=legs,
        body_radius=value('body_radius'), mount_xyz=value('mount_xyz'),
        mount_rpy=value('mount_rpy'), base_link=base_link,
        tip_link=tip_links if legs else _single(tip_links))


def with_limit_overrides(chain: Chain, params: Mapping[str, Any]) -> Chain:
    """
    Return chain with the joint_limits.<joint>.* overrides applied (like joint_limits.yaml).

    min_position/max_position (radians) and max_velocity (rad/s) may only narrow the
    model's limits; max_acceleration (rad/s^2) has no slot in the model and is left to the
    command stream (the node reads it). ValueError names an unknown joint or field, a NaN,
    a widening or an empty range.
    """
    lower, upper = chain.lower.copy(), chain.upper.copy()
    velocity = chain.max_velocity.copy()
    columns = {'min_position': lower, 'max_position': upper, 'max_velocity': velocity}
    index = {joint: position for position, joint in enumerate(chain.joint_names)}
    for key, number in sorted(params.items()):
        if not key.startswith(LIMITS_PREFIX):
            continue
        joint, _, limit_field = key[len(LIMITS_PREFIX):].rpartition('.')
        if joint not in index:
            raise ValueError(f"{key}: unknown joint '{joint}'; joints: {chain.joint_names}")
        if limit_field not in LIMIT_FIELDS:
            raise ValueError(f'{key}: unknown field, expected one of {list(LIMIT_FIELDS)}')
        try:
            number = float(number)
        except (TypeError, ValueError):
            raise ValueError(f'{key} must be a number, got {number!r}') from None
        if math.isnan(number):
            raise ValueError(f'{key} is NaN')
        if limit_field in columns:
            columns[limit_field][index[joint]] = number
    widened = (lower < chain.lower) | (upper > chain.upper)
    if widened.any():
        index = int(np.flatnonzero(widened)[0])
        raise ValueError(f'joint_limits of {chain.joint_names[index]} [{lower[index]:g}, '
                         f'{upper[index]:g}] would widen the model limits '
                         f'[{chain.lower[index]:g}, {chain.upper[index]:g}]')
    faster = ~(velocity <= chain.max_velocity)
    if faster.any():
        index = int(np.flatnonzero(faster)[0])
        raise ValueError(f'joint_limits.{chain.joint_names[index]}.max_velocity '
                         f'{velocity[index]:g} rad/s would exceed the model limit '
                         f'{chain.max_velocity[index]:g} rad/s')
    return chain.with_limits(lower, upper, max_velocity=velocity)


def _required(params: Mapping[str, Any], key: str) -> Any:
    """Return params[key] or raise ValueError naming the missing (or empty) key."""
    value = params.get(key)
    if value is None or (isinstance(value, str) and not value):
        raise ValueError(f'missing parameter {key}')
    return value


def _string_list(value: Any, key: str) -> list[str]:
    """Return a string or a list of strings as a list of non-empty strings."""
    items = [value] if isinstance(value, str) else list(value)
    if not items or not all(isinstance(item, str) and item for item in items):
        raise ValueError(f'{key} must be a non-empty list of names, got {value!r}')
    return items


def _single(tip_links: list[str]) -> str:
    """Return the one tip link of a serial chain."""
    if len(tip_links) != 1:
        raise ValueError(f'a serial chain (chain.legs: 0) has one tip link, got {tip_links}')
    return tip_links[0]
