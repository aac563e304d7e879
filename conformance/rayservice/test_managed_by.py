"""RayService spec.managedBy: a RayService managed by another controller (e.g. MultiKueue) is not the operator's to
serve."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.managed_by import manager_must_be_immutable_and_known

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
OPERATOR = "ray.io/kuberay-operator"


@pytest.mark.feature("RayServiceManagedBy")
@pytest.mark.samples("rayservice-greeter", "rayservice-invalid")
def test_rayservice_managed_elsewhere_is_left_alone(ctx):
    """A RayService whose spec.managedBy names another controller (MultiKueue) is left alone: it gets no status, no
    finalizer, no RayCluster and no Service, while the operator does handle a RayService beside it that names the
    operator itself as its manager (an invalid one, reported ValidationFailed). Its spec.managedBy cannot be changed afterwards, and a RayService naming
    a manager that is neither the operator nor MultiKueue is refused."""
    body = ctx.sample("rayservice-greeter", "RayService")
    body["spec"]["managedBy"] = MULTIKUEUE
    service = ctx.create_rayservice(body)

    # step 1: the operator is at work in this namespace: it handled its own RayService (naming it as manager)
    own = ctx.sample("rayservice-invalid")
    own["spec"]["managedBy"] = OPERATOR
    ctx.create_rayservice(own).must_report_condition("Ready", "False", "ValidationFailed")

    # step 2: it leaves the other controller's RayService alone
    service.must_be_left_alone(15, why=f"spec.managedBy={MULTIKUEUE}")

    # step 3: spec.managedBy cannot be changed afterwards, and an unknown manager is refused
    other = ctx.sample("rayservice-greeter", "RayService")
    other["metadata"]["name"], other["spec"]["managedBy"] = "unknown-manager", "example.com/not-a-ray-operator"
    manager_must_be_immutable_and_known(service, lambda: ctx.create_rayservice(other), MULTIKUEUE)
