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
Shared test setup: loopback-only DDS, a ROS domain per pytest process, node fixtures.

pytest imports this file before any test module, so the environment below is in place
before anything imports rclpy, and the node processes that tests start inherit it.

A test that needs a package that may be missing (the ament linters) skips inside the test,
never at import: launch_testing's pytest plugin imports every test module of the folder
while collecting, and a skip raised there hides all of them.
"""

from collections.abc import Callable, Iterator, Mapping
import os
from pathlib import Path
import signal
from typing import Any

from fabrik_ros.node_process import NodeProcess
from hypothesis import HealthCheck, settings
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]

# DDS discovery never leaves this machine.
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ['ROS_LOCALHOST_ONLY'] = '1'
# Parallel pytest runs (two developers, CI next to a demo) must not see each other's nodes:
# each process gets its own domain in 1..100 unless the caller chose one, and each
# pytest-xdist worker (gw0, gw1, ...) the next ones after it.
os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 100 + 1))
_WORKER = os.environ.get('PYTEST_XDIST_WORKER', '')
if _WORKER.startswith('gw'):
    os.environ['ROS_DOMAIN_ID'] = str(
        (int(os.environ['ROS_DOMAIN_ID']) + int(_WORKER[2:])) % 100 + 1)
# A shell starts background commands with SIGINT ignored, and children inherit that: nodes
# started by tests would then ignore the Ctrl-C that stops them. Restore the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# CI replays the same examples every run, so a red CI means a changed behaviour, not a
# luckier draw; local runs keep exploring new examples (and keep the ones that failed).
# Neither fails on how long drawing examples took: that measures the machine's load.
_UNTIMED = [HealthCheck.too_slow]
settings.register_profile('local', suppress_health_check=_UNTIMED)
settings.register_profile('ci', derandomize=True, print_blob=True,
                          suppress_health_check=_UNTIMED)
settings.load_profile('ci' if os.environ.get('CI') else 'local')


def write_params_file(path: Path, parameters: Mapping[str, Any]) -> Path:
    """Write `parameters` as a ROS 2 parameters file that applies to every node name."""
    path.write_text(yaml.safe_dump({'/**': {'ros__parameters': dict(parameters)}}))
    return path


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[Callable[..., NodeProcess]]:
    """
    Start fabrik_ros node modules as separate processes; stop them all at teardown.

    Call it as ``start_node('ik_node', params=..., namespace='arm1',
    remap={'joint_states': 'joint_commands'})``. ``params`` is a parameters file path
    (e.g. ``config/arm.yaml``) or a mapping of parameter values; several of each may be
    given as a list, later ones override earlier ones. The child process inherits the
    loopback DDS settings and the domain of this test process; its output goes to a log file
    (``NodeProcess.log()``), which is printed when a test fails.
    """
    started: list[NodeProcess] = []

    def start(module: str,
              params: Path | str | Mapping[str, Any] | list | None = None,
              namespace: str | None = None,
              remap: Mapping[str, str] | None = None) -> NodeProcess:
        ros_args: list[str] = []
        sources = params if isinstance(params, list) else [params] if params else []
        for index, source in enumerate(sources):
            if isinstance(source, Mapping):
                source = write_params_file(
                    tmp_path / f'{module}_{len(started)}_params{index}.yaml', source)
            ros_args += ['--params-file', str(REPO_ROOT / source)]
        if namespace:
            ros_args += ['-r', f'__ns:=/{namespace.strip("/")}']
        for old, new in (remap or {}).items():
            ros_args += ['-r', f'{old}:={new}']
        log_dir = tmp_path / f'{module}_{len(started)}'
        log_dir.mkdir()
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            filter(None, [str(REPO_ROOT), env.get('PYTHONPATH')]))
        process = NodeProcess(module, ros_args, log_dir / 'output.log', env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
        # pytest shows captured output of failing tests only.
        print(f'--- {process.module} (exit {process.popen.returncode}) ---\n{process.log()}')


@pytest.fixture
def ros_context() -> Iterator[Any]:
    """Give an initialised rclpy Context, shut down after the test."""
    rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
    context = rclpy.context.Context()
    rclpy.init(context=context)
    try:
        yield context
    finally:
        context.try_shutdown()


@pytest.fixture
def make_node(ros_context: Any) -> Iterator[Callable[..., Any]]:
    """Build nodes (IkNode unless told) in this process with parameter overrides."""
    from fabrik_ros.ik_node import IkNode
    from rclpy.parameter import Parameter
    nodes = []

    def make(node_type: type = IkNode, namespace: str = '', **parameters: Any) -> Any:
        node = node_type(context=ros_context, namespace=namespace, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()
