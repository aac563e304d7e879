"""The shipped KubeRay profiles on a local test bed, through the real suite (`--provider existing`):
each installs its operator, gets a RayCluster provisioned, and uninstalls without leaving an object
behind - one profile after the other on the same cluster. A profile that claims a feature its operator
lacks gets test failures that name the feature, not suite errors."""
from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from rayconformance.clusters.toolcache import tool
from rayconformance.kube import namespaces
from rayconformance.operator import profiles
from rayconformance.kube.objects import create_all, delete_all
from rayconformance.operator.render import render
from tests.suiterun import derive_profile, run_suite

pytestmark = pytest.mark.integration

SHIPPED = ["kuberay-v1.6.2", "kuberay-v1.6.1", "kuberay-v1.5.1"]


def leftovers(api: client.ApiClient, objects: list[dict]) -> list[str]:
    dyn = DynamicClient(api)
    left = []
    for o in objects:
        try:
            res = dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
            res.get(name=o["metadata"]["name"], namespace=o["metadata"].get("namespace"))
            left.append(f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}")
        except (NotFoundError, ResourceNotFoundError):
            pass
    return left


@pytest.mark.parametrize("profile", SHIPPED)
def test_profile_provisions_a_cluster_and_uninstalls_cleanly(cpu, profile, tmp_path):
    run = run_suite(cpu.bed.kubeconfig, profile, "head_and_workers_provisioned", tmp_path)
    cases = run.testcases("head_and_workers_provisioned")
    assert cases and not any(tc.findall("failure") or tc.findall("error") or tc.findall("skipped") for tc in cases), \
        f"head_and_workers_provisioned should pass with {profile}:\n{run.output}"
    assert run.proc.returncode == 0, run.output
    observed = run.report()["operator"]
    version = profile.rsplit("-", 1)[-1]
    assert observed["version"] == version and observed["image"].endswith(f":{version}"), \
        f"the report should record the operator running as {version}: {observed}"

    objects = run.operator_objects()
    assert {"CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole"} <= {o["kind"] for o in objects}
    assert leftovers(cpu.api, objects) == [], f"{profile}'s uninstall left objects behind"
    crds = [c.metadata.name for c in client.ApiextensionsV1Api(cpu.api).list_custom_resource_definition().items
            if c.spec.group == "ray.io"]
    assert crds == [], f"ray.io CRDs left after uninstalling {profile}: {crds}"


def test_claimed_feature_the_operator_lacks_fails_naming_it(cpu, tmp_path):
    # KubeRay v1.5.1 as shipped runs with RayServiceIncrementalUpgrade off: claiming the feature is wrong.
    claims = ["RayServiceReady", "RayServiceIncrementalUpgrade"]
    profile = derive_profile(tmp_path, "kuberay-v1.5.1", "kuberay-v1.5.1-overclaiming", features=claims)
    run = run_suite(cpu.bed.kubeconfig, profile, "traffic_shifts_in_steps_without_failures", tmp_path,
                    timeout_scale=0.3, force=False)
    cases = run.testcases("traffic_shifts_in_steps_without_failures")
    assert cases and all(tc.findall("failure") and not tc.findall("error") for tc in cases), \
        f"the incremental-upgrade test should FAIL (not error) against an operator without the feature:\n{run.output}"
    assert run.proc.returncode == 1, f"exit code {run.proc.returncode}, expected 1 (test failures):\n{run.output}"
    assert "feature RayServiceIncrementalUpgrade FAILED" in run.proc.stdout and \
        "claimed by profile kuberay-v1.5.1-overclaiming" in run.proc.stdout, run.output
    rs = next(p for p in run.report()["resources"] if p["name"] == "RayService")
    assert rs["extended"]["failedFeatures"] == ["RayServiceIncrementalUpgrade"], rs


def test_sweep_releases_finalizers_no_operator_will_remove(cpu):
    """A RayJob whose operator is gone keeps its namespace Terminating forever; the end-of-run sweep releases it."""
    profile = profiles.load("kuberay-v1.6.1")
    # only the ray.io CRDs this cluster lacks: created here, deleted here (others' CRDs, e.g. the Gateway API's,
    # are left alone)
    present = {c.metadata.name for c in client.ApiextensionsV1Api(cpu.api).list_custom_resource_definition().items}
    crds = [o for o in render(profile.install["local"], {}, profile.path.parent, str(tool("kubernetes", "kubectl")))
            if o["kind"] == "CustomResourceDefinition" and o["spec"]["group"] == "ray.io"
            and o["metadata"]["name"] not in present]
    create_all(crds, cpu.api)  # no operator: nothing will remove the finalizer
    try:
        run_id = "sweep-release"
        ns = namespaces.create(cpu.core, "stuck", run_id)
        client.CustomObjectsApi(cpu.api).create_namespaced_custom_object("ray.io", "v1", ns, "rayjobs", {
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "stuck", "finalizers": ["ray.io/rayjob-finalizer"]},
            "spec": {"entrypoint": "true"}})
        released = namespaces.sweep_releasing(cpu.api, run_id, timeout=5)
        assert released == [f"RayJob {ns}/stuck (ray.io/rayjob-finalizer)"], released
        assert not cpu.core.list_namespace(label_selector=f"{namespaces.RUN_LABEL}={run_id}").items
    finally:
        delete_all(crds, cpu.api)
