#!/usr/bin/env bash
# Creates the Ray virtualenv of each version given (default: RAY_VERSIONS from versions.env) in the tool cache,
# the same way the node agent does on first use (nodeagent/images.py: same lock, marker and constraints).
# A venv any container user cannot run (one made with an interpreter under /root, say pyenv's) is remade.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
# the system's Python (Debian python3-venv), which any container user can run (not one under /root)
py=${RAY_VENV_PYTHON:-/usr/bin/python3}; [ -x "$py" ] || py=python3
mkdir -p "$CACHE/venvs"
# usable VENV: its interpreter runs as uid 1000 (the Ray images' user), or as nobody when setpriv is missing
usable() {
  if command -v setpriv >/dev/null; then
    setpriv --reuid 1000 --regid 100 --clear-groups "$1/bin/python3" -c '' 2>/dev/null
  else
    su -s /bin/sh nobody -c "'$1/bin/python3' -c ''" 2>/dev/null
  fi
}
for v in ${*:-$RAY_VERSIONS}; do
  d=$CACHE/venvs/ray-$v
  (
    flock 9   # the node agent's per-version lock (ensure_ray_venv)
    # the marker's suffix matches MARKER in nodeagent/images.py (bumped when ray-constraints.txt changes)
    if [ -f "$d/.complete-c1" ]; then
      if usable "$d"; then echo "ray-venv: ray $v cached"; exit 0; fi
      echo "ray-venv: ray $v venv not runnable by uid 1000 ($(readlink -f "$d/bin/python3")); remaking it"
    fi
    t=$(date +%s); echo "ray-venv: installing ray $v"
    rm -rf "$d"; "$py" -m venv "$d"; chmod 755 "$d"
    "$d/bin/pip" install -q --disable-pip-version-check -c "$here/ray-constraints.txt" "ray[default,serve]==$v"
    usable "$d" || { echo "ray-venv: ray $v venv at $d is not runnable by uid 1000" >&2; exit 1; }
    echo "ray $v installed in $(( $(date +%s) - t ))s" > "$d/.complete-c1"
    echo "ray-venv: ray $v ready in $(( $(date +%s) - t ))s -> $d"
  ) 9>"$CACHE/venvs/.ray-$v.lock"
done
