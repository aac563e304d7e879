"""src/rayconformance/operator/helm_swap.py and source_tree.chart_at: the release swap of a Helm install, through Helm.
The earlier release's chart comes from a git repository made here (a fake chart committed at two tags); helm is a
stand-in script that renders the Deployment from the values file, so the commands, their order and their values are
checked without a cluster."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import yaml

from rayconformance.operator import OperatorError, helm, helm_swap
from rayconformance.operator import release_swap as op
from rayconformance.operator.install_section import parse
from rayconformance.operator.installer import INSTALLED_FILE
from rayconformance.operator.source_tree import SourceTreeError, chart_at

CHART = "helm-chart/kuberay-operator"
SESSION_IMAGE, OLD_IMAGE = "quay.io/kuberay/operator:tree-59d663aeec13", "quay.io/kuberay/operator:v1.6.2"
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: kuberay-operator, namespace: "{{ .Release.Namespace }}"}
spec:
  template:
    spec:
      containers:
      - {name: kuberay-operator, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}
"""


def crd(name: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name}}


def write_chart(root: Path, version: str, gates: list[dict], crds: list[str]) -> Path:
    chart = root / CHART
    if chart.exists():
        subprocess.run(["rm", "-r", str(chart)], check=True)
    (chart / "crds").mkdir(parents=True)
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: kuberay-operator\nversion: {version}\n")
    (chart / "values.yaml").write_text(yaml.safe_dump(
        {"image": {"repository": "quay.io/kuberay/operator", "tag": f"v{version}"}, "featureGates": gates}))
    for name in crds:
        (chart / "crds" / f"{name}.yaml").write_text(yaml.safe_dump(crd(name)))
    (chart / "templates" / "deployment.yaml").write_text(DEPLOYMENT)
    return chart


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org",
                           "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


OLD_GATES = [{"name": "RayClusterStatusConditions", "enabled": True},
             {"name": "RayServiceIncrementalUpgrade", "enabled": False}, {"name": "RayCronJob", "enabled": False}]
NEW_GATES = OLD_GATES[:1] + [{"name": "RayServiceIncrementalUpgrade", "enabled": True},
                             {"name": "RayCronJob", "enabled": False}, {"name": "RayClusterMTLS", "enabled": False}]


@pytest.fixture
def tree(tmp_path) -> Path:
    """A KubeRay-like repository: the chart at v1.6.2 (with a CRD v1.7.0 no longer has), then at v1.7.0 (HEAD)."""
    repo = tmp_path / "kuberay"
    repo.mkdir()
    git(repo, "init", "-q")
    write_chart(repo, "1.6.2", OLD_GATES, ["rayclusters.ray.io", "oldonly.ray.io"])
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1.6.2")
    git(repo, "tag", "v1.6.2")
    write_chart(repo, "1.7.0", NEW_GATES, ["rayclusters.ray.io"])
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1.7.0")
    git(repo, "tag", "v1.7.0")
    return repo


def test_chart_at_extracts_the_chart_of_a_tag_into_a_directory_of_its_commit(tree, tmp_path):
    out = chart_at(tree, "v1.6.2", CHART, tmp_path / "charts")
    assert out == tmp_path / "charts" / git(tree, "rev-parse", "v1.6.2") / CHART
    assert "version: 1.6.2" in (out / "Chart.yaml").read_text()
    assert sorted(p.name for p in (out / "crds").iterdir()) == ["oldonly.ray.io.yaml", "rayclusters.ray.io.yaml"]
    (out / "marker").write_text("")
    assert chart_at(tree, "v1.6.2", CHART, tmp_path / "charts") == out and (out / "marker").exists()  # reused
    assert [p.name for p in (tmp_path / "charts").iterdir()] == [out.parents[1].name]  # no staging left


@pytest.mark.parametrize("ref, chart, message", [
    ("v1.5.9", CHART, r"^operator tree .* has no ref v1\.5\.9 \(the release kuberay-v1\.5\.9\): fetch the release "
                      r"tags into it \(git -C .* fetch --tags\) and rerun$"),
    ("v1.6.2", "helm-chart/missing", r"^operator tree .* at v1\.6\.2 has no helm-chart/missing \(the release "),
])
def test_a_missing_ref_or_chart_is_one_line(tree, tmp_path, ref, chart, message):
    with pytest.raises(SourceTreeError, match=message) as e:
        chart_at(tree, ref, chart, tmp_path / "charts", release="kuberay-v1.5.9" if ref == "v1.5.9" else "x")
    assert "\n" not in str(e.value)


def profile(name: str, install: dict, gates: dict, version: str) -> NS:
    """A profile of the install sections `install` (provider -> the section as a profile writes it)."""
    return NS(name=name, install={p: parse(s, f"install.{p}") for p, s in install.items()}, feature_gates=gates,
              implementation={"version": version}, path=Path(f"/profiles/{name}.yaml"))


SESSION_SPEC = {"source": {"name": "kuberay", "repository": "https://github.com/ray-project/kuberay", "ref": "v1.7.0"},
                "manifests": ["gatewayapi/crd"], "namespace": "ray-system", "deployment": "kuberay-operator",
                "image": "quay.io/kuberay/operator:v1.7.0", "env": {},
                "helm": {"chart": CHART, "release": "kuberay-operator", "crds": "apply",
                         "values": {"image": {"pullPolicy": "Never", "tag": "x"}, "replicas": 1,
                                    "featureGates": [], "env": []}}}
SESSION = profile("kuberay-v1.7.0", {"kind": SESSION_SPEC}, {"RayServiceIncrementalUpgrade": True,
                                                             "GCSFaultToleranceEmbeddedStorage": True}, "v1.7.0")
PREVIOUS_SPEC = {"source": {"name": "kuberay", "version": "v1.6.2"}, "manifests": ["config/default"],
                 "image": OLD_IMAGE, "args": [], "env": {}, "namespace": "ray-system"}
PREVIOUS = profile("kuberay-v1.6.2", {"kind": PREVIOUS_SPEC},
                   {"RayClusterStatusConditions": True, "RayServiceIncrementalUpgrade": True}, "v1.6.2")


def fake_helm(path: Path) -> Path:
    """A stand-in for helm: `template` renders the Deployment with the image of the values file; the rest succeed."""
    path.write_text(f"#!{sys.executable}\n" + """import sys, yaml
a = sys.argv[1:]
if a[0] == "template":
    v = yaml.safe_load(open(a[a.index("--values") + 1]))
    ns = a[a.index("--namespace") + 1]
    print(yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "kuberay-operator", "namespace": ns}, "spec": {"template": {"spec": {"containers": [
        {"name": "kuberay-operator", "image": v["image"]["repository"] + ":" + v["image"]["tag"]}]}}}}))
""")
    path.chmod(0o755)
    return path


@pytest.fixture
def run(tmp_path, tree, monkeypatch):
    """A run directory holding the session's Helm install (as helm.install_release records it, with the session's
    chart in a build directory), the steps of the swap recorded in order in `run.seen`, helm a stand-in."""
    build = tmp_path / "build"
    write_chart(build, "1.7.0", NEW_GATES, ["rayclusters.ray.io"])
    spec = parse({**SESSION_SPEC, "image": SESSION_IMAGE}, "install.kind")
    plan = helm.plan(replace(spec, source=None), dict(SESSION.feature_gates), build)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / helm.RECORD_FILE).write_text(yaml.safe_dump({"plan": {**plan.__dict__}, "kubeconfig": "/k/config",
                                                            "created": []}))
    session_objects = [crd("rayclusters.ray.io"), yaml.safe_load(
        DEPLOYMENT.replace("{{ .Release.Namespace }}", "ray-system").replace(
            "{{ .Values.image.repository }}:{{ .Values.image.tag }}", SESSION_IMAGE))]
    (run_dir / INSTALLED_FILE).write_text(yaml.safe_dump_all(session_objects))
    seen: list = []
    binary = fake_helm(tmp_path / "helm")
    real_run = helm.run
    monkeypatch.setattr(helm, "helm_binary", lambda: binary)
    monkeypatch.setattr(helm, "run", lambda cmd, home, timeout=helm.DEFAULT_TIMEOUT:
                        seen.append(("helm", cmd[1:])) or real_run(cmd, home, timeout))
    cluster_crds = {"rayclusters.ray.io"}

    def replace_all(objs, api, scale, created=None):
        seen.append(("crds", sorted(o["metadata"]["name"] for o in objs)))
        made = [o for o in objs if o["metadata"]["name"] not in cluster_crds]
        cluster_crds.update(o["metadata"]["name"] for o in made)
        (created if created is not None else []).extend(made)
        return made
    monkeypatch.setattr(helm_swap, "replace_all", replace_all)
    monkeypatch.setattr(op, "prepared", lambda *a, **k: pytest.fail("a Helm session renders no kustomize manifests"))
    monkeypatch.setattr(op, "delete_all", lambda objs, api, t: seen.append(("delete", [o["metadata"]["name"]
                                                                                       for o in objs])))
    monkeypatch.setattr(op, "wait_rolled_out", lambda api, ns, name, image, t: seen.append(("rolled out", name,
                                                                                             image)))
    monkeypatch.setattr(op, "observe", lambda spec, objs, api: {"image": op._image(op.deployment_of(spec, objs))})
    provider = NS(prepare_images=lambda objs: seen.append(("load", [op._image(o) for o in objs])))
    swap = op.ReleaseSwap.for_session(None, provider, "kind", SESSION, run_dir, 1.0, str(tree))
    return NS(dir=run_dir, tree=tree, plan=plan, seen=seen, swap=swap)


def old_chart(run) -> str:
    return str(run.dir / helm_swap.CHARTS_DIR / git(run.tree, "rev-parse", "v1.6.2") / CHART)


def test_the_earlier_release_is_a_helm_downgrade_to_its_own_chart_with_its_image_and_gates(run):
    assert run.swap.helm.plan == run.plan and run.swap.helm.tree == run.tree
    assert run.swap.install_previous(PREVIOUS) == {"image": OLD_IMAGE}
    values = run.dir / "helm-values-kuberay-v1.6.2.yaml"
    assert run.seen == [
        ("helm", ["template", "kuberay-operator", old_chart(run), "--namespace", "ray-system", "--values", str(values),
                  "--include-crds"]),
        ("load", [OLD_IMAGE]),
        ("crds", ["oldonly.ray.io", "rayclusters.ray.io"]),  # the earlier chart's crds/, before Helm runs
        ("helm", ["upgrade", "--install", "kuberay-operator", old_chart(run), "--namespace", "ray-system",
                  "--create-namespace", "--kubeconfig", "/k/config", "--values", str(values), "--skip-crds"]),
        ("rolled out", "kuberay-operator", OLD_IMAGE)]
    # its image and its profile's gates over its chart's list (not the session's gates); the session's own values
    assert yaml.safe_load(values.read_text()) == {
        "image": {"repository": "quay.io/kuberay/operator", "tag": "v1.6.2", "pullPolicy": "Never"},
        "featureGates": [{"name": "RayClusterStatusConditions", "enabled": True},
                         {"name": "RayServiceIncrementalUpgrade", "enabled": True},
                         {"name": "RayCronJob", "enabled": False}],
        "replicas": 1}


def upgrade_back(run) -> list:
    session_chart = str(Path(run.plan.chart))
    return [("crds", ["rayclusters.ray.io"]),
            ("helm", ["upgrade", "--install", "kuberay-operator", session_chart, "--namespace", "ray-system",
                      "--create-namespace", "--kubeconfig", "/k/config", "--values",
                      str(run.dir / helm.VALUES_FILE), "--skip-crds"]),
            ("delete", ["oldonly.ray.io"]),  # the CRD only the earlier release had
            ("rolled out", "kuberay-operator", SESSION_IMAGE)]


def test_the_upgrade_back_is_helm_upgrade_to_the_session_chart_and_values(run):
    run.swap.install_previous(PREVIOUS)
    run.seen.clear()
    assert run.swap.upgrade() == {"image": SESSION_IMAGE}
    assert run.seen == upgrade_back(run)
    assert yaml.safe_load((run.dir / helm.VALUES_FILE).read_text()) == run.plan.values
    run.seen.clear()
    run.swap.restore()  # already back
    assert run.seen == []


def test_restore_upgrades_back_through_helm_when_the_test_stopped_midway(run, monkeypatch):
    monkeypatch.setattr(op, "wait_rolled_out", lambda *a: (_ for _ in ()).throw(AssertionError("never rolled out")))
    with pytest.raises(AssertionError):
        run.swap.install_previous(PREVIOUS)
    monkeypatch.setattr(op, "wait_rolled_out", lambda api, ns, name, image, t: run.seen.append(("rolled out", name,
                                                                                                 image)))
    run.seen.clear()
    run.swap.restore()
    assert run.seen == upgrade_back(run)


def test_a_tag_missing_from_the_tree_is_one_line_and_changes_nothing(run):
    missing = profile("kuberay-v1.5.9", {"kind": {**PREVIOUS_SPEC, "source": {"name": "kuberay", "version": "v1.5.9"}}},
                      {}, "v1.5.9")
    with pytest.raises(OperatorError, match=r"has no ref v1\.5\.9 \(the release kuberay-v1\.5\.9\): fetch the release "
                                            r"tags into it") as e:
        run.swap.install_previous(missing)
    assert "\n" not in str(e.value) and run.seen == []
    run.swap.restore()  # nothing was swapped
    assert run.seen == []


def test_without_a_tree_the_swap_says_how_to_give_it(run, monkeypatch):
    monkeypatch.delenv("RAYCONF_OPERATOR_TREE", raising=False)
    swap = op.ReleaseSwap.for_session(None, NS(), "kind", SESSION, run.dir)
    with pytest.raises(OperatorError, match=r"comes from the session's source tree and none was given: pass "
                                            r"--operator-tree PATH"):
        swap.install_previous(PREVIOUS)


@pytest.mark.parametrize("src, version, ref", [
    ({"name": "kuberay", "version": "v1.6.2"}, "v1.6.2", "v1.6.2"),
    ({"name": "kuberay", "repository": "r", "ref": "release-1.6"}, "v1.6.2", "release-1.6"),
    ({"name": "kuberay", "version": "v1.6.1", "patch": "p.patch"}, "v1.6.1+p", "v1.6.1"),
    (None, "v1.6.0", "v1.6.0"),
])
def test_the_earlier_ref_is_its_source_version_or_ref_else_its_implementation_version(src, version, ref):
    p = profile("x", {"kind": {"source": src} if src else {"image": OLD_IMAGE}}, {}, version)
    assert helm_swap.earlier_ref(p, "kind") == ref


def test_a_kustomize_session_swaps_its_objects_as_before(tmp_path):
    spec = {"manifests": ["config/default"], "image": SESSION_IMAGE}
    (tmp_path / INSTALLED_FILE).write_text(yaml.safe_dump_all([crd("rayclusters.ray.io"), yaml.safe_load(
        DEPLOYMENT.replace("{{ .Release.Namespace }}", "ray-system"))]))
    swap = op.ReleaseSwap.for_session(None, NS(), "local", profile("s", {"local": spec}, {}, "v1.7.0"), tmp_path)
    assert swap is not None and swap.helm is None


def test_a_helm_session_without_its_record_is_one_line(tmp_path):
    (tmp_path / INSTALLED_FILE).write_text(yaml.safe_dump_all([yaml.safe_load(
        DEPLOYMENT.replace("{{ .Release.Namespace }}", "ray-system"))]))
    with pytest.raises(OperatorError, match=r"left no record .*operator-helm\.yaml\), so the operator cannot be "
                                            r"swapped through Helm"):
        op.ReleaseSwap.for_session(None, NS(), "kind", SESSION, tmp_path)
