#!/usr/bin/env bash
# Runs inside the engine's namespaces (see engine.sh), as the child of tini: mounts the host's cgroup
# hierarchies again (`ip netns exec` hid them), then becomes dockerd.  Usage: engine-inner.sh RUN_DIR DOCKERD_ARGS...
set -euo pipefail
run=$1; shift
mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
while read -r path fstype opts; do
  mkdir -p "$path"
  if [ "$fstype" = cgroup2 ]; then mount -t cgroup2 cgroup2 "$path"
  else mount -t cgroup -o "$(echo "$opts" | sed 's/^rw,//')" cgroup "$path"; fi
done < "$run/cgroups"
exec dockerd "$@"
