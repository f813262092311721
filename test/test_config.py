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

"""Specification of config loading: ROS 2 parameter files in, chains out."""

import math
from pathlib import Path

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.config import (chain_from_parameters, CHAIN_PARAMETERS, load_config,
                               robot_description)
import numpy as np
import pytest

SHARE = Path(__file__).resolve().parents[1]
CONFIGS = sorted((SHARE / 'config').glob('*.yaml'))
ARM = {'robot_description_file': 'urdf/arm.urdf', 'base_link': 'base_link',
       'tip_links': ['tool0']}
TENTACLE = {'base_link': 'base_link', 'tip_links': ['tip'], 'chain.segments': 4,
            'chain.segment_length': [0.1], 'chain.joint_type': 'two_axis'}


def write(tmp_path: Path, text: str) -> Path:
    """Write a parameter file and return its path."""
    path = tmp_path / 'params.yaml'
    path.write_text(text)
    return path


class TestShippedConfigs:
    """Every config/*.yaml builds its chain and a URDF for robot_state_publisher."""

    def test_the_expected_configs_ship(self):
        assert [path.name for path in CONFIGS] == ['arm.yaml', 'dual_arm.yaml', 'spider.yaml',
                                                   'tentacle.yaml']

    @pytest.mark.parametrize('path', CONFIGS, ids=lambda path: path.stem)
    def test_builds_a_chain_with_its_tips_and_a_matching_urdf(self, path):
        params = load_config(path)
        chain = chain_from_parameters(params, SHARE)
        assert chain.base_link == params['base_link']
        assert chain.effector_names == list(params['tip_links'])
        assert params['tolerance'] > 0.0 and params['max_iterations'] > 0
        shown = Chain.from_urdf(robot_description(params, SHARE), chain.base_link,
                                chain.effector_names)
        assert shown.joint_names == chain.joint_names
        q = chain.clip(np.random.default_rng(3).uniform(-1.0, 1.0, chain.dof))
        np.testing.assert_allclose(shown.effector_positions(q), chain.effector_positions(q),
                                   atol=1e-12)

    @pytest.mark.parametrize('path', CONFIGS, ids=lambda path: path.stem)
    def test_chain_values_have_the_ros_types_the_node_declares(self, path):
        # The node declares chain.* with CHAIN_PARAMETERS' defaults; ROS parameters keep
        # their declared type, so a YAML value of another type would be refused at startup.
        parameter = pytest.importorskip('rclpy.parameter').Parameter
        for name, value in load_config(path).items():
            if name in CHAIN_PARAMETERS:
                declared = parameter(name, value=CHAIN_PARAMETERS[name][0]).type_
                assert parameter(name, value=value).type_ == declared, name

    def test_tentacle_is_twelve_two_axis_segments_pointing_up(self):
        chain = chain_from_parameters(load_config(SHARE / 'config' / 'tentacle.yaml'), SHARE)
        assert chain.dof == 24
        assert chain.joint_names[:2] == ['seg1_yaw', 'seg1_pitch']
        np.testing.assert_allclose(chain.tip_position(chain.neutral()), [0, 0, 0.96],
                                   atol=1e-12)

    def test_spider_has_six_legs_of_three_joints(self):
        chain = chain_from_parameters(load_config(SHARE / 'config' / 'spider.yaml'), SHARE)
        assert chain.dof == 18
        assert chain.joint_names[:3] == ['leg1_seg1_yaw', 'leg1_seg2_pitch', 'leg1_seg3_pitch']
        np.testing.assert_array_equal(chain.upper[:3], [0.8, 1.4, 2.2])
        feet = chain.effector_positions(chain.neutral())
        np.testing.assert_allclose(np.linalg.norm(feet, axis=1), 0.12 + 0.3)


class TestLoadConfig:
    """load_config flattens ros__parameters like rclpy: nested keys joined by '.'."""

    def test_wildcard_section_is_flattened(self, tmp_path):
        path = write(tmp_path, '/**:\n  ros__parameters:\n    a: 1\n'
                               '    chain:\n      segments: 3\n      mount: {x: 0.5}\n')
        assert load_config(path) == {'a': 1, 'chain.segments': 3, 'chain.mount.x': 0.5}

    def test_node_section_overrides_the_wildcard(self, tmp_path):
        path = write(tmp_path, '/**:\n  ros__parameters: {a: 1, b: 2}\n'
                               'ik_node:\n  ros__parameters: {b: 3}\n'
                               'other:\n  ros__parameters: {c: 4}\n')
        assert load_config(path, 'ik_node') == {'a': 1, 'b': 3}
        assert load_config(path) == {'a': 1, 'b': 2}

    def test_a_single_named_section_is_used(self, tmp_path):
        path = write(tmp_path, 'ik_node:\n  ros__parameters: {a: 1}\n')
        assert load_config(path) == {'a': 1}

    @pytest.mark.parametrize('text, message', [
        ('', 'expected a mapping of node names'),
        ('a:\n  ros__parameters: {}\nb:\n  ros__parameters: {}\n',
         r"no section for \['/\*\*'\]; sections: \['a', 'b'\]"),
        ('/**:\n  parameters: {a: 1}\n', 'a node section has no ros__parameters mapping'),
    ])
    def test_bad_files(self, tmp_path, text, message):
        with pytest.raises(ValueError, match=message):
            load_config(write(tmp_path, text))


class TestChainFromParameters:
    """chain_from_parameters picks the URDF or the plain description, with clear errors."""

    def test_urdf_file_relative_to_the_share_dir_or_absolute(self):
        assert chain_from_parameters(ARM, SHARE).dof == 6
        absolute = {**ARM, 'robot_description_file': str(SHARE / 'urdf' / 'arm.urdf')}
        assert chain_from_parameters(absolute, '/nonexistent').dof == 6

    def test_plain_description_uses_the_defaults_for_missing_keys(self):
        chain = chain_from_parameters(TENTACLE, SHARE)
        np.testing.assert_array_equal(chain.upper, [math.pi / 2] * 8)
        np.testing.assert_array_equal(chain.max_velocity, [2.0] * 8)

    def test_joint_type_may_list_axes_per_segment(self):
        chain = chain_from_parameters({**TENTACLE, 'chain.joint_type': 'zy y'}, SHARE)
        assert chain.joint_names == ['seg1_yaw', 'seg1_pitch', 'seg2_pitch', 'seg3_yaw',
                                     'seg3_pitch', 'seg4_pitch']

    def test_robot_description_of_a_missing_file_names_it(self):
        with pytest.raises(ValueError, match='robot_description_file: cannot read .*none.urdf'):
            robot_description({**ARM, 'robot_description_file': 'none.urdf'}, SHARE)

    def test_no_chain_described_gives_none(self):
        # The node then waits for the robot_description topic.
        assert chain_from_parameters({'base_link': 'a', 'chain.segments': 0}, SHARE) is None
        with pytest.raises(ValueError, match='no chain configured'):
            robot_description({'base_link': 'a'}, SHARE)

    @pytest.mark.parametrize('params, message', [
        ({**ARM, 'chain.segments': 3}, 'either robot_description_file or chain.segments'),
        ({**ARM, 'base_link': ''}, 'missing parameter base_link'),
        ({**TENTACLE, 'tip_links': []}, 'tip_links must be a non-empty list of names'),
        ({**TENTACLE, 'tip_links': ['a', 'b']}, r"one tip link, got \['a', 'b'\]"),
        ({**TENTACLE, 'chain.segment': 3}, r"unknown parameters \['chain.segment'\]"),
        ({**TENTACLE, 'chain.joint_type': 'ball'},
         "chain.joint_type 'ball': expected 'hinge', 'two_axis' or axis letters"),
        ({**ARM, 'robot_description_file': 'urdf/none.urdf'},
         'robot_description_file: cannot read .*none.urdf'),
    ])
    def test_bad_parameters(self, params, message):
        with pytest.raises(ValueError, match=message):
            chain_from_parameters(params, SHARE)

    def test_model_problems_raise_chain_error(self):
        with pytest.raises(ChainError, match="unknown link 'tool9'"):
            chain_from_parameters({**ARM, 'tip_links': ['tool9']}, SHARE)
        with pytest.raises(ChainError, match='segment lengths must be positive'):
            chain_from_parameters({**TENTACLE, 'chain.segment_length': [0.0]}, SHARE)


class TestJointLimitOverrides:
    """joint_limits.<joint>.* narrow the model's position and velocity limits."""

    def test_overrides_narrow_limits_including_continuous_joints(self):
        chain = chain_from_parameters({**ARM, 'joint_limits.tool_roll.min_position': -3.0,
                                       'joint_limits.tool_roll.max_position': 3.0,
                                       'joint_limits.base_yaw.max_position': 1.0}, SHARE)
        np.testing.assert_array_equal(chain.lower[[0, 5]], [-2.967, -3.0])
        np.testing.assert_array_equal(chain.upper[[0, 5]], [1.0, 3.0])

    def test_velocity_overrides_narrow_and_acceleration_is_left_to_the_node(self):
        chain = chain_from_parameters({**ARM, 'joint_limits.base_yaw.max_velocity': 0.5,
                                       'joint_limits.base_yaw.max_acceleration': 2.0}, SHARE)
        assert chain.max_velocity[0] == 0.5
        model = chain_from_parameters(ARM, SHARE)
        np.testing.assert_array_equal(chain.max_velocity[1:], model.max_velocity[1:])

    def test_overrides_apply_to_plain_chains_and_their_urdf(self):
        params = {**TENTACLE, 'joint_limits.seg2_pitch.min_position': -0.25}
        assert chain_from_parameters(params, SHARE).lower[3] == -0.25
        assert 'lower="-0.25"' in robot_description(params, SHARE)

    @pytest.mark.parametrize('key, value, message', [
        ('joint_limits.elbow.min_position', 0.0, "unknown joint 'elbow'; joints: "),
        ('joint_limits.elbow_pitch.lower', 0.0, 'unknown field, expected one of'),
        ('joint_limits.elbow_pitch.min_position', math.nan, 'is NaN'),
        ('joint_limits.elbow_pitch.min_position', 'low', 'must be a number'),
        ('joint_limits.elbow_pitch.max_position', 3.0, r'elbow_pitch \[-2.53, 3\] would widen'),
        ('joint_limits.elbow_pitch.min_position', 2.6, 'lower limit 2.6 > upper limit 2.53'),
        ('joint_limits.elbow_pitch.max_velocity', 99.0, 'would exceed the model limit'),
    ])
    def test_bad_overrides(self, key, value, message):
        with pytest.raises(ValueError, match=message):
            chain_from_parameters({**ARM, key: value}, SHARE)
