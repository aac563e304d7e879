#!/usr/bin/env bash
# Installs the Debian packages the kind provider's own engine and image builders need (skips what is present):
# Debian's Docker engine (docker.io: dockerd, containerd, runc; started only by clusters/kind/engine.sh, never as a
# service), tini (the engine's reaping init), debootstrap (root filesystems), libseccomp-dev and pkg-config (runc's
# cgo build), gcc (the static pause binary), jq.
set -euo pipefail
pkgs="docker.io tini debootstrap libseccomp-dev pkg-config gcc libc6-dev jq iproute2 util-linux"
missing=""
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; done
if [ -z "$missing" ]; then echo "kind install-deps: all present"; exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "kind install-deps: need root to install:$missing (run as root or install them yourself)" >&2; exit 2; fi
echo "kind install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# the packaged service must not start dockerd in the host's namespaces (no-op where no init system runs services)
policy=/usr/sbin/policy-rc.d; added=""
if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; added=1; fi
trap '[ -z "$added" ] || rm -f $policy' EXIT
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
