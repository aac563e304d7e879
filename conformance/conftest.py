"""Fixtures shared by several suites: the external Redis that GCS fault tolerance stores its state in."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.workloads import deployment_must_be_ready
from rayconformance.fixtures.waiting import wait_until


@pytest.fixture
def redis(k8s, namespace, timeouts):
    """samples/redis.yaml in the test's namespace (Service `redis`, password in Secret `redis-password`), ready.
    Afterwards the namespace's Ray resources are deleted first, while the namespace still accepts the
    operator's Redis cleanup Jobs that the RayClusters' finalizers wait for."""
    ray.create_objects(k8s, namespace, ray.load_sample("redis"))
    deployment_must_be_ready(k8s, namespace, "redis", timeouts.medium, what="the Redis Deployment")
    yield
    kinds = [ray.RayResources(k8s, namespace, kind) for kind in ("RayService", "RayJob", "RayCluster")]
    for res in kinds:
        for obj in res.list():
            res.delete(obj["metadata"]["name"])
    wait_until(lambda: [f"{o['kind']} {o['metadata']['name']}" for res in kinds for o in res.list()],
               lambda left: not left, "the test's Ray resources (with GCS fault tolerance) to be deleted",
               timeouts.long)
