"""Building a cached component on first use: built once, skipped when present, a failed build is one line
naming the component and its log."""
from __future__ import annotations

import subprocess

import pytest

from rayconformance.clusters import toolcache


def test_builds_once_then_reuses(tmp_path, monkeypatch):
    monkeypatch.setattr(toolcache, "CACHE", tmp_path)
    calls = []

    def fake_run(argv, stdout, stderr, env=None):
        calls.append(argv[-1])
        (tmp_path / "kuberay-v9.9.9" / "config").mkdir(parents=True)
        stdout.write("build-tools: kuberay v9.9.9 built\n")
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(toolcache.subprocess, "run", fake_run)
    assert toolcache.ensure("kuberay", "v9.9.9", "config") == tmp_path / "kuberay-v9.9.9"
    assert toolcache.ensure("kuberay", "v9.9.9", "config") == tmp_path / "kuberay-v9.9.9"
    assert calls == ["kuberay@v9.9.9"]


def test_a_failed_build_names_component_and_log(tmp_path, monkeypatch):
    monkeypatch.setattr(toolcache, "CACHE", tmp_path)

    def fake_run(argv, stdout, stderr, env=None):
        stdout.write("go: module github.com/ray-project/kuberay/ray-operator@v0.0.1: not found\n")
        return subprocess.CompletedProcess(argv, 1)

    monkeypatch.setattr(toolcache.subprocess, "run", fake_run)
    with pytest.raises(toolcache.ToolBuildError) as e:
        toolcache.ensure("kuberay", "v0.0.1", "config")
    assert str(e.value) == (f"building kuberay v0.0.1 failed (exit 1): go: module github.com/ray-project/kuberay/"
                            f"ray-operator@v0.0.1: not found; see {tmp_path}/logs/build-kuberay-v0.0.1.log")


def test_an_unwritable_cache_is_one_line(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setattr(toolcache, "CACHE", blocked)  # a file where the cache directory should be
    with pytest.raises(toolcache.ToolBuildError, match="building kuberay v1.6.1: .*run `make tools` as root"):
        toolcache.ensure("kuberay", "v1.6.1", "config")


def test_a_patched_operator_source_is_its_own_build(tmp_path, monkeypatch):
    """`source.patch` builds the release patched under `<version>-<patch>-<hash>`; editing the patch is a new tag."""
    from dataclasses import replace

    from rayconformance.operator import source
    from rayconformance.operator.install_section import InstallSection, SectionError, Source

    monkeypatch.setattr(toolcache, "CACHE", tmp_path)
    patch = tmp_path / "raycluster-wrong.patch"
    patch.write_text("--- a/x\n+++ b/x\n")
    builds = []

    def fake_run(argv, stdout, stderr, env=None):
        builds.append((argv[-1], env["KUBERAY_BASE"], env["KUBERAY_PATCH"]))
        (tmp_path / f"kuberay-{argv[-1].split('@')[1]}" / "config").mkdir(parents=True)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(toolcache.subprocess, "run", fake_run)
    src = Source(name="kuberay", version="v1.6.1", patch=patch.name)
    first = source.source_dir(InstallSection(source=src), tmp_path)
    patch.write_text("--- a/x\n+++ b/x\n@@\n")
    second = source.source_dir(InstallSection(source=src), tmp_path)
    assert first.name.startswith("kuberay-v1.6.1-raycluster-wrong-") and second.name != first.name
    assert [b[1:] for b in builds] == [("v1.6.1", str(patch))] * 2
    with pytest.raises(SectionError, match="patch .*missing.patch not found"):
        source.source_dir(InstallSection(source=replace(src, patch="missing.patch")), tmp_path)


def test_a_cache_under_tmp_is_refused_in_one_line():
    from pathlib import Path

    from rayconformance.clusters.local.paths import cache_problem

    problem = cache_problem(Path("/tmp/rc-cache"))
    assert problem and "\n" not in problem and "RAYCONF_CACHE" in problem and "outside /tmp" in problem
    assert cache_problem(Path("/var/cache/rayconformance")) is None
