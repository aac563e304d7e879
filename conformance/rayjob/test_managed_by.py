"""RayJob spec.managedBy: a RayJob managed by another controller (e.g. MultiKueue) is not the operator's to run."""
from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.fixtures import ray


def rejection(call) -> tuple[int, str] | None:
    """(HTTP status, message) of the API server's refusal of `call()`, or None if it was accepted."""
    try:
        call()
    except ApiException as e:
        answer = ray.json_or_none(e.body or "")
        return e.status, answer.get("message", "") if isinstance(answer, dict) else str(e.body)
    return None


@pytest.mark.feature("RayJobManagedBy")
@pytest.mark.samples("rayjob-managed-by", "rayjob-basic")
def test_rayjob_managed_elsewhere_is_left_alone(ctx):
    """A RayJob whose spec.managedBy names another controller (MultiKueue) is left alone: it gets no status, no
    finalizer, no RayCluster and no Job, while the operator does handle a RayJob of its own beside it (created
    suspended, that one reports Suspended). Its spec.managedBy cannot be changed afterwards, and a RayJob naming a
    manager that is neither the operator nor MultiKueue is refused."""
    body = ctx.sample("rayjob-managed-by")
    manager = body["spec"]["managedBy"]
    job = ctx.create_rayjob(body)
    witness = ctx.sample("rayjob-basic")  # the operator's own, created suspended: it makes nothing
    witness["spec"]["suspend"] = True

    # step 1: the operator is at work in this namespace: it handled its own RayJob
    ctx.create_rayjob(witness).must_be_suspended()

    # step 2: it leaves the other controller's RayJob alone
    job.must_be_left_alone(15, why=f"spec.managedBy={manager}")

    # step 3: spec.managedBy cannot be changed afterwards
    refused = rejection(lambda: job.patch({"spec": {"managedBy": "ray.io/kuberay-operator"}}))
    after = (job.get() or {}).get("spec", {}).get("managedBy")
    assert refused and refused[0] == 422 and after == manager, \
        (f"expected changing spec.managedBy of RayJob {job.name} from {manager} to ray.io/kuberay-operator to be "
         f"refused (HTTP 422, immutable field); observed {'acceptance' if not refused else refused}, managedBy now "
         f"{after!r}")

    # step 4: an unknown manager is refused
    other = ctx.sample("rayjob-managed-by")
    other["metadata"]["name"], other["spec"]["managedBy"] = "unknown-manager", "example.com/not-a-ray-operator"
    refused = rejection(lambda: ctx.create_rayjob(other))
    assert refused and refused[0] == 422, \
        (f"expected a RayJob with spec.managedBy=example.com/not-a-ray-operator to be refused (HTTP 422); observed "
         f"{'it created' if not refused else refused}")
