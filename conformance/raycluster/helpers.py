"""The one step most RayCluster tests start with: create a RayCluster and wait until it is provisioned."""
from __future__ import annotations

from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import ray_job_must_succeed, raycluster_must_be_provisioned
from rayconformance.fixtures.expect.workloads import describe_pods

# Old names, until test_gpu.py moves to fixtures.expect (it waits for the provider interface).
pods, run_ray_job = ray.cluster_pods, ray_job_must_succeed
__all__ = ["create_provisioned", "describe_pods", "pods", "run_ray_job"]


def create_provisioned(api: client.ApiClient, namespace: str, body: dict, timeout: float
                       ) -> tuple[ray.RayResources, dict]:
    """Create the RayCluster and wait for RayClusterProvisioned=True; returns its resources and the object."""
    __tracebackhide__ = True
    rc = ray.RayResources(api, namespace, "RayCluster")
    rc.create(body)
    return rc, raycluster_must_be_provisioned(api, namespace, body["metadata"]["name"], timeout)
