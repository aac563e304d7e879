"""Fixtures shared by several suites: the external Redis that GCS fault tolerance stores its state in."""
from __future__ import annotations

import pytest

from rayconformance.fixtures.expect.namespace import ray_resources_must_be_deleted
from rayconformance.fixtures.expect.workloads import deployment_must_be_ready


@pytest.fixture
def redis(ctx):
    """samples/redis.yaml in the test's namespace (Service `redis`, password in Secret `redis-password`), ready.
    Afterwards the namespace's Ray resources are deleted first, while the namespace still accepts the
    operator's Redis cleanup Jobs that the RayClusters' finalizers wait for."""
    ctx.create(ctx.samples("redis"))
    deployment_must_be_ready(ctx.k8s, ctx.namespace, "redis", ctx.timeouts.medium, what="the Redis Deployment")
    yield
    ray_resources_must_be_deleted(ctx.k8s, ctx.namespace, ctx.timeouts.long,
                                  what="the test's Ray resources (with GCS fault tolerance)")
