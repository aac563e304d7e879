"""RayCluster upgradeStrategy Recreate: a changed Pod template replaces all of the cluster's Pods."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.raycluster_history import old_pods_must_go_before_new_ones
from rayconformance.testing.expect.workloads import describe_pods


def revision(pod) -> str | None:
    env = pod.spec.containers[0].env or []
    return next((e.value for e in env if e.name == "CONFORMANCE_REVISION"), None)


@pytest.mark.feature("RayClusterUpgradeStrategyRecreate")
@pytest.mark.samples("raycluster-recreate")
def test_recreate_replaces_all_pods_on_template_change(ctx):
    """With upgradeStrategy Recreate, changing the RayCluster's Pod templates (an environment variable of the head
    and of the workers) deletes all its Pods and creates new ones from the new templates: a new head and a new
    worker, Running and Ready, none of the old Pods left. Watched from before the change: every old Pod is
    deleted before the first new one is created (a recreation, not a rolling replacement)."""
    cluster = ctx.create_raycluster("raycluster-recreate")
    cluster.must_be_provisioned()
    old_uids = {p.metadata.uid for p in cluster.pods()}
    old_head = cluster.head_pod()

    spec = cluster.get()["spec"]
    for template in [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]:
        template["spec"]["containers"][0]["env"] = [{"name": "CONFORMANCE_REVISION", "value": "2"}]
    with ctx.watch_pods(cluster.name, None) as pods:
        cluster.patch({"spec": {"headGroupSpec": spec["headGroupSpec"], "workerGroupSpecs": spec["workerGroupSpecs"]}})

        head = cluster.new_head_must_be_ready(old_head.metadata.uid, ctx.timeouts.long)
        workers = cluster.workers_must_be_running_and_ready(1, what="the worker to be recreated from the changed template")
    old_pods_must_go_before_new_ones(pods, old_uids, what="upgradeStrategy Recreate after a template change")
    pods = cluster.pods()
    kept = [p.metadata.name for p in pods if p.metadata.uid in old_uids]
    assert not kept, \
        f"upgradeStrategy Recreate must replace every Pod after a template change; still there: {kept} ({describe_pods(pods)})"
    stale = [p.metadata.name for p in [head, *workers] if revision(p) != "2"]
    assert not stale, f"the new Pods must come from the changed templates (CONFORMANCE_REVISION=2); not so: {stale}"
