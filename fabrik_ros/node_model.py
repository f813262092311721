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
The IK node's robot model and everything derived from it.

`NodeModel` builds the chain (from parameters or a robot_description), declares its
per-joint limits and per-effector weights as parameters, and owns the IkController that
follows it. A new model is validated as a whole before anything changes; a parameter
change is validated by the controller before it is committed, so a refused change leaves
no trace. The node only wires what depends on the model (topics, markers, timers) through
the `on_model` callback.
"""

from collections.abc import Callable, Mapping
from contextlib import suppress
import time

from fabrik_ros.chain import Chain, ChainError
from fabrik_ros.config import (chain_from_parameters, CHAIN_PARAMETERS, LIMITS_PREFIX,
                               package_share_dir)
from fabrik_ros.controller import IkController, Update
from fabrik_ros.ik_parameters import (chain_declarations, chain_dependent, check_update,
                                      COMMAND_JOINTS_DESCRIPTOR, NODE_PARAMETERS,
                                      setting_values, user_set_chain_parameters)
from fabrik_ros.model_change import description_size_problem, same_model
from fabrik_ros.settings import SETTING_NAMES, Settings, WEIGHTS_PREFIX
from rclpy.node import Node
from rclpy.parameter import Parameter


class NodeModel:
    """The chain a node drives, its parameters and its controller (None until a chain)."""

    def __init__(self, node: Node, command_period: float | None, feedback: bool,
                 apply: Callable[[Update], None],
                 on_model: Callable[[Chain, IkController, Settings], None]) -> None:
        """Keep what the user set at start-up; `apply` publishes, `on_model` rewires."""
        self._node = node
        self._command_period = command_period
        self._feedback = feedback
        self._apply = apply
        self._on_model = on_model
        self._user_set = user_set_chain_parameters(node)  # kept for a new chain
        self.model: Chain | None = None
        self.controller: IkController | None = None
        self.description = ''  # the last robot_description taken from the topic
        self.declaring = False  # declaring the chain's parameters: validated as a whole

    def _param(self, name: str) -> object:
        return self._node.get_parameter(name).value

    def from_parameters(self) -> Chain | None:
        """Build the model from parameters; None when none describes it (use the topic)."""
        if self._param('robot_description'):
            return self.from_urdf(self._param('robot_description'))
        names = ['robot_description_file', 'base_link', 'tip_links', *CHAIN_PARAMETERS]
        return chain_from_parameters({name: self._param(name) for name in names},
                                     package_share_dir())

    def from_urdf(self, urdf: str) -> Chain:
        """Build the chain of a URDF (ValueError if unusable, or too big to parse)."""
        problem = description_size_problem(urdf)
        if problem:
            raise ValueError(f'robot_description refused before parsing: {problem}')
        chain = Chain.from_urdf(urdf, self._param('base_link'), list(self._param('tip_links')),
                                srdf_xml=self._param('robot_description_semantic') or None)
        if '<collision' in urdf:
            # Its collision model (meshes, pair sorting: up to a second) is built here, on the
            # loader's thread for a topic's description, not by the first solve, which would
            # stall the command stream. Unreadable geometry: the solver turns self-collision
            # off and says why (IkSolver.collision_status).
            with suppress(ChainError):
                chain.clearance(chain.neutral())
        return chain

    def adopt(self, urdf: str, chain: Chain | ValueError) -> None:
        """Use a parsed description: the same robot changes nothing, another one is taken."""
        logger = self._node.get_logger()
        if self.model is not None and not isinstance(chain, ValueError) \
                and same_model(self.model, chain):
            self.description = urdf
            return
        try:
            if isinstance(chain, ValueError):
                raise chain
            self.use(chain)
        except ValueError as error:  # a ChainError is a ValueError
            logger.error(f'robot_description refused, chain unchanged: {error}')
            return
        self.description = urdf
        logger.info('chain loaded from the robot_description topic')

    def _values(self, model: Chain, updates: Mapping[str, object]) -> dict[str, object]:
        """Return the settings' parameters: the model's limits, what the user set, updates."""
        return setting_values(model, {name: self._param(name) for name in SETTING_NAMES},
                              self._user_set, updates)

    def use(self, model: Chain) -> None:
        """
        Adopt a model, rebuilding everything derived from it, or raise ValueError.

        Its per-joint limits and per-effector weights are declared (the model's, or what the
        user set, validated once for the whole chain); those of the previous model go. What
        the arm does carries over (see IkController.change_model).
        """
        values = self._values(model, {})
        settings = Settings.from_parameters(model, values)  # unknown joints/fields refused
        order = self._user_set.get('command_joints') or model.joint_names
        controller = self.controller
        if controller is None:
            controller = IkController(
                settings, time.monotonic(), command_period=self._command_period,
                feedback=self._feedback, command_joints=order,
                enabled=self._param('start_enabled'))
        else:
            self._apply(controller.change_model(settings, time.monotonic(), order))
        self._declare(model, values, order)
        self.model, self.controller = model, controller
        self._on_model(model, controller, settings)

    def _declare(self, model: Chain, values: Mapping[str, object], order: list[str]) -> None:
        """Declare the model's limits, weights and command order, dropping the last ones."""
        node = self._node
        self.declaring = True
        try:
            for prefix in (LIMITS_PREFIX, WEIGHTS_PREFIX):
                for name in node.get_parameters_by_prefix(prefix[:-1]):
                    node.undeclare_parameter(prefix + name)
            node.declare_parameters('', chain_declarations(model, values))
            if node.has_parameter('command_joints'):
                node.set_parameters([Parameter('command_joints', value=list(order))])
            else:
                node.declare_parameter('command_joints', list(order),
                                       COMMAND_JOINTS_DESCRIPTOR)
        finally:
            self.declaring = False

    def update(self, updates: Mapping[str, object]) -> Settings | None:
        """
        Validate parameter updates as a whole and commit them, or raise ValueError.

        Return the controller's new settings (None before there is a chain).
        """
        check_update({name: self._param(name) for name in NODE_PARAMETERS}, updates)
        settings = None
        if self.controller is not None:
            settings = Settings.from_parameters(self.model, self._values(self.model, updates))
            order = updates.get('command_joints', self._param('command_joints'))
            self.controller.configure(settings, order)  # validated, then committed
        self._user_set.update((name, value) for name, value in updates.items()
                              if chain_dependent(name))
        return settings
