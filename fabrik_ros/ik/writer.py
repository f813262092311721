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


"""Writing straight-line Python: constants folded, terms that vanish dropped."""

from __future__ import annotations

import numpy as np

from .tuning import SNAP


def _floats(array: np.ndarray) -> tuple[float, ...]:
    """
    Return a numpy array's entries, row-major, as a tuple of floats.

    Entries within SNAP of 0 or +-1 become exactly that (rotations by multiples of 90
    degrees leave cos(pi/2) = 6e-17 behind): the compiled sweep then drops or simplifies
    their terms.
    """
    values = []
    for value in np.ravel(array).tolist():
        exact = float(round(value))
        values.append(exact if abs(exact) <= 1.0 and abs(value - exact) < SNAP else value)
    return tuple(values)


class _SweepWriter:
    """
    Writes a chain's root-to-tip sweep as straight-line Python with its constants folded.

    A loop over the joints would unpack every constant and multiply by every zero and one
    of the mostly axis-aligned joint frames at each call; the written code computes only
    the terms that are not constant, in local variables (faster in CPython). Values
    are floats (constants) or source atoms: a local's name, possibly negated. The source
    is made of numbers and generated names only.
    """

    def __init__(self, header: str) -> None:
        self.lines = [header]
        self.count = 0

    def value(self, terms: list[tuple[float, float | str]]) -> float | str:
        """Return sum(coefficient * value) as a constant, an atom, or a new local's name."""
        constant = 0.0
        parts = []
        for coefficient, value in terms:
            if isinstance(value, float):
                constant += coefficient * value
            elif coefficient:
                negated = value.startswith('-')
                parts.append((-coefficient if negated else coefficient,
                              value[1:] if negated else value))
        if not parts:
            return constant
        if not constant and len(parts) == 1 and parts[0][0] in (1.0, -1.0) \
                and ' ' not in parts[0][1]:
            coefficient, atom = parts[0]
            return atom if coefficient == 1.0 else _negated(atom)
        source = ''.join(f' {"-" if coefficient < 0.0 else "+"} '
                         f'{"" if abs(coefficient) == 1.0 else f"{abs(coefficient)!r} * "}{atom}'
                         for coefficient, atom in parts)
        if constant:
            source += f' + {constant!r}'
        return self.assign(source[3:] if source[1] == '+' else '-' + source[3:])

    def assign(self, source: str) -> str:
        """Emit `local = source`; return the local's name."""
        name = f'v{self.count}'
        self.count += 1
        self.lines.append(f'    {name} = {source}')
        return name


def _negated(atom: str) -> str:
    """Return the source of -atom for a name or a negated name."""
    return atom[1:] if atom.startswith('-') else '-' + atom


def _times(factor: str, value: float | str, sign: float = 1.0) -> tuple[float, float | str]:
    """Return the term sign * factor * value for _SweepWriter.value (factor: a name)."""
    if isinstance(value, float):
        return sign * value, factor
    if value.startswith('-'):
        return -sign, f'{factor} * {value[1:]}'
    return sign, f'{factor} * {value}'


def _source(values: list[float | str]) -> str:
    """Return the source of a tuple of constants and atoms."""
    return '(' + ', '.join(v if isinstance(v, str) else repr(v) for v in values) + ')'
