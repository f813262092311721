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

"""The package's shape: modules of bounded size, the solver's layers, its public names."""

import ast
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parents[1] / 'fabrik_ros'
PACKAGE = SOURCES / 'ik'
MODULES = {path.stem: ast.parse(path.read_text()) for path in sorted(PACKAGE.glob('*.py'))}
EVERY_MODULE = sorted(str(path.relative_to(SOURCES)) for path in SOURCES.rglob('*.py'))


def runtime_imports(module: ast.Module) -> set[str]:
    """Return the package modules a module imports when it runs (not for type checking)."""
    imported = set()
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            imported.add(node.module)
    return imported


def test_the_modules_import_each_other_without_a_circle():
    graph = {name: runtime_imports(module) for name, module in MODULES.items()}
    assert all(graph[name] <= set(MODULES) for name in graph)
    done: set[str] = set()
    while len(done) < len(graph):
        ready = {name for name, needs in graph.items() if name not in done and needs <= done}
        assert ready, f'import circle among {sorted(set(graph) - done)}'
        done |= ready


@pytest.mark.parametrize('name', EVERY_MODULE)
def test_modules_classes_and_functions_stay_within_their_sizes(name):
    module = ast.parse((SOURCES / name).read_text())
    assert module.body[-1].end_lineno <= 600
    for node in ast.walk(module):
        size = getattr(node, 'end_lineno', 0) - getattr(node, 'lineno', 0) + 1
        if isinstance(node, ast.ClassDef):
            assert size <= 300, f'{name}.{node.name}: {size} lines'
        elif isinstance(node, ast.FunctionDef):
            assert size <= 80, f'{name}.{node.name}: {size} lines'


def test_the_public_names_are_importable_from_the_package():
    from fabrik_ros.ik import (FIT_MODES, HELD_WEIGHT, IkResult, IkSolver, MAX_COORDINATE_M,
                               ORIENTATION_MODES, quaternion_rotation, ROOT_MODES)
    assert IkSolver.__module__ == 'fabrik_ros.ik.solver'
    assert IkResult.__module__ == 'fabrik_ros.ik.result'
    assert ROOT_MODES == ('pinned', 'free') and 'chain' in FIT_MODES
    assert ORIENTATION_MODES == ('full', 'axis', 'position')
    assert HELD_WEIGHT > 1.0 and MAX_COORDINATE_M > 0.0
    assert len(quaternion_rotation((0.0, 0.0, 0.0, 1.0))) == 9
