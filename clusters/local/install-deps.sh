#!/usr/bin/env bash
# Installs the Debian packages the local test bed needs (skips the install when all are present).
set -euo pipefail
pkgs="redis-server iptables conntrack containernetworking-plugins iproute2 wget util-linux procps psmisc python3-venv"
missing=""
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
if [ -z "$missing" ]; then echo "install-deps: all present"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "install-deps: need root to install:$missing (run as root or install them yourself)" >&2; exit 2; fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# the packaged redis service is not ours: the test bed runs redis-server per Pod
systemctl disable --now redis-server >/dev/null 2>&1 || service redis-server stop >/dev/null 2>&1 || true
