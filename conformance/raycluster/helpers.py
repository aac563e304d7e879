"""The one step most RayCluster tests start with: create a RayCluster and wait until it is provisioned."""
from __future__ import annotations

from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned


def create_provisioned(api: client.ApiClient, namespace: str, body: dict, timeout: float
                       ) -> tuple[ray.RayResources, dict]:
    """Create the RayCluster and wait for RayClusterProvisioned=True; returns its resources and the object."""
    __tracebackhide__ = True
    rc = ray.RayResources(api, namespace, "RayCluster")
    rc.create(body)
    return rc, raycluster_must_be_provisioned(api, namespace, body["metadata"]["name"], timeout)
