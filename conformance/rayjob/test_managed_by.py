"""RayJob spec.managedBy: a RayJob managed by another controller (e.g. MultiKueue) is not the operator's to run."""
from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import rayjob_must_be_left_alone, rayjob_must_be_suspended


def rejection(call) -> tuple[int, str] | None:
    """(HTTP status, message) of the API server's refusal of `call()`, or None if it was accepted."""
    try:
        call()
    except ApiException as e:
        answer = ray.json_or_none(e.body or "")
        return e.status, answer.get("message", "") if isinstance(answer, dict) else str(e.body)
    return None


@pytest.mark.feature("RayJobManagedBy")
def test_rayjob_managed_elsewhere_is_left_alone(k8s, namespace, ray_version, timeouts):
    """A RayJob whose spec.managedBy names another controller (MultiKueue) is left alone: it gets no status, no
    finalizer, no RayCluster and no Job, while the operator does handle a RayJob of its own beside it (created
    suspended, that one reports Suspended). Its spec.managedBy cannot be changed afterwards, and a RayJob naming a
    manager that is neither the operator nor MultiKueue is refused."""
    rj = ray.RayResources(k8s, namespace, "RayJob")
    body = ray.sample("rayjob-managed-by", ray_version)
    name, manager = body["metadata"]["name"], body["spec"]["managedBy"]
    rj.create(body)
    witness = ray.sample("rayjob-basic", ray_version)  # the operator's own, created suspended: it makes nothing
    witness["spec"]["suspend"] = True
    rj.create(witness)

    # step 1: the operator is at work in this namespace: it handled its own RayJob
    rayjob_must_be_suspended(k8s, namespace, witness["metadata"]["name"], timeouts.medium)

    # step 2: it leaves the other controller's RayJob alone
    rayjob_must_be_left_alone(k8s, namespace, name, 15, why=f"spec.managedBy={manager}")

    # step 3: spec.managedBy cannot be changed afterwards
    refused = rejection(lambda: rj.patch(name, {"spec": {"managedBy": "ray.io/kuberay-operator"}}))
    after = (rj.get(name) or {}).get("spec", {}).get("managedBy")
    assert refused and refused[0] == 422 and after == manager, \
        (f"expected changing spec.managedBy of RayJob {name} from {manager} to ray.io/kuberay-operator to be refused "
         f"(HTTP 422, immutable field); observed {'acceptance' if not refused else refused}, managedBy now {after!r}")

    # step 4: an unknown manager is refused
    other = ray.sample("rayjob-managed-by", ray_version)
    other["metadata"]["name"], other["spec"]["managedBy"] = "unknown-manager", "example.com/not-a-ray-operator"
    refused = rejection(lambda: rj.create(other))
    assert refused and refused[0] == 422, \
        (f"expected a RayJob with spec.managedBy=example.com/not-a-ray-operator to be refused (HTTP 422); observed "
         f"{'it created' if not refused else refused}")
