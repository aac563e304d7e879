"""RayCluster spec.managedBy: a cluster managed by another controller is left alone; the field is checked and
immutable."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.managed_by import rejection
from rayconformance.testing.expect.workloads import describe_pods

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
OPERATOR = "ray.io/kuberay-operator"


def body_named(ctx, name: str, managed_by: str | None) -> dict:
    body = ctx.sample("raycluster-basic")
    body["metadata"]["name"] = name
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 0
    if managed_by:
        body["spec"]["managedBy"] = managed_by
    return body


@pytest.mark.feature("RayClusterManagedBy")
@pytest.mark.samples("raycluster-basic")
def test_cluster_managed_by_another_controller_is_left_alone(ctx):
    """A RayCluster whose spec.managedBy names another controller (MultiKueue) gets no Pods, no head Service and
    no status from the operator, while a RayCluster created right after it naming the operator itself (managedBy
    ray.io/kuberay-operator) is reconciled. The
    API server refuses a managedBy naming neither the operator nor MultiKueue, and refuses to change managedBy
    once it is set."""
    err = rejection(lambda: ctx.create_raycluster(body_named(ctx, "unknown-manager", "example.com/some-controller")))
    assert err is not None and err[0] == 422 and "managedBy" in err[1], \
        ("creating a RayCluster with managedBy example.com/some-controller: expected HTTP 422 naming managedBy, "
         f"observed {'success' if err is None else f'HTTP {err[0]}: {err[1]}'}")

    elsewhere = ctx.create_raycluster(body_named(ctx, "elsewhere", MULTIKUEUE))
    control = ctx.create_raycluster(body_named(ctx, "control", OPERATOR))
    # the operator has acted on the cluster created after the one it must leave alone
    control.head_pod_must_be_created()
    control.must_report_conditions()

    obj = elsewhere.get()
    pods = elsewhere.pods()
    assert not pods, f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no Pods; observed {describe_pods(pods)}"
    services = [s.metadata.name for s in ctx.core.list_namespaced_service(
        ctx.namespace, label_selector="ray.io/cluster=elsewhere").items]
    assert not services, f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no Services; observed {services}"
    assert not ray.status(obj), \
        f"RayCluster elsewhere (managedBy {MULTIKUEUE}) must get no status from the operator; observed {obj.get('status')}"

    err = rejection(lambda: elsewhere.patch({"spec": {"managedBy": OPERATOR}}))
    assert err is not None and err[0] == 422 and "immutable" in err[1], \
        (f"changing managedBy from {MULTIKUEUE} to {OPERATOR}: expected HTTP 422 (the field is immutable), observed "
         f"{'success' if err is None else f'HTTP {err[0]}: {err[1]}'}")
    assert elsewhere.get()["spec"].get("managedBy") == MULTIKUEUE, "managedBy changed although refused"
