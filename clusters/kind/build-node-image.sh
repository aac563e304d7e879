#!/usr/bin/env bash
# Builds the kind node image offline (no registry, no `kind build node-image`, no Docker build), cached by version.
# Usage: build-node-image.sh [--print-tag | --bases]   (--bases: only the Debian root filesystems)
#
# What a kind node image holds, from what the project builds (clusters/kind/README.md):
#  - a Debian rootfs (debootstrap from the host's apt mirror, packages kind's base image installs, systemd trimmed
#    as kind trims it); kind's base files (entrypoint, containerd config, systemd units, kubelet drop-ins) from
#    the kind module at $KIND_VERSION;
#  - containerd, runc, crictl, CNI plugins (build-kind-tools.sh); kubelet, kubeadm, kubectl (Kubernetes
#    $KUBERNETES_VERSION); the static CNI of clusters/kind/node/ (no kindnetd);
#  - the control-plane, kube-proxy, etcd, CoreDNS and pause images, made from the project's binaries and tagged
#    with the names `kubeadm config images list` prints (and the sandbox image kind's containerd config names),
#    imported into containerd's k8s.io namespace, pinned;
#  - kind's default StorageClass `standard`: Rancher's local-path-provisioner ($LOCAL_PATH_PROVISIONER_VERSION, built
#    from the Go module proxy) and its helper (Debian's busybox-static) as images in the node, and the manifest kind
#    applies (/kind/manifests/default-storage.yaml, made by storage.py from the provisioner's own).
# Writes $CACHE/kind-node-<k8s version>-<inputs hash>/node-image.tar (a `docker load` archive) and
# $CACHE/kind-node-image-<k8s version>.env (NODE_IMAGE=<tag>, NODE_IMAGE_ARCHIVE=<path>). Logs under $CACHE/logs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
K=$KUBERNETES_VERSION
SUITE=$KIND_NODE_SUITE
export GOTOOLCHAIN=local GOFLAGS=-mod=mod

NODE_PKGS="systemd conntrack iptables nftables iproute2 ethtool util-linux mount kmod libseccomp2 pigz fuse-overlayfs
  bash ca-certificates curl jq procps"
PROXY_PKGS="iptables nftables conntrack ipset kmod"

inputs=$( { echo "$K $KIND_VERSION $CONTAINERD_VERSION $RUNC_VERSION $CRICTL_VERSION $CNI_PLUGINS_VERSION $ETCD_VERSION"
            echo "$COREDNS_VERSION $SUITE $NODE_PKGS $PROXY_PKGS"
            echo "$LOCAL_PATH_PROVISIONER_VERSION"
            cat "$0" "$here/lib.sh" "$here"/node/* "$here/imagetar.py" "$here/storage.py" "$here/../local/storage.py"
          } | sha256sum | cut -c1-10)
TAG=rayconformance/kind-node:$K-$inputs
OUT=$CACHE/kind-node-$K-$inputs
ENVFILE=$CACHE/kind-node-image-$K.env
[ "${1:-}" = --print-tag ] && { echo "$TAG"; exit 0; }

stage=""
fail() { echo "build-node-image: $stage failed; see $LOGS/node-image-$stage.log ($(grep -v '^\s*$' "$LOGS/node-image-$stage.log" 2>/dev/null | tail -1))" >&2; exit 1; }
step() {  # step NAME FUNCTION: runs FUNCTION with its output in the stage's log; one line on failure
  stage=$1; local t; t=$(date +%s)
  set +e; ( set -e; "$2" ) >"$LOGS/node-image-$stage.log" 2>&1; local rc=$?; set -e  # (`|| fail` would disable set -e)
  [ $rc = 0 ] || fail
  echo "build-node-image: $stage done in $(( $(date +%s) - t ))s"
  grep -q '^cached$' "$LOGS/node-image-$stage.log" || record_build "node-image $stage" "$K" "$t"
}

if [ -f "$OUT/node-image.tar" ]; then
  echo "build-node-image: $TAG cached ($OUT/node-image.tar)"
  printf 'NODE_IMAGE=%s\nNODE_IMAGE_ARCHIVE=%s\n' "$TAG" "$OUT/node-image.tar" > "$ENVFILE"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "build-node-image: needs root (debootstrap, chroot)" >&2; exit 2; }

# --- inputs that other builds produce ------------------------------------------------------------------------
KBIN=$CACHE/kubernetes-$K/bin
declare -A BIN=(
  [containerd]=$CACHE/containerd-$CONTAINERD_VERSION/bin/containerd [ctr]=$CACHE/containerd-$CONTAINERD_VERSION/bin/ctr
  [containerd-shim-runc-v2]=$CACHE/containerd-$CONTAINERD_VERSION/bin/containerd-shim-runc-v2
  [runc]=$CACHE/runc-$RUNC_VERSION/bin/runc [crictl]=$CACHE/crictl-$CRICTL_VERSION/bin/crictl
  [kubelet]=$KBIN/kubelet [kubeadm]=$KBIN/kubeadm [kubectl]=$KBIN/kubectl
  [kube-apiserver]=$KBIN/kube-apiserver [kube-controller-manager]=$KBIN/kube-controller-manager
  [kube-scheduler]=$KBIN/kube-scheduler [kube-proxy]=$KBIN/kube-proxy
  [etcd]=$CACHE/etcd-$ETCD_VERSION/bin/etcd [coredns]=$CACHE/coredns-$COREDNS_VERSION/bin/coredns
  [local-path-provisioner]=$CACHE/localpath-$LOCAL_PATH_PROVISIONER_VERSION/bin/local-path-provisioner
)
LOCALPATH_MANIFEST=$CACHE/localpath-$LOCAL_PATH_PROVISIONER_VERSION/deploy/local-path-storage.yaml
STORAGE_IMAGES=("rayconformance/local-path-provisioner:$LOCAL_PATH_PROVISIONER_VERSION"
                "rayconformance/local-path-helper:busybox-$SUITE")
PY=${RAYCONF_PYTHON:-$here/../../.venv/bin/python}   # the project's venv (PyYAML) writes the storage manifest
CNI=$CACHE/cni-plugins-$CNI_PLUGINS_VERSION/bin
for c in debootstrap gcc chroot; do command -v $c >/dev/null || { echo "build-node-image: '$c' missing (run \`make kind-deps\`)" >&2; exit 2; }; done
KIND_SRC=$(cd /tmp && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["Dir"])')
BASEFILES=$KIND_SRC/images/base/files
check_built() {
  local b p missing=""
  for b in "${!BIN[@]}"; do [ -x "${BIN[$b]}" ] || missing="$missing $b"; done
  for p in ptp host-local loopback portmap; do [ -x "$CNI/$p" ] || missing="$missing cni-$p"; done
  [ -f "$LOCALPATH_MANIFEST" ] || missing="$missing local-path-storage.yaml"
  [ -z "$missing" ] || { echo "build-node-image: not built yet:$missing (run \`make tools kind-tools\`)" >&2; exit 1; }
  [ -x "$PY" ] || { echo "build-node-image: no project venv at $PY (run \`make venv\`)" >&2; exit 1; }
}

MINBASE=$CACHE/debian-$SUITE-minbase
NODEBASE=$CACHE/kind-node-base-$SUITE-$(echo "$NODE_PKGS" | sha256sum | cut -c1-8)
PROXYBASE=$CACHE/kube-proxy-base-$SUITE-$(echo "$PROXY_PKGS" | sha256sum | cut -c1-8)
WORK=$OUT/work
ROOTFS=$WORK/rootfs

# a step whose result was already there says `cached` (so no build time is recorded for it)
s_minbase() { [ -f "$MINBASE/.complete" ] && echo cached; debootstrap_base "$SUITE" "$MINBASE"; }

# rootfs_from_minbase DIR PKGS: a copy of the minbase rootfs with PKGS installed (cached by DIR/.complete)
rootfs_from_minbase() {
  local dir=$1 pkgs=$2
  [ -f "$dir/.complete" ] && return 0
  rm -rf "$dir"; cp -a "$MINBASE" "$dir"; rm -f "$dir/.complete"
  # shellcheck disable=SC2086
  chroot_apt "$dir" $pkgs
  rm -rf "$dir/usr/share/doc/"* "$dir/usr/share/man/"* "$dir/var/cache/debconf/"*-old
}

s_nodebase() {
  [ -f "$NODEBASE/.complete" ] && { echo cached; return 0; }
  rootfs_from_minbase "$NODEBASE" "$NODE_PKGS"
  # trim systemd as kind's base image does
  chroot "$NODEBASE" sh -c '
    find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
    echo "ReadKMsg=no" >> /etc/systemd/journald.conf
    ln -sf /usr/lib/systemd/systemd /sbin/init'
  touch "$NODEBASE/.complete"
}

s_proxybase() {
  [ -f "$PROXYBASE/.complete" ] && echo cached
  rootfs_from_minbase "$PROXYBASE" "$PROXY_PKGS"
  touch "$PROXYBASE/.complete"
}

# --- component images -------------------------------------------------------------------------------------------
s_images() {
  rm -rf "$WORK/images"; mkdir -p "$WORK/images"
  static_base "$WORK/static"
  gcc -static -Os -o "$WORK/pause" "$here/node/pause.c"; strip "$WORK/pause"
  local img name ref sandbox
  sandbox=$(sed -n 's/^[[:space:]]*sandbox_image[[:space:]]*=[[:space:]]*"\(.*\)".*/\1/p' "$BASEFILES/etc/containerd/config.toml")
  { "${BIN[kubeadm]}" config images list --kubernetes-version "$K"; echo "$sandbox"; } | sort -u > "$WORK/images.txt"
  cat "$WORK/images.txt"
  local it="python3 $here/imagetar.py --layer-cache $WORK/layers"
  while read -r ref; do
    name=${ref%:*}; name=${name##*/}
    img=$WORK/images/$name-${ref##*:}.tar
    case $name in
      kube-apiserver|kube-controller-manager|kube-scheduler|etcd)
        $it -o "$img" --tag "$ref" --rootfs "$WORK/static" --add "${BIN[$name]}=/usr/local/bin/$name" ;;
      kube-proxy)
        $it -o "$img" --tag "$ref" --rootfs "$PROXYBASE" --add "${BIN[kube-proxy]}=/usr/local/bin/kube-proxy" ;;
      coredns)
        $it -o "$img" --tag "$ref" --rootfs "$WORK/static" --add "${BIN[coredns]}=/coredns" --entrypoint '["/coredns"]' ;;
      pause)
        $it -o "$img" --tag "$ref" --add "$WORK/pause=/pause" --entrypoint '["/pause"]' ;;
      *) echo "kubeadm asks for an image this builder does not make: $ref" >&2; return 1 ;;
    esac
  done < "$WORK/images.txt"
  # kind's default StorageClass: the provisioner and the helper its Pods run to make and remove volume directories
  $it -o "$WORK/images/local-path-provisioner.tar" --tag "${STORAGE_IMAGES[0]}" --rootfs "$WORK/static" \
    --add "${BIN[local-path-provisioner]}=/usr/local/bin/local-path-provisioner"
  busybox_rootfs "$WORK/busybox"
  $it -o "$WORK/images/local-path-helper.tar" --tag "${STORAGE_IMAGES[1]}" --rootfs "$WORK/busybox" --cmd '["sh"]'
}

# --- the node rootfs ----------------------------------------------------------------------------------------------
s_rootfs() {
  rm -rf "$ROOTFS"; cp -a "$NODEBASE" "$ROOTFS"; rm -f "$ROOTFS/.complete"
  local f
  # kind's base files, with the modes its Dockerfile gives them
  install -m 0755 "$BASEFILES"/usr/local/bin/* "$ROOTFS/usr/local/bin/"
  mkdir -p "$ROOTFS/kind/bin" "$ROOTFS/kind/manifests" "$ROOTFS/LICENSES" "$ROOTFS/etc/containerd" \
    "$ROOTFS/etc/systemd/system/kubelet.service.d" "$ROOTFS/etc/kubernetes/manifests" "$ROOTFS/opt/cni/bin"
  cp -r "$BASEFILES"/kind/. "$ROOTFS/kind/"; chmod -R u+w,go-w "$ROOTFS/kind"
  find "$ROOTFS/kind" -type f -exec chmod 0644 {} +; chmod 0755 "$ROOTFS/kind" "$ROOTFS"/kind/bin "$ROOTFS"/kind/bin/*
  install -m 0644 "$BASEFILES"/LICENSES/* "$ROOTFS/LICENSES/"
  for f in "$BASEFILES"/etc/*; do [ -f "$f" ] && install -m 0644 "$f" "$ROOTFS/etc/"; done
  install -m 0644 "$BASEFILES"/etc/containerd/* "$ROOTFS/etc/containerd/"
  # lowering a process's oom_score_adj needs CAP_SYS_RESOURCE, which these machines' bounding set lacks: containerd
  # then keeps every container's oom_score_adj at or above its own (as kind does for rootless nodes)
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$ROOTFS/etc/containerd/config.toml"
  grep -q 'restrict_oom_score_adj = true' "$ROOTFS/etc/containerd/config.toml"
  install -m 0644 "$BASEFILES"/etc/default/* "$ROOTFS/etc/default/"
  install -m 0644 "$BASEFILES"/etc/sysctl.d/* "$ROOTFS/etc/sysctl.d/"
  for f in "$BASEFILES"/etc/systemd/system/*; do [ -f "$f" ] && install -m 0644 "$f" "$ROOTFS/etc/systemd/system/"; done
  install -m 0644 "$BASEFILES"/etc/systemd/system/kubelet.service.d/* "$ROOTFS/etc/systemd/system/kubelet.service.d/"
  # the project's binaries
  for f in containerd ctr containerd-shim-runc-v2 crictl; do install -m 0755 "${BIN[$f]}" "$ROOTFS/usr/local/bin/"; done
  install -m 0755 "${BIN[runc]}" "$ROOTFS/usr/local/sbin/runc"
  for f in kubelet kubeadm kubectl; do install -m 0755 "${BIN[$f]}" "$ROOTFS/usr/bin/"; done
  for f in ptp host-local loopback portmap bridge; do [ -x "$CNI/$f" ] && install -m 0755 "$CNI/$f" "$ROOTFS/opt/cni/bin/"; done
  "${BIN[ctr]}" oci spec | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' > "$ROOTFS/etc/containerd/cri-base.json"
  # the static CNI, kind's manifests, the version
  install -m 0755 "$here/node/rayconf-cni.sh" "$ROOTFS/kind/bin/rayconf-cni.sh"
  install -m 0644 "$here/node/12-rayconf-cni.conf" "$ROOTFS/etc/systemd/system/kubelet.service.d/"
  install -m 0644 "$here/node/default-cni.yaml" "$ROOTFS/kind/manifests/"
  (cd "$here/../.." && "$PY" -m rayconformance.clusters.kind.storage "$LOCALPATH_MANIFEST" "${STORAGE_IMAGES[@]}") \
    > "$ROOTFS/kind/manifests/default-storage.yaml"
  echo "$K" > "$ROOTFS/kind/version"
  chroot "$ROOTFS" sh -c 'systemctl enable kubelet.service containerd.service undo-mount-hacks.service &&
    systemctl mask systemd-binfmt.service systemd-modules-load.service'
}

# the component images into the rootfs's containerd (k8s.io namespace, pinned, not unpacked), by the same
# containerd version, run for the import only in empty network, mount and PID namespaces
s_import() {
  local tmp; tmp=$(mktemp -d /run/rayconf-node-import.XXXXXX)
  mkdir -p "$ROOTFS/var/lib/containerd"
  cat > "$tmp/config.toml" <<TOML
version = 3
root = "$ROOTFS/var/lib/containerd"
state = "$tmp/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.internal.v1.opt", "io.containerd.podsandbox.controller.v1.podsandbox"]
[grpc]
  address = "$tmp/containerd.sock"
[ttrpc]
  address = "$tmp/containerd.sock.ttrpc"
TOML
  unshare --net --mount --pid --fork --kill-child "${BIN[containerd]}" --config "$tmp/config.toml" >"$tmp/containerd.log" 2>&1 &
  local pid=$! i ok=""
  for i in $(seq 30); do [ -S "$tmp/containerd.sock" ] && { ok=1; break; }; sleep 0.5; done
  [ -n "$ok" ] || { cat "$tmp/containerd.log"; kill -KILL $pid; return 1; }
  local ctr=("${BIN[ctr]}" --address "$tmp/containerd.sock" --namespace k8s.io) rc=0 f
  for f in "$WORK"/images/*.tar; do
    echo "importing $f"
    "${ctr[@]}" images import --no-unpack --digests --label io.cri-containerd.pinned=pinned "$f" || { rc=1; break; }
  done
  [ $rc = 0 ] && "${ctr[@]}" images list -q
  kill -TERM "$(pgrep -P $pid)" 2>/dev/null || true
  for i in $(seq 20); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
  kill -KILL $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
  cat "$tmp/containerd.log"; rm -rf "$tmp"
  return $rc
}

s_archive() {
  python3 "$here/imagetar.py" -o "$OUT/node-image.tar" --tag "$TAG" --rootfs "$ROOTFS" --layer-cache "$WORK/layers" \
    --entrypoint '["/usr/local/bin/entrypoint", "/sbin/init"]' --env container=docker --stop-signal 'SIGRTMIN+3'
  rm -rf "$WORK"
}

t0=$(stamp)
echo "build-node-image: building $TAG (logs: $LOGS/node-image-*.log)"
mkdir -p "$OUT"
step minbase s_minbase
step nodebase s_nodebase
step proxybase s_proxybase
[ "${1:-}" = --bases ] && exit 0
check_built
step images s_images
step rootfs s_rootfs
step import s_import
step archive s_archive
printf 'NODE_IMAGE=%s\nNODE_IMAGE_ARCHIVE=%s\n' "$TAG" "$OUT/node-image.tar" > "$ENVFILE"
for old in "$CACHE/kind-node-$K"-*/; do [ "${old%/}" = "$OUT" ] || rm -rf "$old"; done   # superseded builds
record_build node-image "$TAG" "$t0"
echo "build-node-image: $TAG built in $(( $(date +%s) - t0 ))s -> $OUT/node-image.tar"
