"""Installing the operator with Helm: the plan (chart, values from the profile) and the commands rendered from it,
one-line errors for a bad helm section (when the profile loads) and a missing chart or tool. Renders with a real
helm only when the tool cache has it."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rayconformance.operator import helm, install_section
from rayconformance.operator.helm import HelmError
from rayconformance.operator.install_section import SectionError

CHART_VALUES = {
    "image": {"repository": "quay.io/kuberay/operator", "tag": "v1.7.0", "pullPolicy": "IfNotPresent"},
    "featureGates": [{"name": "RayClusterStatusConditions", "enabled": True},
                     {"name": "RayServiceIncrementalUpgrade", "enabled": True},
                     {"name": "RayCronJob", "enabled": False}],
    "env": None,
}


@pytest.fixture
def tree(tmp_path) -> Path:
    """A source tree's build with a chart directory like KubeRay's (Chart.yaml, values.yaml, crds/)."""
    chart = tmp_path / "helm-chart" / "kuberay-operator"
    (chart / "crds").mkdir(parents=True)
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kuberay-operator\nversion: 1.7.0\n")
    (chart / "values.yaml").write_text(yaml.safe_dump(CHART_VALUES))
    (chart / "crds" / "ray.io_rayclusters.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "rayclusters.ray.io"}}))
    (chart / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kuberay-operator}\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: kuberay-operator\n"
        "        image: \"{{ .Values.image.repository }}:{{ .Values.image.tag }}\"\n")
    return tmp_path


def spec(**helm_section) -> install_section.InstallSection:
    return install_section.parse({"helm": {"chart": "helm-chart/kuberay-operator", **helm_section},
                                  "namespace": "ray-system", "image": "quay.io/kuberay/operator:tree-59d663aeec13",
                                  "env": {"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": 30}}, "install.local")


def test_plan_sets_image_feature_gates_and_env_from_the_profile(tree):
    p = helm.plan(spec(), {"RayServiceIncrementalUpgrade": False, "RayJobDeletionPolicy": True}, tree)
    assert p.chart == str(tree / "helm-chart" / "kuberay-operator")
    assert (p.release, p.namespace, p.crds) == ("kuberay-operator", "ray-system", "apply")
    assert p.values["image"] == {"repository": "quay.io/kuberay/operator", "tag": "tree-59d663aeec13"}
    # the chart's own list, in its order, with the profile's gates over it; gates it lacks appended
    assert p.values["featureGates"] == [{"name": "RayClusterStatusConditions", "enabled": True},
                                        {"name": "RayServiceIncrementalUpgrade", "enabled": False},
                                        {"name": "RayCronJob", "enabled": False},
                                        {"name": "RayJobDeletionPolicy", "enabled": True}]
    assert p.values["env"] == [{"name": "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", "value": "30"}]


def test_the_profile_values_go_over_everything(tree):
    p = helm.plan(spec(values={"image": {"pullPolicy": "Never"}, "featureGates": [], "replicas": 2}), {"A": True}, tree)
    assert p.values["image"] == {"repository": "quay.io/kuberay/operator", "tag": "tree-59d663aeec13",
                                 "pullPolicy": "Never"}
    assert p.values["featureGates"] == [] and p.values["replicas"] == 2


def test_install_command_upgrades_or_installs_with_the_values_file(tree, tmp_path):
    p = helm.plan(spec(release="kr"), {}, tree)
    values = helm.write_values(p, tmp_path / "run" / "helm-values.yaml")
    assert yaml.safe_load(values.read_text()) == p.values
    cmd = helm.install_command("/c/helm", p, "/k/kubeconfig", values)
    assert cmd == ["/c/helm", "upgrade", "--install", "kr", str(tree / "helm-chart" / "kuberay-operator"),
                   "--namespace", "ray-system", "--create-namespace", "--kubeconfig", "/k/kubeconfig",
                   "--values", str(values), "--skip-crds"]
    assert "--skip-crds" not in helm.install_command("helm", helm.plan(spec(crds="helm"), {}, tree), "k", values)
    assert helm.uninstall_command("helm", p, "k") == ["helm", "uninstall", "kr", "--namespace", "ray-system",
                                                      "--kubeconfig", "k", "--ignore-not-found"]


def test_template_command_includes_the_crds_unless_skipped(tree, tmp_path):
    values = tmp_path / "v.yaml"
    assert "--include-crds" in helm.template_command("helm", helm.plan(spec(), {}, tree), values)
    cmd = helm.template_command("helm", helm.plan(spec(crds="skip"), {}, tree), values, kube_version="v1.36.3")
    assert "--include-crds" not in cmd and cmd[-2:] == ["--kube-version", "v1.36.3"]


def test_a_chart_from_a_repository_with_a_version(tmp_path):
    s = spec(chart="kuberay-operator", repository="https://charts.example.org/kuberay", version="1.7.0")
    p = helm.plan(s, {"RayCronJob": True}, tmp_path)
    cmd = helm.install_command("helm", p, "k", tmp_path / "v.yaml")
    assert cmd[3:8] == ["kuberay-operator", "kuberay-operator", "--repo", "https://charts.example.org/kuberay",
                        "--version"] and cmd[8] == "1.7.0"
    assert p.values["featureGates"] == [{"name": "RayCronJob", "enabled": True}]  # no chart values to merge with
    assert helm.chart_crds(p) == []
    oci = helm.plan(spec(chart="kuberay-operator", repository="oci://charts.example.org/kuberay", version="1.7.0"),
                    {}, tmp_path)
    assert helm.install_command("helm", oci, "k", tmp_path / "v.yaml")[4:7] == \
        ["oci://charts.example.org/kuberay/kuberay-operator", "--version", "1.7.0"]


def test_chart_crds_are_read_from_the_chart_directory(tree):
    crds = helm.chart_crds(helm.plan(spec(), {}, tree))
    assert [c["metadata"]["name"] for c in crds] == ["rayclusters.ray.io"]


def test_a_missing_chart_is_one_line(tree):
    with pytest.raises(HelmError, match="helm chart .*helm-chart/missing not found") as e:
        helm.plan(spec(chart="helm-chart/missing"), {}, tree, where="install.local")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("bad, message", [
    ({"helm": {"chart": "helm-chart/kuberay-operator", "wait": True}}, "unknown key.*wait"),
    ({"helm": {"chart": "helm-chart/kuberay-operator", "crds": "sometimes"}}, "crds must be one of apply, helm, skip"),
    ({"helm": {"chart": "helm-chart/kuberay-operator"}, "args": ["--x"]}, "args cannot be passed through a chart"),
    ({"helm": {"chart": "kuberay-operator", "repository": "https://charts.example.org"}}, "needs `version`"),
    ({"helm": {}}, "helm.chart must name a chart"),
    ({"helm": "kuberay-operator"}, "must be a mapping"),
])
def test_bad_helm_sections_are_one_line_when_the_profile_loads(bad, message):
    with pytest.raises(SectionError, match=message) as e:
        install_section.parse(bad, "install.local")
    assert "\n" not in str(e.value) and str(e.value).startswith("install.local")


def test_a_missing_helm_binary_is_one_line(tmp_path):
    with pytest.raises(HelmError) as e:
        helm.run([str(tmp_path / "nohelm"), "version"], tmp_path)
    assert "not found" in str(e.value) and "build-tools.sh helm" in str(e.value) and "\n" not in str(e.value)


def test_a_failing_helm_command_is_one_line_with_its_last_error(tmp_path):
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\necho 'Error: first' >&2\necho 'Error: INSTALLATION FAILED: no chart' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(HelmError, match=r"^helm upgrade --install failed: Error: INSTALLATION FAILED: no chart$"):
        helm.run([str(fake), "upgrade", "--install", "kr", "chart"], tmp_path)


def test_helm_keeps_its_state_under_the_given_home(tmp_path, monkeypatch):
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\necho \"$HELM_CACHE_HOME $HELM_CONFIG_HOME $HELM_DATA_HOME\"\n")
    fake.chmod(0o755)
    out = helm.run([str(fake), "env"], tmp_path / "home").split()
    assert out == [str(tmp_path / "home" / d) for d in ("cache", "config", "data")]


def cached_helm() -> Path | None:
    from rayconformance.clusters.toolcache import CACHE, versions

    p = CACHE / f"helm-{versions().get('HELM_VERSION')}" / "bin" / "helm"
    return p if p.is_file() else None


def test_helm_renders_the_chart_with_the_profile_values(tree, tmp_path):
    binary = cached_helm()
    if binary is None:
        pytest.skip("helm is not built (clusters/local/build-tools.sh helm)")
    p = helm.plan(spec(), {}, tree)
    objects = helm.render(binary, p, helm.write_values(p, tmp_path / "v.yaml"), tmp_path / "home")
    kinds = {o["kind"]: o for o in objects}
    assert set(kinds) == {"CustomResourceDefinition", "Deployment"}
    assert kinds["Deployment"]["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "quay.io/kuberay/operator:tree-59d663aeec13"
