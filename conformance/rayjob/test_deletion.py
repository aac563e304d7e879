"""RayJob clean-up: with shutdownAfterJobFinishes, the RayCluster is deleted once ttlSecondsAfterFinished has
passed since the job finished, and not before."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayjob import (rayjob_cluster_must_remain, rayjob_must_create_its_cluster,
                                                   rayjob_must_succeed, seconds)


@pytest.mark.feature("RayJobTTLAfterFinished")
def test_cluster_deleted_only_after_ttl(k8s, namespace, ray_version, timeouts):
    """A RayJob with shutdownAfterJobFinishes and ttlSecondsAfterFinished 30 keeps its RayCluster for 30 seconds
    after the job finished, then deletes it."""
    body = ray.sample("rayjob-ttl", ray_version)
    name, ttl = body["metadata"]["name"], body["spec"]["ttlSecondsAfterFinished"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    cluster = rayjob_must_create_its_cluster(k8s, namespace, name, timeouts.medium)
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long)
    ended = seconds(ray.status(obj)["endTime"])

    # step 1: the RayCluster is kept while the TTL runs
    rayjob_cluster_must_remain(k8s, namespace, cluster, ended + ttl - 1,
                               why=f"until ttlSecondsAfterFinished={ttl} has passed since the job ended")

    # step 2: then it is deleted
    raycluster_must_be_gone(k8s, namespace, cluster, timeouts.medium,
                            after=f"ttlSecondsAfterFinished={ttl} passed since the job ended")
