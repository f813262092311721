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
Simulated arm: follows joint commands within its motion limits, publishes what it measures.

Try it (next to an ik_node that publishes its commands on joint_commands):
    ros2 run fabrik_ros sim_arm --ros-args --params-file config/arm.yaml
    ros2 topic echo joint_states

Topics: ``joint_commands`` (sensor_msgs/JointState, in) holds desired positions of the
independent joints, matched by joint name, so partial and reordered commands work;
``joint_states`` (sensor_msgs/JointState, out) holds the measured positions and velocities
of every joint, mimic joints included (robot_state_publisher needs them).
The chain (names, limits, velocity limits) comes from the same parameters as ik_node's.
Each joint moves like a drive with velocity and acceleration limits (fabrik_ros.motion):
a far or sudden command never makes it jump.
"""

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.config import chain_from_parameters, package_share_dir
from fabrik_ros.motion import MotionLimiter, MotionLimits
from fabrik_ros.node_main import run_node
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.node import Node
from sensor_msgs.msg import JointState

WARNING_THROTTLE = 2.0  # seconds between repeats of one warning


def _positive(description: str) -> ParameterDescriptor:
    return ParameterDescriptor(description=description, read_only=True,
                               floating_point_range=[FloatingPointRange(
                                   from_value=1e-3, to_value=1e6)])


# name -> (default, descriptor); under `sim.` so they share a params file with ik_node.
SIM_PARAMETERS = {
    'sim.rate': (100.0, _positive('Simulation and joint_states rate, Hz')),
    'sim.max_acceleration': (20.0, _positive('Acceleration limit of every joint, rad/s^2')),
    'sim.default_max_velocity': (2.0, _positive(
        'Velocity limit, rad/s, of joints whose model gives none')),
}
# Optional `sim.initial_positions` (double array, radians, chain joint order): the start
# pose; without it the arm starts at the chain's neutral pose.


def initial_pose(chain: Chain, positions: list[float]) -> np.ndarray:
    """Return ``positions`` (one per joint, clipped into the limits), or neutral if empty."""
    if not positions:
        return chain.neutral()
    if len(positions) != len(chain.joint_names):
        raise ValueError(f'sim.initial_positions has {len(positions)} values for '
                         f'{len(chain.joint_names)} joints {chain.joint_names}')
    pose = np.asarray(positions, dtype=float)
    if not np.isfinite(pose).all():
        raise ValueError(f'sim.initial_positions {positions} is not finite')
    return chain.clip(pose)


class SimArm(Node):
    """Integrate joint commands through velocity/acceleration-limited drives."""

    def __init__(self, **kwargs) -> None:
        """Load the chain from the parameters and start the simulation timer."""
        # The chain parameters are ik_node's, whatever their form (URDF file, chain.*):
        # take every override from the params file as it is.
        super().__init__('sim_arm', automatically_declare_parameters_from_overrides=True,
                         **kwargs)
        for name, (default, descriptor) in SIM_PARAMETERS.items():
            if not self.has_parameter(name):
                self.declare_parameter(name, default, descriptor)
        params = {name: param.value
                  for name, param in self.get_parameters_by_prefix('').items()}
        chain = chain_from_parameters(params, package_share_dir())
        if chain is None:
            raise ChainError('sim_arm needs the chain in its parameters '
                             '(robot_description_file or chain.*)')
        self._chain = chain
        self._names = list(chain.joint_names)
        self._index = {name: index for index, name in enumerate(self._names)}
        limits = MotionLimits.for_chain(
            chain, max_acceleration=params['sim.max_acceleration'],
            default_max_velocity=params['sim.default_max_velocity'])
        start = initial_pose(chain, list(params.get('sim.initial_positions', [])))
        self._limiter = MotionLimiter(limits, start)
        self._target = start.copy()
        rate = float(params['sim.rate'])  # Hz; a params file bypasses the descriptor range
        if not (np.isfinite(rate) and rate > 0.0):
            raise ValueError(f'sim.rate must be a positive rate in Hz, got {rate}')
        self._dt = 1.0 / rate  # seconds

        self._state_pub = self.create_publisher(JointState, 'joint_states', 10)
        self.create_subscription(JointState, 'joint_commands', self._on_command, 10)
        self.create_timer(self._dt, self._step)
        self.get_logger().info(
            f'simulating {len(self._names)} joints at {rate:g} Hz: '
            'joint_commands -> joint_states')

    def _on_command(self, msg: JointState) -> None:
        """Take the named positions of a command; refuse it whole if it is malformed."""
        if len(msg.position) != len(msg.name):
            self.get_logger().warning(
                f'command ignored: {len(msg.name)} names but '
                f'{len(msg.position)} positions', throttle_duration_sec=WARNING_THROTTLE)
            return
        positions = np.asarray(msg.position, dtype=float)
        if not np.isfinite(positions).all():
            self.get_logger().warning(
                f'command ignored: non-finite positions {positions.tolist()}',
                throttle_duration_sec=WARNING_THROTTLE)
            return
        # Mimic followers are derived from their leaders; a command may list them.
        unknown = [name for name in msg.name
                   if name not in self._index and name not in self._chain.all_joint_names]
        if unknown:
            self.get_logger().warning(
                f'ignoring unknown joints {unknown} (known: {self._names})',
                throttle_duration_sec=WARNING_THROTTLE)
        for name, position in zip(msg.name, positions):
            if name in self._index:
                self._target[self._index[name]] = position

    def _step(self) -> None:
        """Advance the drives one period and publish the measured state."""
        self._limiter.step(self._target, self._dt)
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = self._chain.all_joint_names
        msg.position = self._chain.expand(self._limiter.position).tolist()
        msg.velocity = self._chain.expand_velocity(self._limiter.velocity).tolist()
        self._state_pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    """Run the simulated arm until Ctrl-C or shutdown; exit 1 on a configuration error."""
    run_node(SimArm, 'sim_arm', args)


if __name__ == '__main__':
    main()
