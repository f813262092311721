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


"""A solve's inputs checked and laid out: targets, seeds, orientations, weights."""

from __future__ import annotations

from collections.abc import Mapping
import math

import numpy as np

from .limits import _clipped
from .model import _Tree
from .points import _fit_without, _State
from .rotations import _ORIGIN
from .validation import _finite_point, _is_mapping, _point, _unit_rotation, FLOAT64, \
    quaternion_rotation


class _Inputs:
    """IkSolver's input checks: targets, seeds, orientations and weights."""

    # ------------------------------------------------------------------ input

    def _weights(self, weights: Mapping[str, float]) -> dict[str, float]:
        """Return the given effector weights, checked; ValueError names a bad one."""
        checked = {}
        for name, weight in weights.items():
            if name not in self._effector_index:
                raise ValueError(f'effector_weights: unknown effector {name!r}; the chain '
                                 f'has {self.chain.effector_names}')
            if isinstance(weight, bool) or not (isinstance(weight, (int, float))
                                                and math.isfinite(weight) and weight > 0.0):
                raise ValueError(f'effector_weights: the weight of {name!r} must be a '
                                 f'positive number, got {weight!r}')
            checked[name] = float(weight)
        return checked

    def _per_effector(self, value: object, what: str, check, default: object) -> list:
        """
        Return one checked value per effector from a value for all or a name mapping.

        Effectors a mapping leaves out get `default`.
        """
        names = self.chain.effector_names
        if not isinstance(value, Mapping):
            return [check(value, what)] * len(names)
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f'{what}: unknown effectors {sorted(unknown)}; the chain has '
                             f'{names}')
        return [check(value[name] if name in value else default, f'{what} of {name!r}')
                for name in names]

    def _orientations(self, orientation: object,
                      targets: list[tuple[float, float, float] | None]
                      ) -> list[tuple[float, ...] | None]:
        """Return per effector its target rotation (9-tuple) or None; ValueError if bad."""
        m = len(targets)
        if m == 1 and type(orientation) is np.ndarray and orientation.dtype is FLOAT64 \
                and orientation.shape == (4,):     # the common case, without the detours
            return [_unit_rotation(orientation.tolist(), 'orientation')]
        names = self.chain.effector_names
        rotations: list[tuple[float, ...] | None] = [None] * m
        if _is_mapping(orientation):
            for name, value in orientation.items():
                if name not in self._effector_index:
                    raise ValueError(f'unknown effector {name!r} in orientation; the chain has '
                                     f'{names}')
                rotations[self._effector_index[name]] = quaternion_rotation(
                    value, f'orientation for {name!r}')
        else:
            array = np.asarray(orientation, dtype=float)
            if array.shape == (4,) and m == 1:
                rotations[0] = _unit_rotation(array.tolist(), 'orientation')
            elif array.shape == (m, 4):
                for index, row in enumerate(array.tolist()):
                    if not all(map(math.isnan, row)):
                        rotations[index] = _unit_rotation(
                            row, f'orientation for {names[index]!r}')
            else:
                raise ValueError(
                    f'orientation has shape {array.shape}; expected a quaternion (x, y, z, w) '
                    f'for a single effector, ({m}, 4) with NaN rows, or a mapping of effector '
                    f'names {names} to quaternions')
        if m > 1:   # (one effector has a target: _targets saw to it)
            for index, (rotation, target) in enumerate(zip(rotations, targets)):
                if rotation is not None and target is None:
                    raise ValueError(f'effector {names[index]!r} has an orientation but no '
                                     'position target')
        return rotations

    def _pose_tree(self, modes: tuple[str, ...]) -> tuple[_Tree, list]:
        """
        Return the tree with marker points for these per-effector modes, and its fits.

        'full' adds two points on the tool's x and y axes, 'axis' one on the tool axis, at
        orientation_scale metres from the tool point: fitted onto the target frame's points,
        they carry the orientation through FABRIK's passes. The markers of a full frame whose
        tool has six joints of its own (moving no other tool: an arm) are fitted only by the
        joints at its tool's joint point, which turn the tool about it: the tool's rigid body
        already places that point (_Orientations.placed), and the joints above fit it with
        the positions (fitting the markers too, an arm's shoulder and elbow traded position for
        orientation: cold full poses took longer and restarted more). With fewer, all
        of its joints must orient it (an arm of five on a torso another arm holds).
        """
        if modes not in self._pose_trees:
            scale = self.orientation_scale
            markers = [[] if mode == 'position' else
                       [np.array(axis) * scale] if mode == 'axis' else
                       [np.array([scale, 0.0, 0.0]), np.array([0.0, scale, 0.0])]
                       for mode, axis in zip(modes, self.tool_axes)]
            tree = _Tree(self.chain, markers)
            fits = tree.next_fit
            if self.fit == 'chain':
                pivots = {}     # a full frame's marker points -> the point its tool turns about
                moves = self.chain.moves_effector
                for index, mode in enumerate(modes):
                    parent = tree.effectors[index].parent
                    own = moves[index] & ~np.delete(moves, index, axis=0).any(axis=0)
                    if mode == 'full' and parent >= 0 and own.sum() >= 6:
                        for marker in tree.markers[index]:
                            pivots[tree.effectors[marker].point] = tree.joints[parent].point
                fits = [_fit_without(fit, {marker for marker, pivot in pivots.items()
                                           if pivot != joint.point})
                        for fit, joint in zip(tree.whole_fit, tree.joints)]
            self._pose_trees[modes] = (tree, fits)
        return self._pose_trees[modes]

    def _targets(self, target: object) -> list[tuple[float, float, float] | None]:
        """Return per effector its target (metres) or None; ValueError on bad input."""
        m = len(self._tree.effectors)
        if m == 1 and type(target) is np.ndarray and target.dtype is FLOAT64 \
                and target.shape == (3,):      # the common case, without the detours
            return [_finite_point(target.tolist(), 'target')]
        names = self.chain.effector_names
        rows: list[tuple[float, float, float] | None] = [None] * m
        if _is_mapping(target):
            for name, value in target.items():
                if name not in self._effector_index:
                    raise ValueError(f'unknown effector {name!r}; the chain has {names}')
                rows[self._effector_index[name]] = _point(value, f'target for {name!r}')
        else:
            array = np.asarray(target, dtype=float)
            if array.shape == (3,) and m == 1:
                rows[0] = _finite_point(array.tolist(), 'target')
                return rows
            elif array.shape == (m, 3):
                for index, row in enumerate(array.tolist()):
                    if not all(map(math.isnan, row)):
                        rows[index] = _finite_point(row, f'target for {names[index]!r}')
            else:
                raise ValueError(
                    f'target has shape {array.shape}; expected (3,) for a single effector, '
                    f'({m}, 3) with NaN rows for effectors without a target, or a mapping '
                    f'of effector names {names} to points')
        if rows.count(None) == m:
            raise ValueError(f'no effector has a target (effectors: {names})')
        return rows

    def _start(self, seed: object, tree: _Tree) -> _State:
        """
        Return the state of the seed clipped into the limits; ValueError on a wrong or NaN seed.

        The neutral pose's state is the tree's (seed None or equal to it), and a seed equal
        to the last answer (tracking: each solve seeded with the previous one) reuses that
        answer's state, which is within the limits and whose forward kinematics is known.
        """
        if seed is None:
            return tree.neutral
        # An array of floats is used as it is (asarray's dtype=float: a no-op, skipped).
        array = seed if type(seed) is np.ndarray and seed.dtype is FLOAT64 \
            else np.asarray(seed, dtype=float)
        values = array.tolist()
        last_tree, last = self._last
        if last_tree is tree and values == last.q:  # tracking: the last answer (so shaped)
            return last
        if array.shape != (len(self.limits.lower),):
            raise ValueError(f'seed has shape {array.shape}, expected ({len(self.limits.lower)},) '
                             f'for joints {self.chain.joint_names}')
        if values == tree.neutral.q:
            return tree.neutral
        if not all(map(math.isfinite, values)):
            raise ValueError(f'seed is not finite: {values}')
        limits = self.limits
        return tree.sweep(_clipped(values, limits.lower, limits.upper), _ORIGIN)
