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
Conversions between ROS messages and the numpy arrays of the solver core.

Message types only, no rclpy: the node wires these into publishers and subscriptions,
and tests can check them without DDS.
"""

from collections.abc import Sequence
import math

from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from fabrik_ros.chain import quaternion_from_rotation, rotation_from_quaternion
from fabrik_ros.controller import IkController, Status
from fabrik_ros.controller_types import target_positions
from fabrik_ros.ik import MAX_COORDINATE_M
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion, TransformStamped
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

REACHED_COLOUR = ColorRGBA(r=0.1, g=0.8, b=0.2, a=1.0)
UNREACHED_COLOUR = ColorRGBA(r=0.9, g=0.15, b=0.15, a=1.0)
TARGET_COLOUR = ColorRGBA(r=1.0, g=0.6, b=0.0, a=0.8)
JOINT_DIAMETER = 0.03  # metres
LINK_WIDTH = 0.012  # metres
TARGET_DIAMETER = 0.04  # metres
BODY_SIZE = 0.06  # metres, the cube that marks a free body
BODY_COLOUR = ColorRGBA(r=0.2, g=0.4, b=0.9, a=0.8)
DIAGNOSTIC_LEVELS = {'OK': DiagnosticStatus.OK, 'WARN': DiagnosticStatus.WARN}
MIN_QUATERNION_NORM = 1e-6  # below this a quaternion has no orientation (e.g. all zeros)


class TargetError(ValueError):
    """A target message that cannot be used; the message says why."""


def point_array(point: Point) -> np.ndarray:
    """Return a geometry_msgs Point as a (3,) array, refusing NaN, inf and absurd sizes."""
    x, y, z = point.x, point.y, point.z
    # One comparison chain on plain floats for every target (NaN fails it too); which
    # check failed is worked out only for a refusal.
    if not (abs(x) <= MAX_COORDINATE_M and abs(y) <= MAX_COORDINATE_M
            and abs(z) <= MAX_COORDINATE_M):
        xyz = [x, y, z]
        if not all(map(math.isfinite, xyz)):
            raise TargetError(f'target position {xyz} is not finite')
        raise TargetError(f'target position {xyz} is farther than {MAX_COORDINATE_M:g} m')
    return np.array((x, y, z))


def quaternion_array(quaternion: Quaternion) -> np.ndarray:
    """
    Return a geometry_msgs Quaternion as a unit (4,) array x, y, z, w.

    Refuses NaN/inf, norms that overflow (the result would be all zeros) and (near) zero
    quaternions, which describe no rotation at all.
    """
    x, y, z, w = quaternion.x, quaternion.y, quaternion.z, quaternion.w
    norm = math.sqrt(x * x + y * y + z * z + w * w)  # NaN or inf unless all are finite
    if not MIN_QUATERNION_NORM <= norm < math.inf:
        xyzw = [x, y, z, w]
        if not all(map(math.isfinite, xyzw)):
            raise TargetError(f'target orientation {xyzw} is not finite')
        if norm == math.inf:
            raise TargetError(f'target orientation {xyzw} has a norm that overflows')
        raise TargetError(f'target orientation {xyzw} is a zero quaternion')
    return np.array((x / norm, y / norm, z / norm, w / norm))


def transform_point(translation: np.ndarray, xyzw: np.ndarray,
                    point: np.ndarray) -> np.ndarray:
    """Map a (3,) point through the rigid transform (translation, unit quaternion)."""
    return rotation_from_quaternion(xyzw) @ point + translation


def transform_orientation(rotation: np.ndarray, xyzw: np.ndarray) -> np.ndarray:
    """Turn a unit quaternion x, y, z, w by a transform's unit quaternion ``rotation``."""
    return quaternion_from_rotation(rotation_from_quaternion(rotation)
                                    @ rotation_from_quaternion(xyzw))


def stamp_age(stamp: Time, now_nanoseconds: int) -> float | None:
    """Return seconds from a message's stamp to now (its clock's); None: unstamped."""
    if not (stamp.sec or stamp.nanosec):
        return None
    # In integer nanoseconds: through rclpy's Time and Duration it cost 2.6x as much.
    return 1e-9 * (now_nanoseconds - (stamp.sec * 1_000_000_000 + stamp.nanosec))


def joint_state(names: Sequence[str], positions: np.ndarray, stamp: Time) -> JointState:
    """Build a JointState with positions in radians, in the order of `names`."""
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = positions.tolist()
    return msg


def joint_trajectory(names: Sequence[str], positions: np.ndarray,
                     duration: float) -> JointTrajectory:
    """
    Build a one-point JointTrajectory reaching `positions` after `duration` seconds.

    The header stamp stays zero: ros2_control's JointTrajectoryController then starts it on
    arrival, replacing whatever it was executing. Positions only (no end velocity), so
    controllers that refuse a nonzero velocity at a trajectory's end take it too.
    """
    point = JointTrajectoryPoint(positions=positions.tolist())
    seconds = int(duration)
    point.time_from_start = Duration(sec=seconds, nanosec=int((duration - seconds) * 1e9))
    return JointTrajectory(joint_names=list(names), points=[point])


def branch_paths(joint_parents: Sequence[int],
                 effector_parents: Sequence[int]) -> list[list[int]]:
    """
    Return, per effector, the joint indices from the base to its parent joint.

    A serial chain has one path through every joint; a tree has one per branch, sharing
    the trunk, so each branch can be drawn as its own line.
    """
    paths = []
    for joint in effector_parents:
        path = []
        while joint >= 0:
            path.append(joint)
            joint = joint_parents[joint]
        paths.append(path[::-1])
    return paths


def _points(xyz: np.ndarray) -> list[Point]:
    return [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in xyz]


def _marker(frame_id: str, stamp: Time, namespace: str, marker_id: int,
            marker_type: int) -> Marker:
    marker = Marker()
    marker.header.frame_id = frame_id
    marker.header.stamp = stamp
    marker.ns = namespace
    marker.id = marker_id
    marker.type = marker_type
    marker.action = Marker.ADD
    marker.pose.orientation.w = 1.0
    return marker


def chain_markers(frame_id: str, stamp: Time, joint_points: np.ndarray,
                  effector_points: np.ndarray, paths: Sequence[Sequence[int]],
                  targets: np.ndarray, reached: Sequence[bool],
                  body: np.ndarray | None = None) -> MarkerArray:
    """
    Draw the solved chain: joints, one line per branch, the targets and a free body.

    joint_points (n, 3), effector_points (m, 3) and targets (m, 3, NaN rows for effectors
    without a target) are in metres in `frame_id`; paths come from branch_paths. Each
    branch is green when its effector is reached (per `reached`), red otherwise; the
    joints are green when every effector is. body: where a free body is in `frame_id`
    (its branches start there and a cube marks it); None: the base is the frame's origin.
    """
    colour = REACHED_COLOUR if all(reached) else UNREACHED_COLOUR
    clear = Marker()
    clear.header.frame_id = frame_id
    clear.action = Marker.DELETEALL
    joints = _marker(frame_id, stamp, 'joints', 0, Marker.SPHERE_LIST)
    joints.scale.x = joints.scale.y = joints.scale.z = JOINT_DIAMETER
    joints.color = colour
    joints.points = _points(joint_points)
    markers = [clear, joints]
    base = np.zeros((1, 3)) if body is None else np.reshape(body, (1, 3))
    for index, path in enumerate(paths):
        links = _marker(frame_id, stamp, 'links', index, Marker.LINE_STRIP)
        links.scale.x = LINK_WIDTH
        links.color = REACHED_COLOUR if reached[index] else UNREACHED_COLOUR
        links.points = _points(np.vstack([base, joint_points[list(path)],
                                          effector_points[index:index + 1]]))
        markers.append(links)
    for index, target in enumerate(targets):
        if np.all(np.isfinite(target)):
            sphere = _marker(frame_id, stamp, 'targets', index, Marker.SPHERE)
            sphere.scale.x = sphere.scale.y = sphere.scale.z = TARGET_DIAMETER
            sphere.color = TARGET_COLOUR
            sphere.pose.position = _points(target[np.newaxis])[0]
            markers.append(sphere)
    if body is not None:
        cube = _marker(frame_id, stamp, 'body', 0, Marker.CUBE)
        cube.scale.x = cube.scale.y = cube.scale.z = BODY_SIZE
        cube.color = BODY_COLOUR
        cube.pose.position = _points(base)[0]
        markers.append(cube)
    return MarkerArray(markers=markers)


def body_transform(stamp: Time, odom_frame: str, base_link: str,
                   position: np.ndarray) -> TransformStamped:
    """Return the free body's TF odom_frame -> base_link: a translation (metres)."""
    msg = TransformStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = odom_frame
    msg.child_frame_id = base_link
    msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = \
        map(float, position)
    msg.transform.rotation.w = 1.0
    return msg


def body_pose(transform: TransformStamped) -> PoseStamped:
    """Return the body's pose in the odometry frame, as the transform to it says."""
    msg = PoseStamped(header=transform.header)
    translation = transform.transform.translation
    msg.pose.position = Point(x=translation.x, y=translation.y, z=translation.z)
    msg.pose.orientation = transform.transform.rotation
    return msg


def diagnostic_array(stamp: Time, name: str, hardware_id: str,
                     status: Status) -> DiagnosticArray:
    """Build a one-status DiagnosticArray; values are shown as key/value strings."""
    message = DiagnosticStatus(level=DIAGNOSTIC_LEVELS[status.level], name=name,
                               message=status.message, hardware_id=hardware_id)
    message.values = [KeyValue(key=key, value=str(value))
                      for key, value in status.values.items()]
    msg = DiagnosticArray(status=[message])
    msg.header.stamp = stamp
    return msg


# ---- tool frames ----------------------------------------------------------------------------

AXIS_COLOURS = (ColorRGBA(r=0.9, g=0.1, b=0.1, a=1.0),  # x red, y green, z blue, as in RViz
                ColorRGBA(r=0.1, g=0.8, b=0.1, a=1.0),
                ColorRGBA(r=0.15, g=0.3, b=1.0, a=1.0))
FRAME_AXIS_LENGTH = 0.08  # metres
TARGET_FRAME_WIDTH = 0.004  # metres: thin, so the reached frame shows through it
REACHED_FRAME_WIDTH = 0.008  # metres


def pose_message(transform: np.ndarray) -> Pose:
    """Return the geometry_msgs Pose of a (4, 4) homogeneous transform (metres)."""
    x, y, z = (float(v) for v in transform[:3, 3])
    qx, qy, qz, qw = (float(v) for v in quaternion_from_rotation(transform[:3, :3]))
    return Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))


def frame_markers(frame_id: str, stamp: Time, namespace: str, frames: np.ndarray,
                  width: float, length: float = FRAME_AXIS_LENGTH) -> list[Marker]:
    """
    Draw tool frames as axes: a red x, green y and blue z line from each frame's origin.

    frames (m, 4, 4) are transforms in `frame_id`, one per effector (marker id = index);
    a frame with any NaN (an effector without an orientation) is skipped.
    """
    markers = []
    for index, frame in enumerate(np.asarray(frames, dtype=float)):
        if not np.all(np.isfinite(frame)):
            continue
        axes = _marker(frame_id, stamp, namespace, index, Marker.LINE_LIST)
        axes.scale.x = width
        origin = frame[:3, 3]
        ends = origin + length * frame[:3, :3].T  # row k: the end of axis k
        axes.points = _points(np.vstack([(origin, end) for end in ends]))
        axes.colors = [colour for colour in AXIS_COLOURS for _ in range(2)]
        markers.append(axes)
    return markers


def controller_markers(controller: IkController, paths: Sequence[Sequence[int]],
                       frame_id: str, stamp: Time) -> MarkerArray:
    """
    Draw what the controller commands: the chain, its targets and, where oriented, tool frames.

    Tool frames as axes: the target's (thin) and the one the commanded joints reach. paths
    come from branch_paths; frame_id is the controller's frame. Needs a command.
    """
    chain, q = controller.settings.chain, controller.stream.position
    kinematics = chain.forward(q)
    errors = (np.full(len(paths), np.nan) if controller.result is None
              else controller.result.errors)
    reached = [not error > controller.settings.tolerance for error in errors]  # NaN: none
    body = controller.body if controller.free else None
    markers = chain_markers(frame_id, stamp, kinematics.positions + controller.body,
                            kinematics.effectors + controller.body, paths,
                            target_positions(controller.targets), reached, body)
    oriented = [target is not None and target.orientation is not None
                and controller.settings.orientation_mode != 'position'
                for target in controller.targets]
    if any(oriented):
        targets = np.full((len(oriented), 4, 4), np.nan)
        reached_frames = np.full((len(oriented), 4, 4), np.nan)
        tools = controller.tool_frames()
        for index, target in enumerate(controller.targets):
            if oriented[index]:
                targets[index] = np.eye(4)
                targets[index, :3, :3] = rotation_from_quaternion(target.orientation)
                targets[index, :3, 3] = target.position
                reached_frames[index] = tools[index]
        markers.markers += frame_markers(frame_id, stamp, 'target_frames', targets,
                                         TARGET_FRAME_WIDTH)
        markers.markers += frame_markers(frame_id, stamp, 'reached_frames', reached_frames,
                                         REACHED_FRAME_WIDTH)
    return markers
