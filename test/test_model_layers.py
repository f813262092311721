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
The model's modules import downward only, so each reads alone and none can form a circle.

Imports are read from the source, those inside functions included. The collision package
sits beside the model: chain delegates to it, and it uses the model's lower floors only.
"""

import ast
from pathlib import Path
import sys

import pytest

MODEL = Path(__file__).resolve().parents[1] / 'fabrik_ros' / 'model'
COLLISION = MODEL.parent / 'collision'

# Each module of fabrik_ros/model and the model modules it may import, ground floor first.
BELOW = {
    'rotations': set(),
    'joints': set(),
    'coupling': {'joints'},
    'kinematics': {'joints'},
    'urdf_reader': {'joints', 'rotations'},
    'urdf_writer': {'joints', 'rotations'},
    'builders': {'joints', 'rotations'},
    'chain': {'builders', 'coupling', 'joints', 'kinematics', 'urdf_reader', 'urdf_writer'},
}


def imported_modules(name: str, package: Path = MODEL) -> set[str]:
    """Return every module that <package>/<name>.py imports, anywhere in its body."""
    tree = ast.parse((package / f'{name}.py').read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(node.module)
    return modules


def test_every_module_has_its_place():
    assert {path.stem for path in MODEL.glob('*.py')} - {'__init__'} == set(BELOW)


def test_the_places_are_floors_each_above_those_listed_before_it():
    names = list(BELOW)
    for floor, name in enumerate(names):
        assert BELOW[name] <= set(names[:floor])


@pytest.mark.parametrize('name', sorted(BELOW))
def test_a_module_imports_only_the_model_modules_below_it(name):
    model = {module.removeprefix('fabrik_ros.model.') for module in imported_modules(name)
             if module.startswith('fabrik_ros') and module != 'fabrik_ros.collision'}
    assert model <= BELOW[name]


@pytest.mark.parametrize('name', sorted(BELOW))
def test_the_model_needs_numpy_and_the_standard_library_only(name):
    outside = {module for module in imported_modules(name)
               if not module.startswith('fabrik_ros.model.')
               and module.split('.')[0] not in sys.stdlib_module_names | {'__future__'}}
    assert outside <= {'numpy'} | ({'fabrik_ros.collision'} if name == 'chain' else set())


@pytest.mark.parametrize('name', sorted(path.stem for path in COLLISION.glob('*.py')))
def test_collision_uses_the_model_below_chain_only(name):
    used = {module for module in imported_modules(name, COLLISION)
            if module.startswith('fabrik_ros.model')}
    assert used <= {'fabrik_ros.model.' + floor for floor in BELOW['builders'] | {'urdf_reader'}}
