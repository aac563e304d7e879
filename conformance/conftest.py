"""Fixtures shared by several suites: the external Redis that GCS fault tolerance stores its state in."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for


@pytest.fixture
def redis(k8s, namespace, timeouts):
    """samples/redis.yaml in the test's namespace (Service `redis`, password in Secret `redis-password`), ready.
    Afterwards the namespace's Ray resources are deleted first, while the namespace still accepts the
    operator's Redis cleanup Jobs that the RayClusters' finalizers wait for."""
    ray.create_objects(k8s, namespace, ray.load_sample("redis"))
    apps = client.AppsV1Api(k8s)
    wait_for(lambda: ((apps.read_namespaced_deployment("redis", namespace).status.ready_replicas or 0) >= 1, True),
             timeouts.medium, "the Redis Deployment to be ready",
             observe=lambda: apps.read_namespaced_deployment("redis", namespace).status)
    yield
    kinds = [ray.RayResources(k8s, namespace, kind) for kind in ("RayService", "RayJob", "RayCluster")]
    for res in kinds:
        for obj in res.list():
            res.delete(obj["metadata"]["name"])
    left = lambda: [f"{o['kind']} {o['metadata']['name']}" for res in kinds for o in res.list()]  # noqa: E731
    wait_for(lambda: (not (names := left()), names), timeouts.long,
             "the test's Ray resources (with GCS fault tolerance) to be deleted", observe=left)
