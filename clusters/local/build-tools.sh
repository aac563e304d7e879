#!/usr/bin/env bash
# Builds the local test bed's Go components into a cache outside the repo, keyed by version.
# Usage: build-tools.sh [component[@version] ...]   (components: etcd kubernetes coredns kuberay traefik gatewayapi
#        localpath, and kubenode: kubelet and kubeadm for kind's node image, not built by default; kubectl: kubectl
#        alone (kubectl-<version>), for a kind run on a user's Docker without one, not built by default;
#        default: all; `kuberay@v1.6.1` builds that one KubeRay release instead of every one in KUBERAY_VERSIONS;
#        with KUBERAY_BASE=v1.6.1 KUBERAY_PATCH=file, `kuberay@<tag>` builds that release patched, as <tag>;
#        with RAYCONF_OPERATOR_TREE=dir, `kuberay@tree-<key>` builds that KubeRay source tree (key: its commit, and a
#        digest of its uncommitted changes: `python -m rayconformance.operator.source_tree build DIR` computes it);
#        helm: the Helm CLI at HELM_VERSION; actionlint: the workflow linter `make test` checks the CI recipe with,
#        not built by default; certmanager: cert-manager's controller and CRDs at CERT_MANAGER_VERSION from the clone
#        at RAYCONF_CERTMANAGER_TREE (its dependencies from the Go module proxy), not built by default; kind: the kind CLI at KIND_VERSION (clusters/kind/build-kind-tools.sh), for a kind
#        run on a user's Docker, not built by default)
# A KubeRay build also holds bin/submitter, KubeRay's light-weight RayJob submitter (rayjob-submitter/cmd, v1.5.0+)
# built from the same source; a cached build without it gets just the submitter built.
# Already-built components are skipped. Prints what it builds and how long each took.
# While one component compiles, the modules of the next ones are downloaded in the background (a download is
# network- and disk-bound, a compile takes both cores): each component's fetch holds a lock its build waits for.
# `fetch:<component>[@version]` only downloads (e.g. the operator a run builds when it brings its cluster up).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
CACHE=${RAYCONF_CACHE:-/var/cache/rayconformance}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
command -v go >/dev/null || { echo "build-tools: 'go' not found on PATH; install Go >= 1.25 and retry" >&2; exit 2; }

stamp() { date +%s; }
BUILD_TIMES=${RAYCONF_LOGS:-$CACHE/logs}/build-times.tsv   # one line per real build: UTC time, what, version, seconds
# report WHAT START DIR: a real build's line, and its time in $BUILD_TIMES under the component's name (the estimate of
# its next build; WHAT: "<name>[ <version>]")
report() {
  local secs=$(( $(stamp) - $2 )) what=${1%% *} ver=${1#* }; [ "$ver" = "$1" ] && ver=-
  [ "$what" = local-path-provisioner ] && what=localpath
  echo "build-tools: $1 built in ${secs}s -> $3"
  { mkdir -p "$(dirname "$BUILD_TIMES")" && printf '%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$what" "$ver" \
    "$secs" >> "$BUILD_TIMES"; } 2>/dev/null || true
}
# wrapper_module NAME MODULE@VERSION: `go mod init` a wrapper module here; print the path of upstream's go.mod
wrapper_module() {
  go mod init "rayconformance.local/$1" >/dev/null 2>&1
  go list -m -json "$2" | python3 -c 'import json,sys;print(json.load(sys.stdin)["GoMod"])'
}

# fetched DIR CMD...: run CMD (downloads) in DIR once: under DIR/../.fetch.lock, and not again once DIR/.fetched
# is there (an interrupted fetch leaves no marker: the next one starts DIR over)
fetched() {
  local dir=$1; shift
  mkdir -p "$(dirname "$dir")"
  (
    flock 8
    [ -f "$dir/.fetched" ] && exit 0
    rm -rf "$dir"; mkdir -p "$dir" && cd "$dir"
    "$@"
    touch "$dir/.fetched"
  ) 8>"$(dirname "$dir")/.fetch-$(basename "$dir").lock"
}

fetch_etcd_src() {
  go mod init rayconformance.local/etcdbin >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
}

# module_build NAME VERSION FETCH PACKAGE VERSION_VAR: PACKAGE of the wrapper module FETCH makes, built once into
# $CACHE/NAME-VERSION/bin/NAME with VERSION stamped into VERSION_VAR
module_build() {
  local name=$1 version=$2 fetch=$3 pkg=$4 var=$5 dir=$CACHE/$1-$2
  [ -x "$dir/bin/$name" ] && { echo "build-tools: $name $version cached"; return; }
  echo "build-tools: building $name $version"; local t=$(stamp)
  fetched "$dir/src" "$fetch"
  cd "$dir/src"
  go build -trimpath -ldflags "-s -w -X $var=$version" -o "$dir/bin/$name" "$pkg"
  report "$name" "$t" "$dir/bin"
}

build_etcd() {
  module_build etcd "$ETCD_VERSION" fetch_etcd_src go.etcd.io/etcd/server/v3 go.etcd.io/etcd/api/v3/version.GitSHA
}

# build_k8s_cmds NAME SRC CMDS: Kubernetes commands (k8s.io/kubernetes/cmd/<c>) at $KUBERNETES_VERSION into
# kubernetes-<version>/bin, from a wrapper module in kubernetes-<version>/SRC (one per component, so they can build
# at once; the go build cache is shared)
build_k8s_cmds() {
  local name=$1 K=$KUBERNETES_VERSION dir=${K8S_DIR:-$CACHE/kubernetes-$KUBERNETES_VERSION} cmds=$3
  local missing=""
  for c in $cmds; do [ -x "$dir/bin/$c" ] || missing="$missing $c"; done
  [ -z "$missing" ] && { echo "build-tools: $name $K cached"; return; }
  echo "build-tools: building $name $K:$missing"; local t=$(stamp)
  local minor; minor=$(echo "$K" | cut -d. -f2)
  fetched "$dir/$2" fetch_k8s_src "$2" "$cmds"
  cd "$dir/$2"
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  local pk=""; for c in $missing; do pk="$pk k8s.io/kubernetes/cmd/$c"; done
  mkdir -p "$dir/bin"
  # shellcheck disable=SC2086
  go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ld" -o "$dir/bin/" $pk
  report "$name" "$t" "$dir/bin"
}

# fetch_k8s_src SRC CMDS: the wrapper module (here) of build_k8s_cmds, and the modules its commands need
fetch_k8s_src() {
  local K=$KUBERNETES_VERSION; local S=v0.${K#v1.}
  local gomod; gomod=$(wrapper_module "k8s-$1" "k8s.io/kubernetes@$K")
  # every staging module upstream replaces with ./staging/... maps to its published twin
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$gomod" | awk '{print $1}' |
    while read -r m; do go mod edit -replace "$m=$m@$S"; done
  local pkgs="" c; for c in $2; do pkgs="$pkgs k8s.io/kubernetes/cmd/$c@$K"; done
  # shellcheck disable=SC2086
  go get -tool $pkgs
}

# the local bed's control plane, kube-proxy and kubectl
build_kubernetes() { build_k8s_cmds kubernetes src "kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl"; }
# kubectl alone, into kubectl-<version>/bin: a kind run on a user's Docker without kubectl needs no control plane
build_kubectl() { K8S_DIR=$CACHE/kubectl-$KUBERNETES_VERSION build_k8s_cmds kubectl src kubectl; }
# a kind node's kubelet and kubeadm (clusters/kind/build-kind-tools.sh asks for them)
build_kubenode() { build_k8s_cmds "kubelet, kubeadm" node-src "kubelet kubeadm"; }

build_coredns() {
  local dir=$CACHE/coredns-$COREDNS_VERSION
  [ -x "$dir/bin/coredns" ] && { echo "build-tools: coredns $COREDNS_VERSION cached"; return; }
  echo "build-tools: building coredns $COREDNS_VERSION"; local t=$(stamp)
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  report coredns "$t" "$dir/bin"
}

# kuberay_source VERSION: the ray-operator module's source directory in the Go module cache (downloaded if missing)
kuberay_source() {
  local m="github.com/ray-project/kuberay/ray-operator@$1"
  (cd /tmp && go mod download "$m") >&2
  echo "$(go env GOMODCACHE)/$m"
}

# build_submitter DIR SRC: KubeRay's light-weight RayJob submitter from the ray-operator module source SRC (its
# rayjob-submitter/cmd, as Dockerfile.submitter.buildx's binary) into DIR/bin/submitter; nothing for a release
# without it (before v1.5.0), but the marker bin/.no-submitter, so a cached build is not looked at again
build_submitter() {
  local dir=$1 src=$2
  if [ ! -d "$src/rayjob-submitter/cmd" ]; then
    echo "build-tools: $(basename "$dir") has no rayjob-submitter/cmd (KubeRay v1.5.0+): no submitter"
    mkdir -p "$dir/bin"; touch "$dir/bin/.no-submitter"; return 0
  fi
  mkdir -p "$dir/bin"
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$dir/bin/submitter.new" ./rayjob-submitter/cmd)
  mv "$dir/bin/submitter.new" "$dir/bin/submitter"
}
# submitter_done DIR: the build in DIR has its submitter, or its source has none
submitter_done() { [ -x "$1/bin/submitter" ] || [ -e "$1/bin/.no-submitter" ]; }

build_kuberay() {
  local v
  for v in $KUBERAY_VERSIONS; do
    local dir=$CACHE/kuberay-$v
    if [ -x "$dir/bin/ray-operator" ]; then
      if ! submitter_done "$dir"; then
        echo "build-tools: building kuberay $v's submitter"; local t=$(stamp)
        build_submitter "$dir" "$(kuberay_source "$v")"
        [ -x "$dir/bin/submitter" ] && report "kuberay-submitter $v" "$t" "$dir/bin"
      fi
      echo "build-tools: kuberay $v cached"; continue
    fi
    echo "build-tools: building kuberay $v"; local t=$(stamp)
    GOBIN=$dir/bin go install -trimpath -ldflags "-s -w" "github.com/ray-project/kuberay/ray-operator@$v"
    # CRDs and manifests from the same module version, and its submitter
    local src; src=$(kuberay_source "$v")
    build_submitter "$dir" "$src"
    rm -rf "$dir/config"; cp -r "$src/config" "$dir/config"; chmod -R u+w "$dir/config"
    report "kuberay $v" "$t" "$dir/bin"
  done
}

# build_kuberay_patched TAG: KUBERAY_BASE's source with KUBERAY_PATCH applied (`patch -p1` at the module root),
# built under its own tag (a deliberately broken operator for tests/breaks, or a vendor's patched build)
build_kuberay_patched() {
  local v=$1 dir=$CACHE/kuberay-$1
  [ -n "${KUBERAY_BASE:-}" ] && [ -f "${KUBERAY_PATCH:-}" ] ||
    { echo "build-tools: kuberay $v needs KUBERAY_BASE (a release) and KUBERAY_PATCH (a patch file)" >&2; exit 2; }
  local only_submitter=""
  if [ -x "$dir/bin/ray-operator" ]; then
    submitter_done "$dir" && { echo "build-tools: kuberay $v cached"; return; }
    only_submitter=1
  fi
  echo "build-tools: building kuberay $v${only_submitter:+ (its submitter)} ($KUBERAY_BASE + $(basename "$KUBERAY_PATCH"))"
  local t=$(stamp) work=$dir/src
  rm -rf "$work"; mkdir -p "$dir"; cp -r "$(kuberay_source "$KUBERAY_BASE")" "$work"; chmod -R u+w "$work"
  (cd "$work" && patch -p1 --forward --batch < "$KUBERAY_PATCH") ||
    { echo "build-tools: $KUBERAY_PATCH does not apply to kuberay $KUBERAY_BASE" >&2; exit 1; }
  build_submitter "$dir" "$work"
  if [ -n "$only_submitter" ]; then
    rm -rf "$work"; [ ! -x "$dir/bin/submitter" ] || report "kuberay-submitter $v" "$t" "$dir/bin"; return
  fi
  (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$dir/bin/ray-operator" .)
  rm -rf "$dir/config"; cp -r "$work/config" "$dir/config"; rm -rf "$work"
  report "kuberay $v" "$t" "$dir/bin"
}

# build_kuberay_tree TAG: the KubeRay source tree at RAYCONF_OPERATOR_TREE (a clone of the repository, or the
# ray-operator module alone in a git repository), as it is now (committed and uncommitted files; ignored ones left out),
# built under TAG = tree-<commit12>[-dirty-<digest>] (src/rayconformance/operator/source_tree.py computes it). The cache
# holds the binary, the module's config/ and the repository's helm-chart/kuberay-operator/ (when the tree has one).
build_kuberay_tree() {
  local v=$1 dir=$CACHE/kuberay-$1 tree=${RAYCONF_OPERATOR_TREE:-}
  [ -n "$tree" ] && [ -d "$tree" ] ||
    { echo "build-tools: kuberay $v needs RAYCONF_OPERATOR_TREE (a KubeRay source tree), got '${tree}'" >&2; exit 2; }
  local only_submitter=""
  if [ -x "$dir/bin/ray-operator" ] && [ -d "$dir/config" ]; then
    submitter_done "$dir" && { echo "build-tools: kuberay $v cached"; return; }
    only_submitter=1
  fi
  local mod=. chart=""
  [ -f "$tree/ray-operator/go.mod" ] && mod=ray-operator
  [ -d "$tree/helm-chart/kuberay-operator" ] && chart=helm-chart/kuberay-operator
  grep -q '^module github.com/ray-project/kuberay/ray-operator$' "$tree/$mod/go.mod" 2>/dev/null ||
    { echo "build-tools: $tree is no KubeRay tree (no ray-operator/go.mod, nor the ray-operator module's)" >&2; exit 2; }
  local commit; commit=$(git -C "$tree" rev-parse HEAD) ||
    { echo "build-tools: $tree is not a git work tree with a commit" >&2; exit 2; }
  local want=${v#tree-}; want=${want%%-*}
  [ "${commit:0:${#want}}" = "$want" ] ||
    { echo "build-tools: $tree is at ${commit:0:12}, not at $want (it changed after its key was computed)" >&2; exit 1; }
  echo "build-tools: building kuberay $v${only_submitter:+ (its submitter)} from $tree ($mod${chart:+, $chart})"
  local t=$(stamp) work=$dir/src
  rm -rf "$work"; [ -n "$only_submitter" ] || rm -rf "$dir/bin" "$dir/config" "$dir/helm-chart"; mkdir -p "$work"
  # the files as they are now; a file deleted but not yet committed is left out
  (cd "$tree" && git ls-files -z --cached --others --exclude-standard -- "$mod" ${chart:+"$chart"} |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) |
    tar -xf - -C "$work"
  build_submitter "$dir" "$work/$mod"
  if [ -n "$only_submitter" ]; then
    rm -rf "$work"; [ ! -x "$dir/bin/submitter" ] || report "kuberay-submitter $v" "$t" "$dir/bin"; return
  fi
  cp -r "$work/$mod/config" "$dir/config"
  if [ -n "$chart" ]; then mkdir -p "$dir/helm-chart"; cp -r "$work/$chart" "$dir/helm-chart/"; fi
  printf 'tree=%s\ncommit=%s\ntag=%s\ngo=%s\n' "$tree" "$commit" "$v" "$(go env GOVERSION)" > "$dir/source.env"
  # the binary last: it marks the build complete (toolcache.ensure)
  (cd "$work/$mod" && go build -trimpath -ldflags "-s -w" -o "$dir/bin/ray-operator.new" .)
  mv "$dir/bin/ray-operator.new" "$dir/bin/ray-operator"; rm -rf "$work"
  report "kuberay $v" "$t" "$dir/bin"
}

build_helm() {
  local dir=$CACHE/helm-$HELM_VERSION major=${HELM_VERSION%%.*}
  [ -x "$dir/bin/helm" ] && { echo "build-tools: helm $HELM_VERSION cached"; return; }
  echo "build-tools: building helm $HELM_VERSION"; local t=$(stamp)
  local m=helm.sh/helm/$major
  [ "$major" = v2 ] && { echo "build-tools: helm v2 is not supported; pin HELM_VERSION to v3 or v4" >&2; exit 2; }
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w -X $m/internal/version.version=$HELM_VERSION \
    -X $m/internal/version.metadata= -X $m/internal/version.gitTreeState=clean" "$m/cmd/helm@$HELM_VERSION"
  report "helm $HELM_VERSION" "$t" "$dir/bin"
}

fetch_traefik_src() {
  local gomod; gomod=$(wrapper_module traefikbin "github.com/traefik/traefik/v3@$TRAEFIK_VERSION")
  # upstream's module-to-module replaces (forks), taken from its go.mod; local-path replaces are not allowed
  grep -oE '^\s*[^ /]+\.[a-z]+/[^ ]+ => [^ .][^ ]+ v[^ ]+' "$gomod" | awk '{print $1"="$3"@"$4}' |
    while read -r r; do go mod edit -replace "$r"; done
  go get -tool "github.com/traefik/traefik/v3/cmd/traefik@$TRAEFIK_VERSION"
}

build_traefik() {
  module_build traefik "$TRAEFIK_VERSION" fetch_traefik_src github.com/traefik/traefik/v3/cmd/traefik \
    github.com/traefik/traefik/v3/pkg/version.Version
}

build_gatewayapi() {
  local dir=$CACHE/gatewayapi-$GATEWAY_API_VERSION
  [ -d "$dir/crd" ] && { echo "build-tools: gateway-api $GATEWAY_API_VERSION CRDs cached"; return; }
  (cd /tmp && go mod download "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
  local src; src=$(go env GOMODCACHE)/sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION
  mkdir -p "$dir" && cp -r "$src/config/crd" "$dir/crd" && chmod -R u+w "$dir/crd"
  echo "build-tools: gateway-api $GATEWAY_API_VERSION CRDs -> $dir/crd"
}

# Rancher's local-path-provisioner (kind's default StorageClass): the binary, and its upstream manifest
build_localpath() {
  local dir=$CACHE/localpath-$LOCAL_PATH_PROVISIONER_VERSION
  [ -x "$dir/bin/local-path-provisioner" ] && [ -f "$dir/deploy/local-path-storage.yaml" ] &&
    { echo "build-tools: local-path-provisioner $LOCAL_PATH_PROVISIONER_VERSION cached"; return; }
  echo "build-tools: building local-path-provisioner $LOCAL_PATH_PROVISIONER_VERSION"; local t=$(stamp)
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w -X main.VERSION=$LOCAL_PATH_PROVISIONER_VERSION" \
    "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION"
  (cd /tmp && go mod download "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION")
  local src; src=$(go env GOMODCACHE)/github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION
  rm -rf "$dir/deploy"; mkdir -p "$dir/deploy"; cp "$src/deploy/local-path-storage.yaml" "$dir/deploy/"
  chmod -R u+w "$dir/deploy"
  report "local-path-provisioner $LOCAL_PATH_PROVISIONER_VERSION" "$t" "$dir/bin"
}

# cert-manager's controller (cmd/controller: the module github.com/cert-manager/cert-manager/controller-binary, which
# replaces the root module with ../../ and so builds only inside its repository) and the CRDs it serves (deploy/crds),
# from the clone at RAYCONF_CERTMANAGER_TREE, which must be at CERT_MANAGER_COMMIT; its dependencies come from the
# Go module proxy. The binary (bin/certmanager: a tool's binary is named after it, the local provider's image
# rules look for bin/<tool>) last: it marks the build complete.
build_certmanager() {
  local v=$CERT_MANAGER_VERSION dir=$CACHE/certmanager-$CERT_MANAGER_VERSION tree=${RAYCONF_CERTMANAGER_TREE:-}
  [ -x "$dir/bin/certmanager" ] && [ -d "$dir/crd" ] && { echo "build-tools: cert-manager $v cached"; return; }
  [ -n "$tree" ] && [ -f "$tree/cmd/controller/go.mod" ] ||
    { echo "build-tools: cert-manager $v needs RAYCONF_CERTMANAGER_TREE (a clone of cert-manager at $v), got '${tree}'" >&2; exit 2; }
  local commit; commit=$(git -C "$tree" rev-parse HEAD) ||
    { echo "build-tools: $tree is not a git work tree with a commit" >&2; exit 2; }
  [ "$commit" = "$CERT_MANAGER_COMMIT" ] ||
    { echo "build-tools: $tree is at ${commit:0:12}, not at cert-manager $v (${CERT_MANAGER_COMMIT:0:12}): check out the tag" >&2; exit 1; }
  echo "build-tools: building cert-manager $v from $tree"; local t=$(stamp) work=$dir/src
  rm -rf "$work" "$dir/bin" "$dir/crd"; mkdir -p "$work" "$dir/bin"
  (cd "$tree" && git archive "$commit") | tar -xf - -C "$work"
  (cd "$work/cmd/controller" && go build -trimpath -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$v \
    -X github.com/cert-manager/cert-manager/pkg/util.AppGitCommit=$commit" -o "$dir/bin/certmanager.new" .)
  mkdir -p "$dir/crd"; cp "$work"/deploy/crds/*.yaml "$dir/crd/"
  mv "$dir/bin/certmanager.new" "$dir/bin/certmanager"; rm -rf "$work"
  report "cert-manager $v" "$t" "$dir/bin"
}

build_actionlint() {
  local dir=$CACHE/actionlint-$ACTIONLINT_VERSION
  [ -x "$dir/bin/actionlint" ] && { echo "build-tools: actionlint $ACTIONLINT_VERSION cached"; return; }
  echo "build-tools: building actionlint $ACTIONLINT_VERSION"; local t=$(stamp)
  GOBIN=$dir/bin go install -trimpath -ldflags "-s -w" "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
  report "actionlint $ACTIONLINT_VERSION" "$t" "$dir/bin"
}

# prefetch C V: download what component C (at version V, else its pinned one) builds from, building nothing;
# quietly, and only where it is not built yet (a failure here is the build's to report)
prefetch() {
  local c=$1 v=$2 t r; t=$(stamp)
  case $c in
    etcd) [ -x "$CACHE/etcd-$ETCD_VERSION/bin/etcd" ] && return 0
          set -- fetched "$CACHE/etcd-$ETCD_VERSION/src" fetch_etcd_src ;;
    kubernetes) [ -x "$CACHE/kubernetes-$KUBERNETES_VERSION/bin/kubectl" ] && return 0
                set -- fetched "$CACHE/kubernetes-$KUBERNETES_VERSION/src" fetch_k8s_src src \
                  "kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl" ;;
    kubenode) [ -x "$CACHE/kubernetes-$KUBERNETES_VERSION/bin/kubeadm" ] && return 0
              set -- fetched "$CACHE/kubernetes-$KUBERNETES_VERSION/node-src" fetch_k8s_src node-src "kubelet kubeadm" ;;
    coredns) [ -x "$CACHE/coredns-$COREDNS_VERSION/bin/coredns" ] && return 0
             set -- go install -n "github.com/coredns/coredns@$COREDNS_VERSION" ;;
    kuberay) [ -z "${KUBERAY_PATCH:-}" ] || return 0
             for r in ${v:-$KUBERAY_VERSIONS}; do
               case $r in tree-*) ;; *) [ -x "$CACHE/kuberay-$r/bin/ray-operator" ] || prefetch kuberay-release "$r" ;; esac
             done; return 0 ;;
    kuberay-release) set -- go install -n "github.com/ray-project/kuberay/ray-operator@$v"; c=kuberay ;;
    traefik) TRAEFIK_VERSION=${v:-$TRAEFIK_VERSION}
             [ -x "$CACHE/traefik-$TRAEFIK_VERSION/bin/traefik" ] && return 0
             set -- fetched "$CACHE/traefik-$TRAEFIK_VERSION/src" fetch_traefik_src ;;
    localpath) v=${v:-$LOCAL_PATH_PROVISIONER_VERSION}
               [ -x "$CACHE/localpath-$v/bin/local-path-provisioner" ] && return 0
               set -- go install -n "github.com/rancher/local-path-provisioner@$v" ;;
    gatewayapi) v=${v:-$GATEWAY_API_VERSION}
                [ -d "$CACHE/gatewayapi-$v/crd" ] && return 0
                set -- go mod download "sigs.k8s.io/gateway-api@$v" ;;
    actionlint) v=${v:-$ACTIONLINT_VERSION}
                [ -x "$CACHE/actionlint-$v/bin/actionlint" ] && return 0
                set -- go install -n "github.com/rhysd/actionlint/cmd/actionlint@$v" ;;
    *) return 0 ;;
  esac
  (cd /tmp && "$@") >/dev/null 2>&1 || return 0
  echo "build-tools: $c${v:+ $v} modules fetched ahead in $(( $(stamp) - t ))s"
}

all="etcd kubernetes coredns kuberay traefik gatewayapi localpath helm"
# build_one COMPONENT VERSION (VERSION may be empty)
build_one() {
  local c=$1 v=$2
  case $c in
    kuberay) if [ "${v#tree-}" != "$v" ]; then ( build_kuberay_tree "$v" )
             elif [ -n "${KUBERAY_PATCH:-}" ]; then ( build_kuberay_patched "$v" ); else
               ( [ -n "$v" ] && KUBERAY_VERSIONS=$v; build_kuberay ); fi ;;
    traefik) ( [ -n "$v" ] && TRAEFIK_VERSION=$v; build_traefik ) ;;
    localpath) ( [ -n "$v" ] && LOCAL_PATH_PROVISIONER_VERSION=$v; build_localpath ) ;;
    helm) ( [ -n "$v" ] && HELM_VERSION=$v; build_helm ) ;;
    actionlint) ( [ -n "$v" ] && ACTIONLINT_VERSION=$v; build_actionlint ) ;;
    certmanager) ( [ -z "$v" ] || [ "$v" = "$CERT_MANAGER_VERSION" ] ||
                   { echo "build-tools: cert-manager is pinned to $CERT_MANAGER_VERSION (versions.env), not $v" >&2; exit 2; }
                   build_certmanager ) ;;
    etcd|kubernetes|kubectl|kubenode|coredns|gatewayapi) ( "build_$c" ) ;;
    kind) bash "$here/../kind/build-kind-tools.sh" kind ;;
  esac
}

# on a terminal each build's output goes through the progress relay, which shows its time so far and left (from its
# last build in $BUILD_TIMES); elsewhere the output is as is (errors on stderr)
start=$(stamp)
builds=() fetches=()
for arg in ${*:-$all}; do
  case $arg in fetch:*) fetches+=("${arg#fetch:}") ;; *) builds+=("$arg") ;; esac
done
set -- "${builds[@]}"
# from the second component on, and the fetch-only ones, downloaded in the background while the first ones build
ahead=("${builds[@]:1}" "${fetches[@]}")
if [ ${#ahead[@]} -gt 0 ] && [ -z "${BUILD_TOOLS_NO_PREFETCH:-}" ]; then
  ( for arg in "${ahead[@]}"; do c=${arg%%@*}; v=${arg#*@}; [ "$v" = "$arg" ] && v=""; prefetch "$c" "$v"; done ) &
  prefetcher=$!
  trap 'kill "$prefetcher" 2>/dev/null || true' EXIT
fi
for arg in "$@"; do
  c=${arg%%@*}; v=${arg#*@}; [ "$v" = "$arg" ] && v=""
  case " $all kubenode kubectl actionlint certmanager kind " in
    *" $c "*) if [ -t 1 ]; then build_one "$c" "$v" 2>&1 | python3 "$here/../progress.py" relay "building $c" "$c" \
                "$BUILD_TIMES"; else build_one "$c" "$v"; fi ;;
    *) echo "build-tools: unknown component '$c' (known: $all kubenode kubectl actionlint certmanager kind)" >&2; exit 2 ;;
  esac
done
[ -z "${prefetcher:-}" ] || wait "$prefetcher" 2>/dev/null || true
echo "build-tools: done in $(( $(stamp) - start ))s (cache: $CACHE)"
