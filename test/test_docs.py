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
Every code block of README.md and docs/ works as written, so a documented command cannot rot.

Python blocks run; YAML blocks name only parameters the nodes declare; bash blocks are split
into commands, each checked by what it is: the venv's `python3 -m fabrik_ros.*` commands run
(--help, the nodes until they have loaded their chain) or have their options parsed; `ros2`
commands must name the package's executables, launch arguments, configs, topics, message
types and fields, parameters and services that the code declares; setup commands (git,
colcon, rosdep) are left to the ROS route. A command of a kind this file does not know fails,
so a new one gets a check.
"""

from collections.abc import Iterator
import importlib
import os
from pathlib import Path
import re
import shlex
import subprocess
import sys
import time

from fabrik_ros.config import chain_from_parameters, CHAIN_PARAMETERS, load_config
from fabrik_ros.demo import parse_args as demo_arguments
from fabrik_ros.ik_parameters import NODE_PARAMETERS
from fabrik_ros.node_process import NodeProcess
from fabrik_ros.scene import SCENE_PREFIX
from fabrik_ros.sim_arm import SIM_PARAMETERS
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / 'README.md', *sorted((REPO / 'docs').glob('*.md'))]
SHARE = '$(ros2 pkg prefix --share fabrik_ros)'  # the installed share dir: the repository here
VENV = ['bash', 'scripts/ros_venv.sh']
SETUP_COMMANDS = {'mkdir', 'cd', 'git', 'rosdep', 'colcon', 'source'}  # the ROS route's
START_TIMEOUT = 60.0  # seconds for a node to load its chain on a busy machine
SOURCES = '\n'.join(path.read_text() for path in sorted((REPO / 'fabrik_ros').glob('*.py')))
CONFIG_TIPS = {tip for path in (REPO / 'config').glob('*.yaml')
               for tip in load_config(path).get('tip_links', [])}
TARGET_TOPICS = {'target_pose': 'geometry_msgs/msg/PoseStamped',
                 'goal_pose': 'geometry_msgs/msg/PoseStamped',
                 'clicked_point': 'geometry_msgs/msg/PointStamped',
                 '/ik_node/delta_twist_cmds': 'geometry_msgs/msg/TwistStamped',
                 '/ik_node/obstacles': 'visualization_msgs/msg/MarkerArray',
                 **{f'{tip}/target_pose': 'geometry_msgs/msg/PoseStamped' for tip in CONFIG_TIPS}}
SERVICES = {'/ik_node/enable': 'std_srvs/srv/SetBool', '/ik_node/hold': 'std_srvs/srv/Trigger'}
# What a ready node logs (ik_node: its chain; sim_arm: what it simulates).
READY = {'ik_node': 'joints', 'sim_arm': 'simulating'}


def blocks(language: str) -> Iterator[tuple[str, str]]:
    """Yield (document: block number, text) of every fenced block in `language`."""
    for path in DOCUMENTS:
        found = re.findall(r'^```(\w*)\n(.*?)^```', path.read_text(), re.M | re.S)
        for number, (lang, text) in enumerate(found, 1):
            if lang == language:
                yield f'{path.relative_to(REPO)}:{number}', text


def commands(text: str) -> Iterator[list[str]]:
    """Yield the commands of a bash block as words (continuations joined, `&&` split)."""
    pending = ''
    for line in text.replace(SHARE, '{share}').splitlines():
        pending += line
        if pending.endswith('\\'):
            pending = pending[:-1] + ' '
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the argument goes on on the next line
            pending += '\n'
            continue
        pending = ''
        while words:
            end = words.index('&&') if '&&' in words else len(words)
            yield words[:end]
            words = words[end + 1:]
    assert not pending, f'unfinished command: {pending}'


def documented_commands() -> list[tuple[str, list[str]]]:
    """Return (where, words) of every command in a bash block, each command once."""
    seen, found = set(), []
    for where, text in blocks('bash'):
        for words in commands(text):
            if tuple(words) not in seen:
                seen.add(tuple(words))
                found.append((where, words))
    return found


COMMANDS = documented_commands()


def repo_path(word: str) -> Path:
    """Return the repository file a documented path names (installed share = repository)."""
    return REPO / word.replace('{share}/', '').replace('src/fabrik_ros/', '')


def message_class(name: str) -> type:
    """Return the Python class of 'pkg/msg/Type' or 'pkg/srv/Type'."""
    package, kind, type_name = name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), type_name)


def fill(message: object, values: dict, where: str) -> None:
    """Set a message's fields from a YAML mapping as ros2cli does; unknown fields fail."""
    for field, value in (values or {}).items():
        assert hasattr(message, field), f'{where}: {type(message).__name__} has no {field}'
        if isinstance(value, dict):
            fill(getattr(message, field), value, where)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            kind = type(message).get_fields_and_field_types()[field]  # sequence<pkg/Type>
            package, name = kind[kind.index('<') + 1:-1].split('/')
            items = [message_class(f'{package}/msg/{name}')() for _ in value]
            for item, item_values in zip(items, value):
                fill(item, item_values, where)
            setattr(message, field, items)
        else:
            current = getattr(message, field)
            setattr(message, field, float(value) if isinstance(current, float) else value)


def declared(name: str) -> bool:
    """Tell whether a node declares parameter `name` (fixed ones, or per chain)."""
    return (name in NODE_PARAMETERS or name in CHAIN_PARAMETERS or name in SIM_PARAMETERS
            or name == 'sim.initial_positions' or name == 'command_joints'
            or name.startswith(('joint_limits.', 'effector_weights.', SCENE_PREFIX)))


def check_ros_args(words: list[str], where: str, installed: bool) -> None:
    """
    Check the --ros-args part of a node command: files exist, parameters are declared.

    installed: the ROS route, where the configs are in the package's share directory, not
    in the working directory (the venv route runs in the source tree).
    """
    for flag, value in zip(words, words[1:]):
        if flag == '--params-file':
            assert repo_path(value).is_file(), f'{where}: no file {value}'
            assert value.startswith('{share}/') == installed, \
                f'{where}: {value} is not where this route has its configs'
            load_config(repo_path(value))
        elif flag == '-p':
            assert declared(value.split(':=')[0]), f'{where}: undeclared parameter {value}'
        elif flag == '-r':
            assert ':=' in value, f'{where}: a remap is from:=to, got {value}'


def node_command(module: str, ros_args: list[str]) -> tuple[str, tuple[str, ...]]:
    """Return a node command as the module and its arguments, with repository paths."""
    return module, tuple(str(repo_path(word)) if word.endswith('.yaml') else word
                         for word in ros_args)


def check_venv_command(words: list[str], where: str, nodes: set) -> None:
    """Check a command behind scripts/ros_venv.sh; collect the nodes to run."""
    assert words[0] == 'python3', f'{where}: {words}'
    if words[1] == '-m' and words[2] == 'pytest':
        assert ' '.join(VENV + words) in (REPO / '.ci' / 'run').read_text(), \
            f'{where}: .ci/run does not run {words}'
    elif words[1] == '-m' and words[2] == 'pip':
        assert words[3:5] == ['install', '-r'] and (REPO / words[5]).is_file(), where
    elif words[1:3] == ['-m', 'fabrik_ros.demo'] and '--help' not in words:
        demo_arguments(words[3:])  # exits on an unknown or bad option
    elif words[1:3] == ['-m', 'fabrik_ros.demo']:
        shown = subprocess.run([sys.executable, *words[1:]], cwd=REPO, capture_output=True,
                               text=True, timeout=START_TIMEOUT, check=True).stdout
        assert shown.startswith('usage: python3 -m fabrik_ros.demo'), shown
    elif words[1:3] == ['-m', 'fabrik_ros.render']:
        assert words[3].endswith('.npz') and words[4] == '-o', f'{where}: {words}'
    elif words[1] == '-m' and words[2] in ('fabrik_ros.ik_node', 'fabrik_ros.sim_arm'):
        assert words[3] == '--ros-args', f'{where}: {words}'
        check_ros_args(words[4:], where, installed=False)
        nodes.add(node_command(words[2].split('.')[1], words[4:]))
    else:
        script = REPO / words[1]
        assert script.suffix == '.py' and script.parent.name == 'bench', f'{where}: {words}'
        options = set(re.findall(r"add_argument\('(--[\w-]+)'", script.read_text()))
        flags = {word for word in words[2:] if word.startswith('--')}
        assert flags <= options, f'{where}: {script.name} has no {flags - options}'


def check_launch(words: list[str], where: str) -> None:
    """Check a ros2 launch command: its file, declared arguments and config files."""
    assert words[0] == 'fabrik_ros', where
    launch_file = REPO / 'launch' / words[1]
    source = launch_file.read_text()
    arguments = set(re.findall(r"DeclareLaunchArgument\(\s*'(\w+)'", source))
    for word in words[2:]:
        name, value = word.split(':=')
        assert name in arguments, f'{where}: {launch_file.name} declares no {name}'
        if name in ('config', 'params'):
            for file in filter(None, value.split(',')):
                assert (REPO / 'config' / file).is_file(), f'{where}: no config/{file}'
        if name in ('rviz', 'sim'):
            assert value in ('true', 'false'), where


def check_ros2(words: list[str], where: str, nodes: set) -> None:
    """Check a ros2 command against what the package declares; collect the nodes to run."""
    verb, rest = words[1], words[2:]
    if verb == 'run':
        assert rest[0] == 'fabrik_ros' and f"'{rest[1]} = fabrik_ros." in \
            (REPO / 'setup.py').read_text(), f'{where}: no executable {rest[1]}'
        assert rest[2] == '--ros-args', where
        check_ros_args(rest[3:], where, installed=True)
        nodes.add(node_command(rest[1], rest[3:]))
    elif verb == 'launch':
        check_launch(rest, where)
    elif verb == 'topic' and rest[0] == 'pub':
        topic, type_name, values = [word for word in rest[1:] if word != '--once'][-3:]
        assert TARGET_TOPICS.get(topic) == type_name, f'{where}: {topic} takes no {type_name}'
        fill(message_class(type_name)(), yaml.safe_load(values), where)
    elif verb == 'topic' and rest[0] == 'echo':
        name = rest[-1].split('/')[-1]
        assert re.search(rf"'(~/|/)?{name}'", SOURCES), f'{where}: nobody publishes {rest[-1]}'
    elif verb == 'param':
        assert rest[:2] == ['set', '/ik_node'] and rest[2] in NODE_PARAMETERS, where
        default = NODE_PARAMETERS[rest[2]][0]
        assert isinstance(yaml.safe_load(rest[3]), type(default)), f'{where}: {rest[3]}'
    elif verb == 'service':
        assert rest[0] == 'call' and SERVICES.get(rest[1]) == rest[2], where
        fill(message_class(rest[2]).Request(), yaml.safe_load(rest[3]) if rest[3:] else {},
             where)
    else:
        assert rest == ['prefix', '--share', 'fabrik_ros'] and verb == 'pkg', f'{where}: {words}'


def wait_for_log(process: NodeProcess, text: str) -> bool:
    """Wait until the process has logged `text` (True), died or START_TIMEOUT passed."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.running():
        if text in process.log():
            return True
        time.sleep(0.1)  # polling a log file: nothing to wait on
    return text in process.log()


def test_documents_have_commands() -> None:
    """The documents hold the commands this file checks (a parse that found none is wrong)."""
    assert len(COMMANDS) > 30
    readme = (REPO / 'README.md').read_text()
    assert len(readme.splitlines()) <= 300
    assert 'bash scripts/ros_venv.sh python3 -m pytest -n 2' in readme


@pytest.mark.parametrize('where, words', COMMANDS, ids=[' '.join(w)[:60] for _, w in COMMANDS])
def test_command_is_well_formed(where: str, words: list[str]) -> None:
    """Every command names things that exist: files, executables, arguments, fields."""
    nodes: set = set()
    if words[:2] == VENV:
        check_venv_command(words[2:], where, nodes)
    elif words[0] == 'ros2':
        check_ros2(words, where, nodes)
    elif words[0] == 'launch_test':
        assert repo_path(words[1]).is_file(), f'{where}: no {words[1]}'
    else:
        assert words[0] in SETUP_COMMANDS, f'{where}: a command of unknown kind: {words}'


def test_documented_nodes_start(tmp_path: Path) -> None:
    """Every node command of the documents starts its node, which loads the chain."""
    nodes: set = set()
    for where, words in COMMANDS:
        if words[:2] == VENV:
            check_venv_command(words[2:], where, nodes)
        elif words[:2] == ['ros2', 'run']:
            check_ros2(words, where, nodes)
    assert {module for module, _ in nodes} == {'ik_node', 'sim_arm'}
    started = [NodeProcess(module, list(args), tmp_path / f'{index}.log', env=dict(os.environ))
               for index, (module, args) in enumerate(sorted(nodes))]
    try:
        for process in started:
            assert wait_for_log(process, READY[process.module]), process.log_tail()
    finally:
        codes = [process.stop() for process in started]
    assert codes == [0] * len(started), [process.log_tail() for process in started]


@pytest.mark.parametrize('where, text', list(blocks('python')))
def test_python_block_runs(where: str, text: str, monkeypatch, capsys) -> None:
    """Each Python block runs from the repository root as written."""
    monkeypatch.chdir(REPO)
    exec(compile(text, where, 'exec'), {})  # noqa: S102 (the documents' own examples)


@pytest.mark.parametrize('where, text', list(blocks('yaml')))
def test_yaml_block_declares_known_parameters(where: str, text: str, tmp_path: Path) -> None:
    """Each parameters block names declared parameters; a shipped file's copy matches it."""
    block = tmp_path / 'block.yaml'
    block.write_text(text)
    parameters = load_config(block)  # flattened as the nodes read it
    assert all(declared(name) for name in parameters), \
        [name for name in parameters if not declared(name)]
    for shipped in (REPO / 'config').rglob('*.yaml'):
        if load_config(shipped).keys() == parameters.keys():
            assert load_config(shipped) == parameters, \
                f'{where} differs from {shipped.relative_to(REPO)}'


def test_shipped_configs_build_their_robots() -> None:
    """Each config and overlay the documents name loads; the configs build a chain."""
    for path in sorted((REPO / 'config').rglob('*.yaml')):
        parameters = load_config(path)
        if path.parent.name == 'config':
            assert chain_from_parameters(parameters, REPO) is not None, path
        assert all(declared(name) for name in parameters), path


def test_every_node_parameter_has_a_row_with_its_default() -> None:
    """docs/ik_node.md's parameter tables list each parameter ik_node declares, default too."""
    rows = dict(re.findall(r'^\| `([a-z_]+)` \| ([^|]*) \|',
                           (REPO / 'docs' / 'ik_node.md').read_text(), re.MULTILINE))
    missing = [name for name in NODE_PARAMETERS if name not in rows]
    assert not missing, f'parameters without a row in docs/ik_node.md: {missing}'
    for name, (default, _) in NODE_PARAMETERS.items():
        if isinstance(default, float):
            written = rows[name].strip().strip('`')
            assert float(written) == default, f'{name}: documented {written}, declared {default}'
