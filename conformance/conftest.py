"""Fixtures shared by several suites: the external Redis that GCS fault tolerance stores its state in."""
from __future__ import annotations

import pytest
from kubernetes import client

from fixtures import ray
from fixtures.waiting import wait_for


@pytest.fixture
def redis(k8s, namespace, timeouts):
    """samples/redis.yaml in the test's namespace (Service `redis`, password in Secret `redis-password`), ready."""
    ray.create_objects(k8s, namespace, ray.load_sample("redis"))
    apps = client.AppsV1Api(k8s)
    wait_for(lambda: ((apps.read_namespaced_deployment("redis", namespace).status.ready_replicas or 0) >= 1, True),
             timeouts.medium, "the Redis Deployment to be ready",
             observe=lambda: apps.read_namespaced_deployment("redis", namespace).status)
