#!/usr/bin/env bash
# Installs Debian packages when missing (skips the install when all are present): as root, or through `sudo -n`
# where sudo needs no password (a CI runner's user); else one line saying what to run.
# Usage: install-deps.sh [PKG ...]   (default: the packages the local test bed needs)
# INSTALL_DEPS_LABEL names the caller in messages (clusters/kind/install-deps.sh installs the kind provider's this way);
# INSTALL_DEPS_NO_SERVICES=1 keeps the packages' services from starting while they install (a policy-rc.d).
set -euo pipefail
bed="redis-server iptables conntrack containernetworking-plugins iproute2 wget util-linux procps psmisc python3-venv"
pkgs=${*:-$bed}
label=${INSTALL_DEPS_LABEL:-install-deps}
missing=""
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
if [ -z "$missing" ]; then echo "$label: all present"; exit 0; fi
as_root=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=(sudo -n); else
    echo "$label: need root to install:$missing (run as root, or \`sudo apt-get install -y$missing\` and retry)" >&2
    exit 2
  fi
fi
echo "$label: installing$missing${as_root[*]:+ (with sudo)}"
policy=/usr/sbin/policy-rc.d; added=""
if [ -n "${INSTALL_DEPS_NO_SERVICES:-}" ] && [ ! -e $policy ]; then
  printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee $policy >/dev/null && "${as_root[@]}" chmod +x $policy && added=1
fi
trap '[ -z "$added" ] || "${as_root[@]}" rm -f $policy' EXIT
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
# the packaged redis service is not ours: the test bed runs redis-server per Pod
case " $missing " in
  *" redis-server "*) "${as_root[@]}" systemctl disable --now redis-server >/dev/null 2>&1 ||
                      "${as_root[@]}" service redis-server stop >/dev/null 2>&1 || true ;;
esac
