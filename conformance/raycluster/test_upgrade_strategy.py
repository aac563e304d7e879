"""RayCluster upgradeStrategy Recreate: a changed Pod template replaces all of the cluster's Pods."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster_pods import new_head_must_be_ready, workers_must_be_running_and_ready
from rayconformance.fixtures.expect.workloads import describe_pods

from .helpers import create_provisioned


def revision(pod) -> str | None:
    env = pod.spec.containers[0].env or []
    return next((e.value for e in env if e.name == "CONFORMANCE_REVISION"), None)


@pytest.mark.feature("RayClusterUpgradeStrategyRecreate")
def test_recreate_replaces_all_pods_on_template_change(k8s, namespace, ray_version, timeouts):
    """With upgradeStrategy Recreate, changing the RayCluster's Pod templates (an environment variable of the head
    and of the workers) deletes all its Pods and creates new ones from the new templates: a new head and a new
    worker, Running and Ready, none of the old Pods left."""
    body = ray.sample("raycluster-recreate", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
    old = ray.cluster_pods(k8s, namespace, name)
    old_uids = {p.metadata.uid for p in old}
    old_head = next(p for p in old if p.metadata.labels.get("ray.io/node-type") == "head")

    spec = rc.get(name)["spec"]
    for template in [spec["headGroupSpec"]["template"]] + [g["template"] for g in spec["workerGroupSpecs"]]:
        template["spec"]["containers"][0]["env"] = [{"name": "CONFORMANCE_REVISION", "value": "2"}]
    rc.patch(name, {"spec": {"headGroupSpec": spec["headGroupSpec"], "workerGroupSpecs": spec["workerGroupSpecs"]}})

    head = new_head_must_be_ready(k8s, namespace, name, old_head.metadata.uid, timeouts.long)
    workers = workers_must_be_running_and_ready(k8s, namespace, name, 1, timeouts.long,
                                                what="the worker to be recreated from the changed template")
    pods = ray.cluster_pods(k8s, namespace, name)
    kept = [p.metadata.name for p in pods if p.metadata.uid in old_uids]
    assert not kept, \
        f"upgradeStrategy Recreate must replace every Pod after a template change; still there: {kept} ({describe_pods(pods)})"
    stale = [p.metadata.name for p in [head, *workers] if revision(p) != "2"]
    assert not stale, f"the new Pods must come from the changed templates (CONFORMANCE_REVISION=2); not so: {stale}"
