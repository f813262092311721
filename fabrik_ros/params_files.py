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
The --params-file arguments of a node, checked before rcl reads them, without ROS.

rcl logs its own error and then fails on a file that is no parameter file, and it keeps an
earlier file's value without a word when a later file gives the same parameter another
type. Each problem here is one line naming the file and, where there is one, the key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

INT64 = (-2**63, 2**63 - 1)  # the range of a ROS integer parameter


def ros_type(value: Any) -> str:
    """Return the ROS parameter type a YAML value takes ('' for an empty list)."""
    kinds = {bool: 'a boolean', int: 'an integer', float: 'a double', str: 'a string'}
    if isinstance(value, list):
        inner = {ros_type(item) for item in value}
        if len(inner) == 1:
            return f'a list of {inner.pop().split(" ", 1)[1]}s'
        return 'a mixed list' if value else ''
    return kinds.get(type(value), type(value).__name__)


def _node_parameters(path: str, tree: Any, node: str = '') -> Iterator[tuple[str, dict]]:
    """Yield (node path, ros__parameters) of a parameter file's tree; ValueError if bad."""
    if not isinstance(tree, Mapping) or not tree:
        raise ValueError(f'--params-file {path}: {node or "the file"} must map node names '
                         f'to ros__parameters, got {type(tree).__name__}')
    for key, value in tree.items():
        if key == 'ros__parameters':
            if not isinstance(value, Mapping):
                raise ValueError(f'--params-file {path}: {node}: ros__parameters must be a '
                                 'mapping of parameter names to values')
            yield node, dict(value)
        else:
            yield from _node_parameters(path, value, f'{node}/{key}'.replace('//', '/'))


def _flat(parameters: Mapping[str, Any], prefix: str = '') -> Iterator[tuple[str, Any]]:
    """Yield the parameters of a nested mapping as ('a.b.c', value), as rcl names them."""
    for key, value in parameters.items():
        if isinstance(value, Mapping):
            yield from _flat(value, f'{prefix}{key}.')
        else:
            yield f'{prefix}{key}', value


def applies_to(section: str, node_name: str) -> bool:
    """Tell whether a file's node section applies to the node `node_name` (any namespace)."""
    last = section.rsplit('/', 1)[-1]
    return '*' in section or last == node_name


def _read(path: str) -> Any:
    """Return a file's YAML, or raise ValueError in one line naming it."""
    try:
        with open(path, encoding='utf-8') as stream:
            return yaml.safe_load(stream)
    except OSError as error:
        raise ValueError(f'cannot read --params-file {path}: {error.strerror}') from None
    except UnicodeDecodeError as error:
        raise ValueError(f'--params-file {path} is not UTF-8 text: byte '
                         f'{error.object[error.start]:#04x} at {error.start}') from None
    except yaml.YAMLError as error:
        raise ValueError(f'--params-file {path} is not YAML: '
                         f'{" ".join(str(error).split())}') from None


def params_file_problem(args: Sequence[str], node_name: str) -> str:
    """
    Return what is wrong with the --params-file arguments ('' if nothing).

    Each file must be a parameter file (node names mapping to ros__parameters); integers
    must fit int64; a file may not give a parameter another type than an earlier file
    gave it for the same node (rcl would keep the earlier value).
    """
    seen: dict[str, tuple[str, Any]] = {}  # parameter -> (file, value) that set it
    try:
        for flag, path in zip(args, args[1:]):
            if flag != '--params-file':
                continue
            for section, parameters in _node_parameters(path, _read(path)):
                for name, value in _flat(parameters):
                    if isinstance(value, int) and not isinstance(value, bool) \
                            and not INT64[0] <= value <= INT64[1]:
                        return f'--params-file {path}: {name}: {value} does not fit int64'
                    if not applies_to(section, node_name):
                        continue
                    earlier, before = seen.get(name, (path, value))
                    if ros_type(value) and ros_type(before) \
                            and ros_type(value) != ros_type(before):
                        return (f'--params-file {path}: {name} is {ros_type(value)} '
                                f'({value!r}) but {earlier} set {ros_type(before)} '
                                f'({before!r}); rcl would keep {before!r}')
                    seen[name] = (path, value)
    except ValueError as error:
        return str(error)
    return ''
