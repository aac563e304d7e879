#!/usr/bin/env bash
# Prints the tool cache the gate builds into (clusters/local/build-tools.sh's RAYCONF_CACHE), creating it, and what
# the composite action (action.yml) keys its cache between jobs by, as GitHub step outputs:
#   dir=<RAYCONF_CACHE if set, else /var/cache/rayconformance where this user can write it, else ~/.cache/rayconformance>
#   versions=<a digest of clusters/local/versions.env, which pins every component's version>
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${RAYCONF_CACHE:-}
if [ -z "$dir" ]; then
  dir=/var/cache/rayconformance
  { mkdir -p "$dir" && [ -w "$dir" ]; } 2>/dev/null || dir=$HOME/.cache/rayconformance
fi
if ! { mkdir -p "$dir" && [ -w "$dir" ]; } 2>/dev/null; then
  echo "tool-cache: cannot write $dir; set the action's tool-cache input (RAYCONF_CACHE) to a writable directory" >&2
  exit 2
fi
echo "dir=$dir"
echo "versions=$(sha256sum "$here/clusters/local/versions.env" | cut -c1-16)"
