#!/usr/bin/env bash
# Installs Debian packages when missing (skips the install when all are present).
# Usage: install-deps.sh [PKG ...]   (default: the packages the local test bed needs)
# INSTALL_DEPS_LABEL names the caller in messages (clusters/kind/install-deps.sh installs the kind provider's this way).
set -euo pipefail
bed="redis-server iptables conntrack containernetworking-plugins iproute2 wget util-linux procps psmisc python3-venv"
pkgs=${*:-$bed}
label=${INSTALL_DEPS_LABEL:-install-deps}
missing=""
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
if [ -z "$missing" ]; then echo "$label: all present"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "$label: need root to install:$missing (run as root or install them yourself)" >&2; exit 2; fi
echo "$label: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# the packaged redis service is not ours: the test bed runs redis-server per Pod
case " $missing " in
  *" redis-server "*) systemctl disable --now redis-server >/dev/null 2>&1 || service redis-server stop >/dev/null 2>&1 || true ;;
esac
