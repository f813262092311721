"""ament_flake8 over the whole package, as `colcon test` runs it."""

from pathlib import Path

import pytest

ament_flake8_main = pytest.importorskip(
    'ament_flake8.main',
    reason='ament_flake8 is not installed (pip install -r requirements.txt, '
           'or apt install ros-$ROS_DISTRO-ament-flake8)')

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# colcon output, should someone build inside the source folder.
EXCLUDED = [str(PACKAGE_ROOT / folder) for folder in ('build', 'install', 'log')]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python file of the package passes ament's flake8 configuration."""
    # ament_flake8 skips hidden folders (.venv) found under the working directory.
    monkeypatch.chdir(PACKAGE_ROOT)
    rc, errors = ament_flake8_main.main_with_errors(
        argv=[str(PACKAGE_ROOT), '--exclude', *EXCLUDED])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)
