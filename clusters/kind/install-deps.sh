#!/usr/bin/env bash
# Installs the Debian packages the kind provider's own engine and image builders need (skips what is present):
# Debian's Docker engine (docker.io: dockerd, containerd, runc; started only by clusters/kind/engine.sh, never as a
# service), tini (the engine's reaping init), debootstrap (root filesystems), libseccomp-dev and pkg-config (runc's
# cgo build), gcc (the static pause binary), jq.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkgs="docker.io tini debootstrap libseccomp-dev pkg-config gcc libc6-dev jq iproute2 util-linux"
# as root or through `sudo -n` (clusters/local/install-deps.sh); the packaged service must not start dockerd in the
# host's namespaces (no-op where no init system runs services)
# shellcheck disable=SC2086
INSTALL_DEPS_LABEL="kind install-deps" INSTALL_DEPS_NO_SERVICES=1 bash "$here/../local/install-deps.sh" $pkgs
