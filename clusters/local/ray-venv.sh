#!/usr/bin/env bash
# Creates the Ray virtualenv for a version (default: RAY_VERSION from versions.env) in the tool cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
for v in ${*:-$RAY_VERSION}; do
  d=$CACHE/venvs/ray-$v
  # the marker's suffix matches MARKER in nodeagent/images.py (bumped when ray-constraints.txt changes)
  if [ -f "$d/.complete-c1" ]; then echo "ray-venv: ray $v cached"; continue; fi
  t=$(date +%s); echo "ray-venv: installing ray $v"
  # the system's Python (Debian python3-venv), which any container user can run (not one under /root)
  py=${RAY_VENV_PYTHON:-/usr/bin/python3}; [ -x "$py" ] || py=python3
  rm -rf "$d"; "$py" -m venv "$d"
  "$d/bin/pip" install -q --disable-pip-version-check -c "$here/ray-constraints.txt" "ray[default,serve]==$v"
  touch "$d/.complete-c1"; echo "ray-venv: ray $v ready in $(( $(date +%s) - t ))s -> $d"
done
