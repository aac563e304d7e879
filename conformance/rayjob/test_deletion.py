"""RayJob clean-up: with shutdownAfterJobFinishes, the RayCluster is deleted once ttlSecondsAfterFinished has
passed since the job finished, and not before; deletionStrategy.deletionRules delete the workers, the RayCluster
and the RayJob itself, each once its rule's TTL has passed."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.rayjob import seconds


@pytest.mark.feature("RayJobTTLAfterFinished")
@pytest.mark.samples("rayjob-ttl")
def test_cluster_deleted_only_after_ttl(ctx):
    """A RayJob with shutdownAfterJobFinishes and ttlSecondsAfterFinished 30 keeps its RayCluster for 30 seconds
    after the job finished, then deletes it."""
    body = ctx.sample("rayjob-ttl")
    ttl = body["spec"]["ttlSecondsAfterFinished"]
    job = ctx.create_rayjob(body)

    cluster = job.must_create_its_cluster()
    ended = seconds(ray.status(job.must_succeed())["endTime"])

    # step 1: the RayCluster is kept while the TTL runs
    cluster.must_remain(ended + ttl - 1, why=f"until ttlSecondsAfterFinished={ttl} has passed since the job ended")

    # step 2: then it is deleted
    cluster.must_be_gone(after=f"ttlSecondsAfterFinished={ttl} passed since the job ended")


@pytest.mark.feature("RayJobDeletionRules")
@pytest.mark.samples("rayjob-deletion-rules")
def test_deletion_rules_clean_up_in_stages(ctx):
    """A RayJob whose deletionRules say, once the job has SUCCEEDED: delete the workers at once, the RayCluster
    after 20 seconds and the RayJob itself after 40, loses its worker Pods right after the job ends (the
    RayCluster and its head stay), its RayCluster no earlier than 20 seconds after the job ended, and is itself
    deleted no earlier than 40 seconds after."""
    body = ctx.sample("rayjob-deletion-rules")
    ttl = {r["policy"]: r["condition"]["ttlSeconds"] for r in body["spec"]["deletionStrategy"]["deletionRules"]}
    job = ctx.create_rayjob(body)

    cluster = job.must_create_its_cluster()
    ended = seconds(ray.status(job.must_succeed())["endTime"])

    # step 1: the workers go at once; the RayCluster and its head stay
    cluster.workers_must_be_deleted(ctx.timeouts.short,
                                    after=f"the job SUCCEEDED (DeleteWorkers, ttlSeconds {ttl['DeleteWorkers']})")
    heads = [p.metadata.name for p in cluster.pods("head")]
    assert heads, f"expected DeleteWorkers to keep the head Pod of RayCluster {cluster.name}; observed no head Pod"

    # step 2: the RayCluster stays until its rule's TTL has passed, then goes
    cluster.must_remain(ended + ttl["DeleteCluster"] - 1,
                        why=f"until DeleteCluster's ttlSeconds={ttl['DeleteCluster']} has passed since the job ended")
    cluster.must_be_gone(ctx.timeouts.short,
                         after=f"DeleteCluster's ttlSeconds={ttl['DeleteCluster']} passed since the job ended")

    # step 3: the RayJob stays until its own rule's TTL has passed, then goes
    job.must_remain(ended + ttl["DeleteSelf"] - 1,
                    why=f"until DeleteSelf's ttlSeconds={ttl['DeleteSelf']} has passed since the job ended")
    job.must_be_gone(ctx.timeouts.short,
                     after=f"DeleteSelf's ttlSeconds={ttl['DeleteSelf']} passed since the job ended")
