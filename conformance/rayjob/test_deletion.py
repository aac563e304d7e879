"""RayJob clean-up: with shutdownAfterJobFinishes, the RayCluster is deleted once ttlSecondsAfterFinished has
passed since the job finished, and not before; deletionStrategy.deletionRules delete the workers, the RayCluster
and the RayJob itself, each once its rule's TTL has passed."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_gone
from rayconformance.fixtures.expect.rayjob import (rayjob_cluster_must_remain, rayjob_must_be_gone,
                                                   rayjob_must_create_its_cluster, rayjob_must_remain,
                                                   rayjob_must_succeed, rayjob_workers_must_be_deleted, seconds)


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


@pytest.mark.feature("RayJobDeletionRules")
def test_deletion_rules_clean_up_in_stages(k8s, namespace, ray_version, timeouts):
    """A RayJob whose deletionRules say, once the job has SUCCEEDED: delete the workers at once, the RayCluster
    after 20 seconds and the RayJob itself after 40, loses its worker Pods right after the job ends (the
    RayCluster and its head stay), its RayCluster no earlier than 20 seconds after the job ended, and is itself
    deleted no earlier than 40 seconds after."""
    body = ray.sample("rayjob-deletion-rules", ray_version)
    name = body["metadata"]["name"]
    ttl = {r["policy"]: r["condition"]["ttlSeconds"] for r in body["spec"]["deletionStrategy"]["deletionRules"]}
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    cluster = rayjob_must_create_its_cluster(k8s, namespace, name, timeouts.medium)
    obj = rayjob_must_succeed(k8s, namespace, name, timeouts.long)
    ended = seconds(ray.status(obj)["endTime"])

    # step 1: the workers go at once; the RayCluster and its head stay
    rayjob_workers_must_be_deleted(k8s, namespace, cluster, timeouts.short,
                                   after=f"the job SUCCEEDED (DeleteWorkers, ttlSeconds {ttl['DeleteWorkers']})")
    heads = [p.metadata.name for p in ray.cluster_pods(k8s, namespace, cluster, "head")]
    assert heads, f"expected DeleteWorkers to keep the head Pod of RayCluster {cluster}; observed no head Pod"

    # step 2: the RayCluster stays until its rule's TTL has passed, then goes
    rayjob_cluster_must_remain(k8s, namespace, cluster, ended + ttl["DeleteCluster"] - 1,
                               why=f"until DeleteCluster's ttlSeconds={ttl['DeleteCluster']} has passed since the "
                                   f"job ended")
    raycluster_must_be_gone(k8s, namespace, cluster, timeouts.short,
                            after=f"DeleteCluster's ttlSeconds={ttl['DeleteCluster']} passed since the job ended")

    # step 3: the RayJob stays until its own rule's TTL has passed, then goes
    rayjob_must_remain(k8s, namespace, name, ended + ttl["DeleteSelf"] - 1,
                       why=f"until DeleteSelf's ttlSeconds={ttl['DeleteSelf']} has passed since the job ended")
    rayjob_must_be_gone(k8s, namespace, name, timeouts.short,
                        after=f"DeleteSelf's ttlSeconds={ttl['DeleteSelf']} passed since the job ended")
