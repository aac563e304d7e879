"""clusters/local/build-tools.sh downloads the next components' modules while one compiles, each fetch once (a
fake `go` records what runs when; nothing is downloaded or built)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_TOOLS = REPO / "clusters" / "local" / "build-tools.sh"

FAKE_GO = r'''#!/usr/bin/env bash
# a fake go: logs "<start> <end> <dir> <args>", sleeps where go would download or compile, writes what go would
set -eu
log() { echo "$1 $(date +%s.%N) $PWD $ARGS" >> "$FAKE_GO_LOG"; }
ARGS="$*"; t=$(date +%s.%N)
case "$1 ${2:-}" in
  "mod init") echo "module $3" > go.mod ;;
  "mod edit"|"mod download") ;;
  "list -m") gm=$FAKE_GO_DIR/upstream.mod
             printf 'replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n)\n' > "$gm"; echo "{\"GoMod\": \"$gm\"}" ;;
  "get -tool") sleep 1 ;;
  "env GOMODCACHE") echo "$FAKE_GO_DIR/mod" ;;
  "install -n") sleep 1 ;;
  "install "*) sleep 0.3; mkdir -p "$GOBIN"; pkg=${!#}; pkg=${pkg%@*}; touch "$GOBIN/${pkg##*/}"; chmod +x "$GOBIN/${pkg##*/}" ;;
  "build "*) sleep 2
             out=""; prev=""; for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
             case $out in
               */) mkdir -p "$out"; for a in "$@"; do case $a in k8s.io/kubernetes/cmd/*) touch "$out/${a##*/}"; chmod +x "$out/${a##*/}";; esac; done ;;
               *) mkdir -p "$(dirname "$out")"; touch "$out"; chmod +x "$out" ;;
             esac ;;
esac
log "$t"
'''


def run(tmp_path: Path, *components: str) -> subprocess.CompletedProcess:
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    (bindir / "go").write_text(FAKE_GO)
    (bindir / "go").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "RAYCONF_CACHE": str(tmp_path / "cache"),
           "FAKE_GO_LOG": str(tmp_path / "go.log"), "FAKE_GO_DIR": str(tmp_path)}
    return subprocess.run(["bash", str(BUILD_TOOLS), *components], env=env, capture_output=True, text=True,
                          timeout=120)


def calls(tmp_path: Path) -> list[tuple[float, float, str]]:
    out = []
    for line in (tmp_path / "go.log").read_text().splitlines():
        start, end, _, args = line.split(" ", 3)
        out.append((float(start), float(end), args))
    return out


def test_the_next_components_download_while_the_first_compiles(tmp_path):
    r = run(tmp_path, "etcd", "kubernetes", "coredns")
    assert r.returncode == 0, r.stdout + r.stderr
    cache = tmp_path / "cache"
    assert (cache / "etcd-v3.6.14" / "bin" / "etcd").exists()
    assert (cache / "kubernetes-v1.36.3" / "bin" / "kube-apiserver").exists()
    assert (cache / "coredns-v1.14.7" / "bin" / "coredns").exists()
    log = calls(tmp_path)
    etcd_build = next(c for c in log if c[2].startswith("build") and "etcd" in c[2])
    k8s_get = [c for c in log if c[2].startswith("get -tool k8s.io/kubernetes")]
    coredns_fetch = [c for c in log if c[2].startswith("install -n github.com/coredns")]
    assert len(k8s_get) == 1, "the Kubernetes modules are fetched once"
    assert k8s_get[0][0] < etcd_build[1], "the Kubernetes modules download while etcd compiles"
    assert coredns_fetch and coredns_fetch[0][0] < etcd_build[1] + 3, "CoreDNS's next"
    assert "build-tools: kubernetes modules fetched ahead in" in r.stdout


def test_built_components_fetch_nothing(tmp_path):
    assert run(tmp_path, "etcd", "kubernetes").returncode == 0
    (tmp_path / "go.log").unlink()
    r = run(tmp_path, "etcd", "kubernetes")
    assert r.returncode == 0 and "etcd v3.6.14 cached" in r.stdout and "kubernetes v1.36.3 cached" in r.stdout
    assert not (tmp_path / "go.log").exists()
    assert "fetched ahead" not in r.stdout


def test_a_failed_fetch_leaves_no_marker_and_fails_the_build(tmp_path):
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "go").write_text("#!/bin/sh\n[ \"$1 $2\" = 'get -tool' ] && { echo 'go: proxy said no' >&2; exit 1; }\n"
                               "[ \"$1 $2\" = 'mod init' ] && echo \"module $3\" > go.mod\nexit 0\n")
    (bindir / "go").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "RAYCONF_CACHE": str(tmp_path / "cache")}
    r = subprocess.run(["bash", str(BUILD_TOOLS), "etcd"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "proxy said no" in r.stderr
    assert not (tmp_path / "cache" / "etcd-v3.6.14" / "src" / ".fetched").exists()


def test_fetch_only_components_are_downloaded_not_built(tmp_path):
    r = run(tmp_path, "etcd", "fetch:kuberay@v1.6.1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "build-tools: kuberay v1.6.1 modules fetched ahead in" in r.stdout
    assert any(c[2] == "install -n github.com/ray-project/kuberay/ray-operator@v1.6.1" for c in calls(tmp_path))
    assert not (tmp_path / "cache" / "kuberay-v1.6.1").exists()
