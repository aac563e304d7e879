#!/usr/bin/env bash
# Builds what the kind provider needs from the Go module proxy into the tool cache, keyed by version
# (pins in clusters/local/versions.env): kind itself, and the node image's containerd, runc, crictl,
# CNI plugins, kubelet and kubeadm.
# Usage: build-kind-tools.sh [component ...]   (kind containerd runc crictl cni kubenode; default: all)
# Already-built components are skipped. On failure: one line naming the component and its log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
command -v go >/dev/null || { echo "build-kind-tools: 'go' not found on PATH; install Go >= 1.25 and retry" >&2; exit 2; }

report() { echo "build-kind-tools: $1 built in $(( $(stamp) - $2 ))s -> $3"; record_build "$1" "${4:-}" "$2"; }

build_kind() {
  local dir=$CACHE/kind-$KIND_VERSION
  [ -x "$dir/bin/kind" ] && { echo "build-kind-tools: kind $KIND_VERSION cached"; return; }
  local t; t=$(stamp)
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
  report kind "$t" "$dir/bin" "$KIND_VERSION"
}

build_containerd() {
  local dir=$CACHE/containerd-$CONTAINERD_VERSION m=github.com/containerd/containerd/v2
  [ -x "$dir/bin/containerd-shim-runc-v2" ] && { echo "build-kind-tools: containerd $CONTAINERD_VERSION cached"; return; }
  local t; t=$(stamp)
  local ld="-s -w -X $m/version.Version=$CONTAINERD_VERSION -X $m/version.Package=$m -X $m/version.Revision=module-proxy"
  # as kind builds it: cgo on, optional snapshotters off; the shim static (it runs in any Pod's mount namespace)
  CGO_ENABLED=1 GOBIN=$dir/bin go install -trimpath -tags "no_aufs no_zfs no_btrfs no_devmapper" -ldflags "$ld" \
    "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/ctr@$CONTAINERD_VERSION"
  GOBIN=$dir/bin go install -trimpath -tags "no_aufs no_zfs no_btrfs no_devmapper" -ldflags "$ld" \
    "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
  report containerd "$t" "$dir/bin" "$CONTAINERD_VERSION"
}

build_runc() {
  local dir=$CACHE/runc-$RUNC_VERSION
  [ -x "$dir/bin/runc" ] && { echo "build-kind-tools: runc $RUNC_VERSION cached"; return; }
  local t; t=$(stamp)
  # runc needs cgo (nsenter) and libseccomp; linked statically so it runs in any rootfs
  CGO_ENABLED=1 GOBIN=$dir/bin go install -trimpath -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -X main.version=${RUNC_VERSION#v} -extldflags -static" "github.com/opencontainers/runc@$RUNC_VERSION"
  report runc "$t" "$dir/bin" "$RUNC_VERSION"
}

build_crictl() {
  local dir=$CACHE/crictl-$CRICTL_VERSION
  [ -x "$dir/bin/crictl" ] && { echo "build-kind-tools: crictl $CRICTL_VERSION cached"; return; }
  local t; t=$(stamp)
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
    "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
  report crictl "$t" "$dir/bin" "$CRICTL_VERSION"
}

build_cni() {
  local dir=$CACHE/cni-plugins-$CNI_PLUGINS_VERSION m=github.com/containernetworking/plugins/plugins
  [ -x "$dir/bin/portmap" ] && { echo "build-kind-tools: CNI plugins $CNI_PLUGINS_VERSION cached"; return; }
  local t p pkgs=""; t=$(stamp)
  for p in ipam/host-local main/loopback main/ptp main/bridge meta/portmap; do pkgs="$pkgs $m/$p@$CNI_PLUGINS_VERSION"; done
  # shellcheck disable=SC2086
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w" $pkgs
  report "CNI plugins" "$t" "$dir/bin" "$CNI_PLUGINS_VERSION"
}

# kubelet and kubeadm: the local bed's Kubernetes recipe (clusters/local/build-tools.sh kubenode), beside its binaries
build_kubenode() {
  local t out; t=$(stamp)
  out=$(bash "$here/../local/build-tools.sh" kubenode); echo "$out"
  case $out in *" built in "*) record_build "kubelet, kubeadm" "$KUBERNETES_VERSION" "$t" ;; esac
}

# the name a component's builds are recorded under in $BUILD_TIMES
label() { case $1 in cni) echo "CNI plugins" ;; kubenode) echo "kubelet, kubeadm" ;; *) echo "$1" ;; esac; }

all="kind containerd runc crictl cni kubenode"
start=$(stamp)
for c in ${*:-$all}; do
  case $c in
    kind|containerd|runc|crictl|cni|kubenode)
      log=$LOGS/build-$c.log
      # (not in an `if`: that would disable set -e); on a terminal the time so far and left, from its last build
      set +e; ( set -e; "build_$c" ) >"$log" 2>&1 | python3 "$here/../progress.py" relay "building $c" "$(label "$c")" \
        "$BUILD_TIMES"; rc=${PIPESTATUS[0]}; set -e
      if [ $rc != 0 ]; then
        echo "build-kind-tools: building $c failed; see $log ($(grep -v '^\s*$' "$log" | tail -1))" >&2; exit 1
      fi
      grep -E '^build-(kind-)?tools: [^d]' "$log" || true ;;
    *) echo "build-kind-tools: unknown component '$c' (known: $all)" >&2; exit 2 ;;
  esac
done
echo "build-kind-tools: done in $(( $(stamp) - start ))s (cache: $CACHE)"
