"""RayJob clean-up: with shutdownAfterJobFinishes, the RayCluster is deleted once ttlSecondsAfterFinished has
passed since the job finished, and not before; deletionStrategy.deletionRules delete the workers, the RayCluster
and the RayJob itself, each once its rule's TTL has passed."""
from __future__ import annotations

import time

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.rayjob import describe_rayjob, seconds


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


# How long a test watches what a rule must leave in place (its TTL is 0: whatever it deletes goes at once).
KEPT_WINDOW_S = 20
# what each policy deletes: (workers, RayCluster, RayJob)
DELETES = {"DeleteWorkers": (True, False, False), "DeleteCluster": (True, True, False),
           "DeleteSelf": (True, True, True), "DeleteNone": (False, False, False)}
# (case id, when the rule applies, its policy); "legacy" is onSuccess/onFailure with shutdownAfterJobFinishes
POLICIES = [(f"{when}-{policy}", when, policy) for when in ("succeeded", "failed") for policy in DELETES] + [
    ("legacy-onSuccess-DeleteWorkers", "legacy", "DeleteWorkers"),
    ("legacy-onSuccess-DeleteCluster", "legacy", "DeleteCluster")]


def deletion_strategy(body: dict, when: str, policy: str) -> None:
    spec = body["spec"]
    if when == "legacy":
        spec["shutdownAfterJobFinishes"] = True
        spec["deletionStrategy"] = {"onSuccess": {"policy": policy}, "onFailure": {"policy": "DeleteCluster"}}
        return
    condition = {"jobStatus": "SUCCEEDED"} if when == "succeeded" else {"jobDeploymentStatus": "Failed"}
    spec["deletionStrategy"] = {"deletionRules": [{"policy": policy, "condition": {**condition, "ttlSeconds": 0}}]}
    if when == "failed":
        spec["entrypoint"] = "python -c \"import sys; print('rayconformance job fails'); sys.exit(1)\""


@pytest.mark.feature("RayJobDeletionRules")
@pytest.mark.samples("rayjob-deletion-rules")
@pytest.mark.parametrize("case", POLICIES, ids=[c[0] for c in POLICIES])
def test_each_deletion_policy_deletes_only_its_part(ctx, case):
    """A RayJob whose one deletion rule applies (its job SUCCEEDED, or its deployment Failed) deletes exactly what
    the rule's policy names once it finished: DeleteWorkers its worker Pods (the RayCluster and its head stay),
    DeleteCluster its RayCluster (the RayJob stays), DeleteSelf the RayJob and with it its RayCluster, DeleteNone
    nothing. The legacy onSuccess policy, with shutdownAfterJobFinishes, acts the same way (DeleteWorkers keeps the
    RayCluster that shutdownAfterJobFinishes alone would delete; DeleteCluster deletes it, keeping the RayJob)."""
    _, when, policy = case
    workers_go, cluster_goes, job_goes = DELETES[policy]
    body = ctx.sample("rayjob-deletion-rules")
    body["metadata"]["name"] = f"{policy.lower()}-{when}"
    deletion_strategy(body, when, policy)
    rule = f"{policy} (the job {'failed' if when == 'failed' else 'succeeded'}" + \
           (", legacy onSuccess)" if when == "legacy" else ", ttlSeconds 0)")
    expected = ({"jobDeploymentStatus": "Failed"} if when == "failed"
                else {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"})
    with ctx.watch("RayJob", body["metadata"]["name"]) as versions:  # DeleteSelf may delete it as soon as it ends
        job = ctx.create_rayjob(body)

        # step 1: the job ends as the rule expects
        cluster = job.must_create_its_cluster()
        finished = versions.first(lambda v: ray.status(v.obj).get("jobDeploymentStatus") in ("Complete", "Failed"),
                                  ctx.timeouts.job)
    versions.must_not_have_failed()
    ended = ray.status(finished.obj if finished else None)
    assert finished and all(ended.get(k) == v for k, v in expected.items()), \
        (f"expected RayJob {job.name} to end with {expected}; observed "
         f"{describe_rayjob(finished.obj) if finished else 'no end within the job timeout'}")
    workers = {p.metadata.uid for p in cluster.pods("worker")}

    # step 2: what the policy deletes goes
    if job_goes:
        job.must_be_gone(after=rule)
    if cluster_goes:
        cluster.must_be_gone(after=rule)
    elif workers_go:
        cluster.workers_must_be_deleted(after=rule)

    # step 3: what it does not delete stays
    until = time.time() + KEPT_WINDOW_S
    if not cluster_goes:
        cluster.must_remain(until, why=f"{rule} does not delete the RayCluster")
        heads = [p.metadata.name for p in cluster.pods("head")]
        assert heads, f"expected {rule} to keep the head Pod of RayCluster {cluster.name}; observed no head Pod"
    if not job_goes:
        job.must_remain(until, why=f"{rule} does not delete the RayJob")
    if not workers_go:
        kept = {p.metadata.uid for p in cluster.pods("worker")}
        assert workers and kept == workers, (f"expected {rule} to keep the worker Pods of RayCluster {cluster.name}; "
                                             f"observed {len(workers)} worker Pods when the job ended, "
                                             f"{len(kept & workers)} of them left {KEPT_WINDOW_S} s later")


@pytest.mark.feature("RayJobDeletionRules")
@pytest.mark.samples("rayjob-deletion-rules")
def test_delete_workers_rule_waits_for_its_ttl(ctx):
    """A RayJob whose one rule says DeleteWorkers 20 seconds after the job SUCCEEDED keeps its worker Pods for
    those 20 seconds after the job ended, then loses them, while its RayCluster, the head Pod and the RayJob
    stay."""
    ttl = 20
    body = ctx.sample("rayjob-deletion-rules")
    body["metadata"]["name"] = "delete-workers-later"
    body["spec"]["deletionStrategy"] = {"deletionRules": [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}]}
    rule = f"DeleteWorkers (the job succeeded, ttlSeconds {ttl})"
    job = ctx.create_rayjob(body)

    cluster = job.must_create_its_cluster()
    ended = seconds(ray.status(job.must_succeed())["endTime"])

    # step 1: the workers are kept while the rule's TTL runs
    cluster.workers_must_remain(ended + ttl - 1, why=f"until {rule} is due, {ttl}s after the job ended")

    # step 2: then they go, and only they
    cluster.workers_must_be_deleted(after=f"{rule} was due")
    until = time.time() + KEPT_WINDOW_S
    cluster.must_remain(until, why=f"{rule} does not delete the RayCluster")
    heads = [p.metadata.name for p in cluster.pods("head")]
    assert heads, f"expected {rule} to keep the head Pod of RayCluster {cluster.name}; observed no head Pod"
    job.must_remain(until, why=f"{rule} does not delete the RayJob")
