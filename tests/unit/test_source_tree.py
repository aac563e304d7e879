"""A KubeRay source tree: its build key (commit, and a digest of uncommitted changes), the profile check that asks for
one in a single line, and the build script's tree step (with a stand-in `go`, no compiling, no network)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rayconformance.operator import install_section, profiles, source_tree
from rayconformance.operator.install_section import SectionError, retagged
from rayconformance.operator.source_tree import SourceTreeError, TreeKey

REPO = Path(__file__).resolve().parents[2]
BUILD_TOOLS = REPO / "clusters" / "local" / "build-tools.sh"
GOMOD = "module github.com/ray-project/kuberay/ray-operator\n\ngo 1.26.0\n"


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.org",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "tree")
    return root


@pytest.fixture
def repo(tmp_path) -> Path:
    """A clone-shaped KubeRay tree: the ray-operator module, the chart, and files the build does not read."""
    return make_repo(tmp_path / "kuberay", {
        "ray-operator/go.mod": GOMOD,
        "ray-operator/main.go": "package main\n\nfunc main() {}\n",
        "ray-operator/config/default/kustomization.yaml": "resources: []\n",
        "helm-chart/kuberay-operator/Chart.yaml": "apiVersion: v2\nname: kuberay-operator\nversion: 1.7.0\n",
        "helm-chart/kuberay-operator/values.yaml": "image: {repository: kuberay/operator, tag: v1.7.0}\n",
        "docs/README.md": "docs\n",
        ".gitignore": "bin/\n",
    })


def test_clean_tree_is_keyed_by_its_commit(repo):
    key = source_tree.tree_key(repo)
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert (key.module, key.chart, key.commit, key.dirty) == ("ray-operator", "helm-chart/kuberay-operator", commit,
                                                              None)
    assert key.tag == f"tree-{commit[:12]}"


def test_changes_to_built_files_key_by_commit_and_digest(repo):
    clean = source_tree.tree_key(repo)
    main = repo / "ray-operator" / "main.go"
    main.write_text("package main\n\nfunc main() { println(1) }\n")
    one = source_tree.tree_key(repo)
    assert one.commit == clean.commit and one.dirty
    assert one.tag == f"tree-{clean.commit[:12]}-dirty-{one.dirty[:8]}"
    assert source_tree.tree_key(repo) == one  # the same changes, the same key
    main.write_text("package main\n\nfunc main() { println(2) }\n")
    two = source_tree.tree_key(repo)
    assert two.dirty and two.dirty != one.dirty  # a changed tree is a new build
    git(repo, "add", "-A")  # staged or not, the same difference from HEAD
    assert source_tree.tree_key(repo) == two
    git(repo, "checkout", "-q", "HEAD", "--", "ray-operator/main.go")
    assert source_tree.tree_key(repo) == clean


@pytest.mark.parametrize("change", ["untracked module file", "chart value", "deleted file"])
def test_each_kind_of_change_makes_a_tree_dirty(repo, change):
    if change == "untracked module file":
        (repo / "ray-operator" / "extra.go").write_text("package main\n")
    elif change == "chart value":
        (repo / "helm-chart/kuberay-operator/values.yaml").write_text("image: {tag: pr}\n")
    else:
        (repo / "ray-operator/config/default/kustomization.yaml").unlink()
    assert source_tree.tree_key(repo).dirty


def test_changes_the_build_does_not_read_leave_the_key(repo):
    clean = source_tree.tree_key(repo)
    (repo / "docs" / "README.md").write_text("changed\n")  # outside the module and the chart
    (repo / "notes.txt").write_text("untracked, outside\n")
    (repo / "ray-operator" / "bin").mkdir()
    (repo / "ray-operator" / "bin" / "manager").write_text("ignored build output\n")  # .gitignore'd
    assert source_tree.tree_key(repo) == clean


def released_module() -> Path | None:
    """A released ray-operator module in the Go module cache (downloaded by `make tools`), if there is one."""
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        return None
    found = sorted(Path(cache or "/nonexistent").glob("github.com/ray-project/kuberay/ray-operator@v1.6.*"))
    return found[-1] if found else None


def test_a_released_module_committed_into_a_repository_is_a_tree(tmp_path):
    module = released_module()
    if module is None:
        pytest.skip("no released ray-operator module in the Go module cache (make tools downloads them)")
    tree = tmp_path / "module"
    shutil.copytree(module, tree, ignore=shutil.ignore_patterns("*_test.go", "test"))
    for p in [tree, *tree.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)  # the module cache is read-only
    make_repo(tree, {})
    key = source_tree.tree_key(tree)
    assert (key.module, key.chart, key.dirty) == (".", None, None)
    assert key.tag == f"tree-{git(tree, 'rev-parse', 'HEAD')[:12]}"


def test_a_tree_that_is_not_kuberay_or_not_git_is_refused(tmp_path):
    with pytest.raises(SourceTreeError, match="is not a directory"):
        source_tree.tree_key(tmp_path / "missing")
    make_repo(tmp_path / "other", {"go.mod": "module example.org/other\n"})
    with pytest.raises(SourceTreeError, match="no KubeRay tree"):
        source_tree.tree_key(tmp_path / "other")
    plain = tmp_path / "plain"
    (plain / "ray-operator").mkdir(parents=True)
    (plain / "ray-operator" / "go.mod").write_text(GOMOD)
    with pytest.raises(SourceTreeError) as e:
        source_tree.tree_key(plain)
    assert "\n" not in str(e.value) and "git" in str(e.value)


@pytest.mark.parametrize("name", ["kuberay-v1.7.0", "kuberay-master"])
def test_a_tree_profile_without_a_tree_is_one_line_naming_source_and_option(name, monkeypatch):
    monkeypatch.delenv(source_tree.ENV, raising=False)
    profile = profiles.load(name)
    for provider in ("local", "kind", "existing"):
        with pytest.raises(SourceTreeError) as e:
            source_tree.require_tree(profile, provider)
        msg = str(e.value)
        assert "\n" not in msg
        for part in (name, "https://github.com/ray-project/kuberay", profile.install[provider].source.ref,
                     "--operator-tree", "RAYCONF_OPERATOR_TREE"):
            assert part in msg


def test_a_release_profile_needs_no_tree(monkeypatch):
    monkeypatch.delenv(source_tree.ENV, raising=False)
    assert source_tree.require_tree(profiles.load("kuberay-v1.6.2"), "local") is None


def test_the_tree_comes_from_the_option_else_the_environment(repo, tmp_path, monkeypatch):
    profile = profiles.load("kuberay-v1.7.0")
    monkeypatch.setenv(source_tree.ENV, str(repo))
    assert source_tree.require_tree(profile, "local").tree == repo.resolve()
    other = make_repo(tmp_path / "other", {"ray-operator/go.mod": GOMOD})
    assert source_tree.require_tree(profile, "local", str(other)).tree == other.resolve()


def test_a_tree_source_has_name_repository_and_ref_when_the_profile_loads():
    with pytest.raises(SectionError, match="missing ref"):
        install_section.parse({"source": {"name": "kuberay", "repository": "https://github.com/ray-project/kuberay"}},
                              "install.local")
    with pytest.raises(SectionError, match="unknown version"):
        install_section.parse({"source": {"name": "kuberay", "repository": "r", "ref": "v1", "version": "v1"}}, "x")
    with pytest.raises(SectionError, match="only KubeRay trees"):
        install_section.parse({"source": {"name": "other", "repository": "r", "ref": "v1"}}, "x")
    assert not install_section.parse({"source": {"name": "kuberay", "version": "v1.6.2"}}, "x").source.is_tree


def test_the_build_image_is_the_profile_repository_with_the_tree_tag():
    key = TreeKey(Path("/t"), "ray-operator", None, "59d663aeec13760646da3db9c1cf8cfe883e30b7", "ab" * 32)
    assert retagged("quay.io/kuberay/operator:v1.7.0", key.tag) == \
        "quay.io/kuberay/operator:tree-59d663aeec13-dirty-abababab"
    assert retagged("localhost:5000/operator", key.tag).startswith("localhost:5000/operator:tree-")


def test_build_asks_the_tool_cache_for_the_tree_tag(repo, tmp_path, monkeypatch):
    from rayconformance.clusters import toolcache

    calls = []

    def ensure(component, version, marker, env=None):
        calls.append((component, version, marker, env))
        d = tmp_path / f"{component}-{version}"
        (d / "config").mkdir(parents=True, exist_ok=True)
        return d

    monkeypatch.setattr(toolcache, "ensure", ensure)
    key = source_tree.tree_key(repo)
    built = source_tree.build(key)
    assert calls == [("kuberay", key.tag, "bin/ray-operator", {source_tree.ENV: str(repo)})]
    assert built.directory == tmp_path / f"kuberay-{key.tag}"


def fake_go(bin_dir: Path) -> None:
    """A `go` that 'builds' by writing a script to the -o path, and answers `go env GOVERSION`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    go = bin_dir / "go"
    go.write_text("#!/bin/sh\n"
                  "if [ \"$1\" = env ]; then echo go1.26.0; exit 0; fi\n"
                  "out=''; while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                  "[ -f main.go ] || { echo 'no main.go here' >&2; exit 1; }\n"
                  "mkdir -p \"$(dirname \"$out\")\"; printf '#!/bin/sh\\necho built\\n' > \"$out\"; chmod +x \"$out\"\n")
    go.chmod(0o755)


def run_build_tools(tmp_path: Path, tree: Path, tag: str) -> subprocess.CompletedProcess:
    fake_go(tmp_path / "fakebin")
    env = {**os.environ, "PATH": f"{tmp_path / 'fakebin'}:{os.environ['PATH']}", "RAYCONF_CACHE": str(tmp_path / "cache"),
           source_tree.ENV: str(tree)}
    return subprocess.run(["bash", str(BUILD_TOOLS), f"kuberay@{tag}"], capture_output=True, text=True, env=env)


def test_build_tools_builds_a_dirty_tree_as_it_is_into_its_cache_directory(repo, tmp_path):
    (repo / "ray-operator" / "pr.go").write_text("package main\n")  # untracked: part of the build
    (repo / "ray-operator" / "config" / "default" / "kustomization.yaml").unlink()  # deleted: left out
    (repo / "ray-operator" / "config" / "extra.yaml").write_text("a: 1\n")
    key = source_tree.tree_key(repo)
    r = run_build_tools(tmp_path, repo, key.tag)
    assert r.returncode == 0, r.stdout + r.stderr
    d = tmp_path / "cache" / f"kuberay-{key.tag}"
    assert os.access(d / "bin" / "ray-operator", os.X_OK)
    assert (d / "config" / "extra.yaml").is_file() and not (d / "config" / "default" / "kustomization.yaml").exists()
    assert (d / "helm-chart" / "kuberay-operator" / "Chart.yaml").is_file()
    assert f"commit={key.commit}" in (d / "source.env").read_text()
    assert not (d / "src").exists()
    again = run_build_tools(tmp_path, repo, key.tag)
    assert again.returncode == 0 and "cached" in again.stdout


def test_build_tools_refuses_a_tree_at_another_commit(repo, tmp_path):
    r = run_build_tools(tmp_path, repo, "tree-000000000000")
    assert r.returncode != 0 and "not at 000000000000" in r.stderr


def test_the_suite_without_a_tree_prints_one_line_and_fails(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != source_tree.ENV}
    r = subprocess.run([sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", "-q",
                        "--operator-profile", "kuberay-v1.7.0", "--report-dir", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
    out = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode != 0
    assert len(out) == 1 and out[0].startswith("ERROR: operator profile kuberay-v1.7.0"), out
    assert "--operator-tree" in out[0] and "Traceback" not in r.stderr


def test_a_kind_image_already_in_the_archive_index_is_not_rebuilt(monkeypatch):
    from rayconformance.clusters import kind as kindtools

    key = TreeKey(Path("/t"), "ray-operator", None, "59d663aeec13760646da3db9c1cf8cfe883e30b7", None)
    image = retagged("quay.io/kuberay/operator:v1.7.0", key.tag)
    monkeypatch.setattr(kindtools, "image_archives", lambda: {image: Path("/x.tar")})
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("build-app-images.sh ran"))
    assert source_tree.ensure_kind_image(key, image) == image


@pytest.mark.parametrize("provider, image", [("local", "quay.io/kuberay/operator:tree-"),
                                             ("existing", "quay.io/kuberay/operator:v1.7.0")])
def test_resolve_install_gives_the_build_and_its_image_where_the_project_build_runs(repo, tmp_path, monkeypatch,
                                                                                     provider, image):
    monkeypatch.setattr(source_tree, "build", lambda key: source_tree.TreeBuild(key, tmp_path / f"kuberay-{key.tag}"))
    monkeypatch.setattr(source_tree, "build_submitter", lambda key: tmp_path / f"kuberay-{key.tag}" / "bin" / "submitter")
    spec = profiles.load("kuberay-v1.7.0").install[provider]
    base, resolved, key = source_tree.resolve_install(spec, provider, "kuberay-v1.7.0", str(repo))
    assert key == source_tree.tree_key(repo) and base == tmp_path / f"kuberay-{key.tag}"
    assert resolved.image.startswith(image) and spec.image == "quay.io/kuberay/operator:v1.7.0"
    # the submitter image of the same build, under the same tag
    assert resolved.submitter_image == resolved.image.replace("/operator:", "/submitter:")
    assert source_tree.resolve_install(profiles.load("kuberay-v1.6.2").install[provider], provider, "x") is None


def test_a_tree_changed_after_the_run_started_is_refused_at_install(repo, tmp_path, monkeypatch):
    """The report names the tree as the run read it at start (Options): the install refuses a tree that changed
    since, so the operator built is the one reported."""
    from rayconformance.operator import OperatorError, installer

    monkeypatch.setattr(source_tree, "build", lambda key: source_tree.TreeBuild(key, tmp_path / f"kuberay-{key.tag}"))
    monkeypatch.setattr(source_tree, "build_submitter", lambda key: tmp_path / "submitter")
    profile = profiles.load("kuberay-v1.7.0")
    at_start = source_tree.tree_key(repo)
    _, _, facts = installer.section(profile, "local", str(repo), at_start)
    assert facts["source"]["build"] == at_start.tag
    (repo / "ray-operator" / "main.go").write_text("package main\n\nfunc main() { panic(1) }\n")
    with pytest.raises(OperatorError, match=r"changed after the run started \(build tree-\w+ then, tree-\w+-dirty-"):
        installer.section(profile, "local", str(repo), at_start)
