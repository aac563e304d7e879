"""RayCluster spec.managedBy: a cluster managed by another controller is left alone; the field is checked and
immutable."""
from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster_pods import head_pod_must_be_created
from rayconformance.fixtures.expect.workloads import describe_pods
from rayconformance.fixtures.waiting import wait_until

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
OPERATOR = "ray.io/kuberay-operator"


def body_named(ray_version: str, name: str, managed_by: str | None) -> dict:
    body = ray.sample("raycluster-basic", ray_version)
    body["metadata"]["name"] = name
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 0
    if managed_by:
        body["spec"]["managedBy"] = managed_by
    return body


def rejected(call) -> ApiException | None:
    try:
        call()
    except ApiException as e:
        return e
    return None


@pytest.mark.feature("RayClusterManagedBy")
def test_cluster_managed_by_another_controller_is_left_alone(k8s, namespace, ray_version, timeouts):
    """A RayCluster whose spec.managedBy names another controller (MultiKueue) gets no Pods, no head Service and
    no status from the operator, while a RayCluster created right after it without managedBy is reconciled. The
    API server refuses a managedBy naming neither the operator nor MultiKueue, and refuses to change managedBy
    once it is set."""
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    core = client.CoreV1Api(k8s)

    err = rejected(lambda: rc.create(body_named(ray_version, "unknown-manager", "example.com/some-controller")))
    assert err is not None and err.status == 422 and "managedBy" in str(err.body or ""), \
        ("creating a RayCluster with managedBy example.com/some-controller: expected HTTP 422 naming managedBy, "
         f"observed {'success' if err is None else f'HTTP {err.status}: {err.body}'}")

    rc.create(body_named(ray_version, "elsewhere", MULTIKUEUE))
    rc.create(body_named(ray_version, "control", None))
    # the operator has acted on the cluster created after the one it must leave alone
    head_pod_must_be_created(k8s, namespace, "control", timeouts.medium)
    wait_until(lambda: rc.get("control"), lambda o: bool(ray.status(o).get("conditions")),
               "RayCluster control (no managedBy) to get status conditions from the operator", timeouts.medium)

    obj = rc.get("elsewhere")
    pods = ray.cluster_pods(k8s, namespace, "elsewhere")
    assert not pods, f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no Pods; observed {describe_pods(pods)}"
    services = [s.metadata.name for s in core.list_namespaced_service(
        namespace, label_selector="ray.io/cluster=elsewhere").items]
    assert not services, f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no Services; observed {services}"
    assert not ray.status(obj), \
        f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no status from the operator; observed {obj.get('status')}"

    err = rejected(lambda: rc.patch("elsewhere", {"spec": {"managedBy": OPERATOR}}))
    assert err is not None and err.status == 422 and "immutable" in str(err.body or ""), \
        (f"changing managedBy from {MULTIKUEUE} to {OPERATOR}: expected HTTP 422 (the field is immutable), observed "
         f"{'success' if err is None else f'HTTP {err.status}: {err.body}'}")
    assert (rc.get("elsewhere")["spec"].get("managedBy")) == MULTIKUEUE, "managedBy changed although refused"
