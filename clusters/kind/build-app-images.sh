#!/usr/bin/env bash
# Builds, offline, the application images the suite runs on kind, under the public names and tags the samples
# and profiles use (so samples stay unchanged), as `docker load` / `kind load image-archive` archives.
# Usage: build-app-images.sh [image ...]   (ray kuberay redis python busybox traefik; default: all)
#
#   rayproject/ray:<v>                 one per Ray version ($RAY_VERSIONS, or RAY_IMAGE_VERSIONS="2.60.0 2.46.0"):
#                                      Debian python3 + a venv with ray[default,serve] from PyPI (clusters/local/
#                                      ray-constraints.txt), bash, wget; user ray (1000:100) as upstream
#   quay.io/kuberay/operator:<v>       the KubeRay binary the project builds (make tools), as /manager, for each
#                                      of $KUBERAY_VERSIONS that is built, and for each source-tree build in the
#                                      cache (kuberay-tree-<key>: tag tree-<key>;
#                                      src/rayconformance/operator/source_tree.py), or only
#                                      the tags in KUBERAY_IMAGE_TAGS="v1.6.2 tree-59d663aeec13" when set
#   quay.io/kuberay/submitter:<v>      with each of those whose build has it (v1.5.0+), its light-weight RayJob
#                                      submitter as /submitter (Dockerfile.submitter.buildx: no base, user 65532)
#   redis:7.4.0                        Debian's redis-server
#   python:3.11-slim                   Debian's python3 (3.11)
#   busybox:1.36                       Debian's busybox-static
#   traefik:$TRAEFIK_VERSION           the Traefik binary the project builds (make tools)
# Archives go to $CACHE/kind-images/, listed in $CACHE/kind-images/index.tsv (name <TAB> archive). An image that
# cannot be built is one line naming it and its log. Where a registry is reachable the published images can be
# pulled instead and this builder is not needed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
SUITE=$KIND_NODE_SUITE
IMAGES=$CACHE/kind-images
PARTS=$CACHE/kind-image-parts
MINBASE=$CACHE/debian-$SUITE-minbase
IT="python3 $here/imagetar.py --layer-cache $PARTS/layers"
REDIS_TAG=7.4.0 PYTHON_TAG=3.11-slim BUSYBOX_TAG=1.36
mkdir -p "$LOGS" "$IMAGES" "$PARTS"
# the images made of Debian packages need root (debootstrap, chroot); the operator's and Traefik's (a binary on a
# static base) do not: a CI runner's user builds its operator tree's image without sudo
ROOT_IMAGES="ray redis python busybox"

built() {  # built NAME ARCHIVE: a real build's archive: indexed, and its time (since `since`) recorded
  index "$1" "$2"; record_build app-image "$1" "$since"
}
index() {  # index NAME ARCHIVE: record where an image's archive is
  touch "$IMAGES/index.tsv"
  { grep -v "^$1	" "$IMAGES/index.tsv" || true; printf '%s\t%s\n' "$1" "$2"; } > "$IMAGES/index.tsv.new"
  mv "$IMAGES/index.tsv.new" "$IMAGES/index.tsv"
}

# debian_part NAME PKGS [SETUP]: minbase + PKGS (+ a shell snippet run in the chroot), cached by its inputs
debian_part() {
  local dir; dir=$PARTS/$1-$SUITE-$(echo "$2 ${3:-}" | sha256sum | cut -c1-8)
  if [ ! -f "$dir/.complete" ]; then
    debootstrap_base "$SUITE" "$MINBASE" >&2
    rm -rf "$dir"; cp -a "$MINBASE" "$dir"; rm -f "$dir/.complete"
    # shellcheck disable=SC2086
    chroot_apt "$dir" $2 >&2
    [ -z "${3:-}" ] || chroot_run "$dir" sh -euc "$3" >&2
    rm -rf "$dir/usr/share/doc/"* "$dir/usr/share/man/"*
    touch "$dir/.complete"
  fi
  echo "$dir"
}

build_ray() {  # one image per Ray version: RAY_IMAGE_VERSIONS, else $RAY_VERSIONS from versions.env
  local v
  for v in ${RAY_IMAGE_VERSIONS:-${RAY_VERSIONS:-$RAY_VERSION}}; do build_ray_version "$v"; done
}

build_ray_version() {
  local v=$1 name=rayproject/ray:$1 out=$IMAGES/ray-$1.tar
  [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; return; }
  since=$(stamp)
  local base venv work
  base=$(debian_part ray-base "python3 python3-venv bash wget ca-certificates procps curl" \
    "groupadd -f -g 100 users; useradd -m -u 1000 -g 100 -s /bin/bash ray")
  venv=$PARTS/ray-venv-$v-$(sha256sum "$here/../local/ray-constraints.txt" | cut -c1-8)
  if [ ! -f "$venv/.complete" ]; then
    work=$PARTS/ray-venv-work; rm -rf "$work" "$venv"; cp -a "$base" "$work"
    cp "$here/../local/ray-constraints.txt" "$work/tmp/ray-constraints.txt"
    # pip trusts what the host's pip trusts (its CA bundle); the host's wheel directory, if any, is offered too
    cp /etc/ssl/certs/ca-certificates.crt "$work/tmp/host-ca.crt"
    local links=""
    if [ -n "${PIP_FIND_LINKS:-}" ] && [ -d "$PIP_FIND_LINKS" ]; then
      mkdir -p "$work/tmp/wheels"; mount --bind -o ro "$PIP_FIND_LINKS" "$work/tmp/wheels"; links=/tmp/wheels
    fi
    local rc=0
    # a clean environment: the host's REQUESTS_CA_BUNDLE etc. would name the rootfs's own bundle and win over PIP_CERT
    chroot_run "$work" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CERT=/tmp/host-ca.crt \
      ${links:+PIP_FIND_LINKS=$links} ${PIP_INDEX_URL:+PIP_INDEX_URL=$PIP_INDEX_URL} \
      ${PIP_EXTRA_INDEX_URL:+PIP_EXTRA_INDEX_URL=$PIP_EXTRA_INDEX_URL} sh -euc "python3 -m venv /opt/ray &&
      /opt/ray/bin/pip install -q --no-cache-dir --disable-pip-version-check -c /tmp/ray-constraints.txt \
      'ray[default,serve]==$v'" || rc=$?
    [ -z "$links" ] || umount "$work/tmp/wheels"
    [ $rc = 0 ] || return $rc
    mkdir -p "$venv/opt"; mv "$work/opt/ray" "$venv/opt/ray"; rm -rf "$work"
    touch "$venv/.complete"
  fi
  $IT -o "$out" --tag "$name" --rootfs "$base" --rootfs "$venv" --user 1000:100 --workdir /home/ray \
    --env PATH=/opt/ray/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env HOME=/home/ray \
    --env RAY_USAGE_STATS_ENABLED=0 --env RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT=120 --cmd '["bash"]'
  built "$name" "$out"
}

# kuberay_tags: the KubeRay builds to make images of: KUBERAY_IMAGE_TAGS, else every release of KUBERAY_VERSIONS and
# every source-tree build in the cache
kuberay_tags() {
  if [ -n "${KUBERAY_IMAGE_TAGS:-}" ]; then echo "$KUBERAY_IMAGE_TAGS"; return; fi
  local d tags=$KUBERAY_VERSIONS
  for d in "$CACHE"/kuberay-tree-*; do [ -x "$d/bin/ray-operator" ] && tags="$tags ${d##*/kuberay-}"; done
  echo "$tags"
}

build_kuberay() {
  local v static=$PARTS/static built=0
  static_base "$static"
  for v in $(kuberay_tags); do
    local bin=$CACHE/kuberay-$v/bin/ray-operator name=quay.io/kuberay/operator:$v out=$IMAGES/kuberay-operator-$v.tar
    [ -x "$bin" ] || { echo "build-app-images: KubeRay $v not built (make tools); skipped"; continue; }
    built=1
    build_kuberay_submitter "$v" "$static"
    [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; continue; }
    since=$(stamp)
    $IT -o "$out" --tag "$name" --rootfs "$static" --add "$bin=/manager" --entrypoint '["/manager"]' --user 65532:65532
    built "$name" "$out"
  done
  [ $built = 1 ] || { echo "no KubeRay version is built yet: run \`make tools\`" >&2; return 1; }
}

# build_kuberay_submitter V STATIC: the submitter image of KubeRay build V, when the build has its submitter
build_kuberay_submitter() {
  local v=$1 bin=$CACHE/kuberay-$1/bin/submitter name=quay.io/kuberay/submitter:$1 out=$IMAGES/kuberay-submitter-$1.tar
  [ -x "$bin" ] || { echo "build-app-images: KubeRay $v has no submitter built; no $name"; return 0; }
  [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; return 0; }
  since=$(stamp)
  $IT -o "$out" --tag "$name" --rootfs "$2" --add "$bin=/submitter" --entrypoint '["/submitter"]' --user 65532:65532
  built "$name" "$out"
}

# debian_image NAME FILE PART PKGS SETUP IMAGETAR-ARGS...: a small image of Debian packages (debian_part)
debian_image() {
  local name=$1 out=$IMAGES/$2.tar part=$3 pkgs=$4 setup=$5 base; shift 5
  [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; return; }
  since=$(stamp)
  base=$(debian_part "$part" "$pkgs" "$setup")
  $IT -o "$out" --tag "$name" --rootfs "$base" "$@"
  built "$name" "$out"
}

build_redis() {
  debian_image "redis:$REDIS_TAG" "redis-$REDIS_TAG" redis "redis-server" "mkdir -p /data" \
    --workdir /data --cmd '["redis-server"]'
}

build_python() {
  debian_image "python:$PYTHON_TAG" "python-$PYTHON_TAG" python "python3 ca-certificates" \
    "ln -sf python3 /usr/bin/python" --cmd '["python3"]'
}

build_busybox() {
  local name=busybox:$BUSYBOX_TAG out=$IMAGES/busybox-$BUSYBOX_TAG.tar dir=$PARTS/busybox
  [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; return; }
  since=$(stamp)
  busybox_rootfs "$dir"
  $IT -o "$out" --tag "$name" --rootfs "$dir" --cmd '["sh"]'
  built "$name" "$out"
}

build_traefik() {
  local name=traefik:$TRAEFIK_VERSION out=$IMAGES/traefik-$TRAEFIK_VERSION.tar static=$PARTS/static
  local bin=$CACHE/traefik-$TRAEFIK_VERSION/bin/traefik
  [ -f "$out" ] && { index "$name" "$out"; echo "build-app-images: $name cached"; return; }
  since=$(stamp)
  [ -x "$bin" ] || { echo "Traefik $TRAEFIK_VERSION is not built yet: run \`make tools\`" >&2; return 1; }
  static_base "$static"
  $IT -o "$out" --tag "$name" --rootfs "$static" --add "$bin=/usr/local/bin/traefik" --entrypoint '["traefik"]'
  built "$name" "$out"
}

all="ray kuberay redis python busybox traefik"
start=$(date +%s)
for c in ${*:-$all}; do
  case $c in
    ray|kuberay|redis|python|busybox|traefik)
      case " $ROOT_IMAGES " in
        *" $c "*) [ "$(id -u)" = 0 ] || { echo "build-app-images: image $c needs root (debootstrap, chroot)" >&2; exit 2; } ;;
      esac
      log=$LOGS/app-image-$c.log; t=$(date +%s)
      set +e; ( set -e; "build_$c" ) >"$log" 2>&1; rc=$?; set -e   # (not in an `if`: that would disable set -e)
      if [ $rc != 0 ]; then
        echo "build-app-images: image $c failed; see $log ($(grep -v '^\s*$' "$log" | tail -1))" >&2; exit 1
      fi
      grep -E '^(build-app-images|imagetar):' "$log" || true
      echo "build-app-images: $c done in $(( $(date +%s) - t ))s" ;;
    *) echo "build-app-images: unknown image '$c' (known: $all)" >&2; exit 2 ;;
  esac
done
echo "build-app-images: done in $(( $(date +%s) - start ))s -> $IMAGES (index.tsv)"
