"""Fixtures shared by several suites: the external Redis that GCS fault tolerance stores its state in."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.namespace import ray_resources_must_be_deleted
from rayconformance.testing.expect.workloads import deployment_must_be_ready
from rayconformance.testing.handles.redis import Access, Redis


@pytest.fixture
def redis(ctx, request):
    """samples/redis.yaml in the test's namespace (Service `redis`, the default user's password in Secret
    `redis-password`, an ACL user in Secret `redis-gcs-user`), ready; a `testing.handles.redis.Redis` handle on it.
    Parametrized indirectly, the parameter is the `Access` (how the test's RayClusters reach the Redis) the handle
    carries; it decides which Redis is made (samples/redis-no-password.yaml for a Redis without password). Afterwards the namespace's Ray resources are deleted first, while the namespace still accepts the
    operator's Redis cleanup Jobs that the RayClusters' finalizers wait for."""
    access = getattr(request, "param", Access())
    ctx.create(ctx.samples(access.sample))
    deployment_must_be_ready(ctx.k8s, ctx.namespace, "redis", ctx.timeouts.medium, what="the Redis Deployment")
    yield Redis(ctx, access)
    ray_resources_must_be_deleted(ctx.k8s, ctx.namespace, ctx.timeouts.long,
                                  what="the test's Ray resources (with GCS fault tolerance)")
