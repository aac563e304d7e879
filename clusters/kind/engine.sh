#!/usr/bin/env bash
# The project's own Docker engine, for the kind provider on machines where no Docker runs.
# Usage: engine.sh up|down|status|env
#
# Debian's dockerd runs in a network namespace of its own ($NETNS), a private mount namespace and a PID
# namespace whose init is tini (it reaps; killing it ends every process of the engine at once). The
# namespace's only link is a veth pair to the host ($HOST_IP <-> $ENGINE_IP, a /30) and it has no default
# route: Docker's iptables rules, bridges and ip_forward stay inside, and nothing a container sends can leave
# the machine (the host reaches published ports, e.g. kind's API server, at $ENGINE_IP). Runtime: runc behind
# clusters/kind/runc-wrapper.py (drops capabilities outside the machine's bounding set). Data root in the
# tool cache (loaded images survive `down`); socket, state and log under $RUN.
# `up` prints `export DOCKER_HOST=...`; `down` removes every container, network and volume, stops the engine and
# deletes the namespace (idempotent; also run before `up`). Failures are one line naming the log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
RUN=${RAYCONF_ENGINE_RUN:-/run/rayconf-engine}   # not under /run/rayconformance: the local bed wipes that
DATA=${RAYCONF_ENGINE_DATA:-$CACHE/docker-engine}
NETNS=rayconf-engine
HOST_IF=rcengine0
HOST_IP=10.199.0.1
ENGINE_IP=10.199.0.2
BRIDGE_CIDR=10.198.0.1/24          # docker0, inside the namespace
ADDRESS_POOL=10.197.0.0/16         # networks docker creates (kind's), inside the namespace
SOCK=$RUN/docker.sock
LOG=$RUN/engine.log
export DOCKER_HOST=unix://$SOCK

say() { echo "engine: $*"; }
die() { echo "engine: $*" >&2; exit 1; }
running() { [ -f "$RUN/launcher.pid" ] && kill -0 "$(cat "$RUN/launcher.pid")" 2>/dev/null; }
netns_pids() { ip netns pids "$NETNS" 2>/dev/null || true; }   # every process of the engine lives in its netns
answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

up() {
  if running && answers; then say "running"; echo "export DOCKER_HOST=$DOCKER_HOST"; return; fi
  local c miss=""
  for c in dockerd containerd runc tini ip unshare docker python3; do command -v "$c" >/dev/null || miss="$miss $c"; done
  [ -z "$miss" ] || die "cannot start the project's Docker engine: missing$miss (\`make kind-deps\` installs them)"
  [ "$(id -u)" = 0 ] || die "cannot start the project's Docker engine: needs root"
  down >/dev/null 2>&1 || true
  mkdir -p "$RUN" "$DATA"
  ip netns add "$NETNS"
  ip link add "$HOST_IF" type veth peer name eth0 netns "$NETNS"
  ip addr add "$HOST_IP/30" dev "$HOST_IF"; ip link set "$HOST_IF" up
  ip -n "$NETNS" addr add "$ENGINE_IP/30" dev eth0
  ip -n "$NETNS" link set eth0 up; ip -n "$NETNS" link set lo up
  # the cgroup hierarchies as the host mounts them: `ip netns exec` remounts /sys and hides them
  awk '{for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) ~ /^cgroup2?$/) print $5, $(i+1), $(i+3); break }}' /proc/self/mountinfo > "$RUN/cgroups"
  [ -s "$RUN/cgroups" ] || die "no cgroup hierarchies mounted under /sys/fs/cgroup"
  cat > "$RUN/daemon.json" <<JSON
{"runtimes": {"rayconf-runc": {"path": "$here/runc-wrapper.py"}}, "default-runtime": "rayconf-runc"}
JSON
  : > "$LOG"
  setsid ip netns exec "$NETNS" unshare --mount --propagation private --pid --fork --mount-proc --kill-child \
    tini -- bash "$here/engine-inner.sh" "$RUN" \
      --host "unix://$SOCK" --data-root "$DATA" --exec-root "$RUN/exec" --pidfile "$RUN/dockerd.pid" \
      --config-file "$RUN/daemon.json" --bip "$BRIDGE_CIDR" --default-address-pool "base=$ADDRESS_POOL,size=24" \
      --dns "$HOST_IP" --storage-driver overlay2 --log-level warn \
    </dev/null >>"$LOG" 2>&1 &
  echo $! > "$RUN/launcher.pid"
  local i
  for i in $(seq 60); do
    answers && break
    running || { down >/dev/null 2>&1 || true; die "the Docker engine exited while starting; see $LOG ($(tail -1 "$LOG"))"; }
    sleep 1
  done
  answers || { down >/dev/null 2>&1 || true; die "the Docker engine did not answer within 60s; see $LOG"; }
  say "running (dockerd $(docker version --format '{{.Server.Version}}'), netns $NETNS, API at $ENGINE_IP, log $LOG)"
  echo "export DOCKER_HOST=$DOCKER_HOST"
}

down() {
  if running || [ -n "$(netns_pids)" ]; then
    if answers; then
      local ids; ids=$(docker ps -aq)
      # shellcheck disable=SC2086
      [ -z "$ids" ] || timeout 120 docker rm -f -v $ids >/dev/null 2>&1 || true
      timeout 30 docker network prune -f >/dev/null 2>&1 || true
      timeout 60 docker volume prune -f >/dev/null 2>&1 || true   # kind nodes' anonymous /var volumes
    fi
    local p i
    for p in $(netns_pids); do   # tini passes SIGTERM on to dockerd, which stops its containers and containerd
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = tini ] && kill -TERM "$p" 2>/dev/null || true
    done
    for i in $(seq 30); do [ -z "$(netns_pids)" ] && break; sleep 1; done
    if running; then kill -KILL "$(cat "$RUN/launcher.pid")" 2>/dev/null || true; fi  # --kill-child: tini dies
    for i in $(seq 10); do [ -z "$(netns_pids)" ] && break; sleep 1; done
    # shellcheck disable=SC2046
    [ -z "$(netns_pids)" ] || kill -KILL $(netns_pids) 2>/dev/null || true   # ours: they live in our netns
    for i in $(seq 10); do [ -z "$(netns_pids)" ] && ! running && break; sleep 1; done
    [ -z "$(netns_pids)" ] || die "engine processes still run in netns $NETNS: $(netns_pids | tr '\n' ' ')"
  fi
  ip netns del "$NETNS" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  rm -rf "$RUN/exec" "$RUN/launcher.pid" "$RUN/dockerd.pid" "$SOCK"
  say "stopped"
}

status() {
  if running && answers; then say "running; export DOCKER_HOST=$DOCKER_HOST"; else say "not running"; return 3; fi
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
  *) echo "usage: engine.sh up|down|status|env" >&2; exit 2 ;;
esac
