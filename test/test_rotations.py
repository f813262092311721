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


"""Specification of the rotation conversions: roll/pitch/yaw, quaternions, axis-angle."""

import math

from fabrik_ros.model.rotations import (quaternion_from_rotation, rotation_about_axis,
                                        rotation_from_quaternion, rotation_from_rpy,
                                        rpy_from_rotation)
from hypothesis import given, strategies as st
from model_cases import angles, rpys, X, Y, Z
import numpy as np
import pytest


class TestRotations:
    """URDF roll/pitch/yaw is R = Rz(yaw) @ Ry(pitch) @ Rx(roll), about fixed axes."""

    def test_single_axis_rotations_turn_the_right_way(self):
        np.testing.assert_allclose(rotation_from_rpy([0, 0, math.pi / 2]) @ X, Y, atol=1e-15)
        np.testing.assert_allclose(rotation_from_rpy([math.pi / 2, 0, 0]) @ Y, Z, atol=1e-15)
        np.testing.assert_allclose(rotation_from_rpy([0, math.pi / 2, 0]) @ Z, X, atol=1e-15)

    def test_roll_then_pitch_then_yaw_about_fixed_axes(self):
        # Roll 90 deg takes y to z; pitch 90 deg takes that z to x; yaw 90 deg takes x to y.
        rotation = rotation_from_rpy([math.pi / 2, math.pi / 2, math.pi / 2])
        np.testing.assert_allclose(rotation @ Y, Y, atol=1e-15)
        np.testing.assert_allclose(rotation @ X, -Z, atol=1e-15)

    @given(rpys)
    def test_matches_composition_of_axis_rotations(self, rpy):
        roll, pitch, yaw = rpy
        expected = (rotation_about_axis(Z, yaw) @ rotation_about_axis(Y, pitch)
                    @ rotation_about_axis(X, roll))
        np.testing.assert_allclose(rotation_from_rpy(rpy), expected, atol=1e-12)

    @given(angles, st.one_of(angles, st.sampled_from([-1.0, 1.0]).flatmap(
        lambda sign: st.floats(-1e-9, 1e-9).map(lambda e: sign * math.pi / 2 + e))), angles)
    def test_rpy_from_rotation_inverts_it_at_and_near_gimbal_lock(self, roll, pitch, yaw):
        # A rotation built by products carries rounding noise, which must not be amplified
        # where yaw and roll become degenerate.
        rotation = (rotation_about_axis(Z, yaw) @ rotation_about_axis(Y, pitch)
                    @ rotation_about_axis(X, roll))
        np.testing.assert_allclose(rotation_from_rpy(rpy_from_rotation(rotation)), rotation,
                                   atol=1e-14)


class TestQuaternions:
    """Quaternions are (x, y, z, w), ROS order, unit length with w >= 0."""

    @given(rpys)
    def test_quaternions_and_rotations_convert_both_ways(self, rpy):
        rotation = rotation_from_rpy(rpy)
        xyzw = quaternion_from_rotation(rotation)
        assert np.linalg.norm(xyzw) == pytest.approx(1.0) and xyzw[3] >= 0.0
        np.testing.assert_allclose(rotation_from_quaternion(xyzw), rotation, atol=1e-12)
