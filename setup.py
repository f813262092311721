"""ament_python packaging for fabrik_ros (colcon build, pip install)."""

from glob import glob
import os

from setuptools import find_packages
from setuptools import setup

package_name = 'fabrik_ros'


def share_files(directory: str, pattern: str = '*') -> tuple[str, list[str]]:
    """Install every file of `directory` matching `pattern` into share/<package>/<directory>."""
    files = [path for path in sorted(glob(os.path.join(directory, pattern)))
             if os.path.isfile(path)]
    return os.path.join('share', package_name, directory), files


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        share_files('launch', '*.launch.py'),
        share_files('config', '*.yaml'),
        share_files('config/overlays', '*.yaml'),
        share_files('urdf'),
        share_files('rviz', '*.rviz'),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    extras_require={'test': ['pytest']},
    maintainer='Fabrik ROS Maintainers',
    maintainer_email='maintainers@fabrik-ros.dev',
    description='FABRIK inverse kinematics for ROS 2: target poses in, joint commands out.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'ik_node = fabrik_ros.ik_node:main',
            'sim_arm = fabrik_ros.sim_arm:main',
            'demo = fabrik_ros.demo:main',
        ],
    },
)
