"""RayJob spec.managedBy: a RayJob managed by another controller (e.g. MultiKueue) is not the operator's to run."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.managed_by import manager_must_be_immutable_and_known


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

    # step 3: spec.managedBy cannot be changed afterwards, and an unknown manager is refused
    other = ctx.sample("rayjob-managed-by")
    other["metadata"]["name"], other["spec"]["managedBy"] = "unknown-manager", "example.com/not-a-ray-operator"
    manager_must_be_immutable_and_known(job, lambda: ctx.create_rayjob(other), manager)
