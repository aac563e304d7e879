#!/usr/bin/env bash
# Creates the Ray virtualenv for a version (default: RAY_VERSION from versions.env) in the tool cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
for v in ${*:-$RAY_VERSION}; do
  d=$CACHE/venvs/ray-$v
  if [ -f "$d/.complete" ]; then echo "ray-venv: ray $v cached"; continue; fi
  t=$(date +%s); echo "ray-venv: installing ray $v"
  rm -rf "$d"; python3 -m venv "$d"
  "$d/bin/pip" install -q --disable-pip-version-check "ray[default,serve]==$v"
  touch "$d/.complete"; echo "ray-venv: ray $v ready in $(( $(date +%s) - t ))s -> $d"
done
