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
Ctrl-C ends the nodes cleanly, however many arrive.

`ros2 launch` forwards the terminal's SIGINT to each node and then sends its own, which may
land while the node is being destroyed. Signals need a process of their own: these run the
nodes as child processes.
"""

import signal
import time

import pytest

START_TIMEOUT = 20.0  # seconds for a node to load its chain and say so
READY = {'ik_node': 'joints', 'sim_arm': 'simulating'}  # in the node's start-up log line


def wait_until_ready(process, module: str) -> None:
    """Wait until the node has logged that it runs."""
    deadline = time.monotonic() + START_TIMEOUT
    while READY[module] not in process.log():
        assert process.running() and time.monotonic() < deadline, process.log()
        time.sleep(0.05)


@pytest.mark.parametrize('module, gap', [('ik_node', 0.0), ('ik_node', 0.003),
                                         ('ik_node', 0.03), ('sim_arm', 0.003)])
def test_repeated_sigints_end_the_node_with_exit_code_0_and_no_traceback(
        start_node, module, gap):
    process = start_node(module, params='config/arm.yaml')
    wait_until_ready(process, module)
    for _ in range(3):  # the terminal's, launch's, and one more
        process.popen.send_signal(signal.SIGINT)
        time.sleep(gap)
    assert process.popen.wait(timeout=10.0) == 0, process.log()
    assert 'Traceback' not in process.log() and 'KeyboardInterrupt' not in process.log()
