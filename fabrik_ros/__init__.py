"""
FABRIK inverse kinematics for ROS 2: target poses in, joint commands out.

The core modules (chain, ik, config, motion) use numpy and the standard library only; the
node modules (ik_node, sim_arm, demo) wrap them in rclpy.
"""
