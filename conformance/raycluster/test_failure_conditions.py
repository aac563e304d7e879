"""RayCluster failure conditions: ReplicaFailure when Pods cannot be created, HeadPodReady after the head is lost."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.conditions import condition, condition_must_be, has_condition
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned, raycluster_must_report_replica_failure
from rayconformance.fixtures.expect.raycluster_pods import new_head_must_be_ready
from rayconformance.fixtures.expect.workloads import describe_pods
from rayconformance.fixtures.waiting import wait_until

from .helpers import ConditionWatch, create_provisioned

QUOTA = "no-pods-allowed"


def head_only(ray_version: str, name: str) -> dict:
    body = ray.sample("raycluster-basic", ray_version)
    body["metadata"]["name"] = name
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 0
    return body


@pytest.mark.feature("RayClusterFailureConditions")
def test_pod_quota_reports_replica_failure_until_lifted(k8s, namespace, ray_version, timeouts):
    """When a ResourceQuota in its namespace admits no Pod, a new RayCluster gets no Pods and reports
    ReplicaFailure=True with reason FailedCreateHeadPod and a message naming the quota; once the quota is removed,
    the cluster comes up (RayClusterProvisioned=True, status.state ready) and ReplicaFailure is gone."""
    core = client.CoreV1Api(k8s)
    core.create_namespaced_resource_quota(namespace, {"metadata": {"name": QUOTA}, "spec": {"hard": {"pods": "0"}}})
    wait_until(lambda: core.read_namespaced_resource_quota(QUOTA, namespace),
               lambda q: (q.status.hard or {}).get("pods") == "0",
               f"ResourceQuota {QUOTA} to be in force (status.hard.pods=0)", timeouts.short, render=lambda q: q.status)
    body = head_only(ray_version, "quota")
    name = body["metadata"]["name"]
    rc = ray.RayResources(k8s, namespace, "RayCluster")
    rc.create(body)

    obj = raycluster_must_report_replica_failure(k8s, namespace, name, "FailedCreateHeadPod", timeouts.medium)
    message = condition(obj, "ReplicaFailure").get("message") or ""
    assert QUOTA in message, \
        f"the ReplicaFailure message should name the ResourceQuota {QUOTA} that refused the head Pod; observed {message!r}"
    pods = ray.cluster_pods(k8s, namespace, name)
    assert not pods, f"no Pod can exist under a quota of 0 Pods; observed {describe_pods(pods)}"

    core.delete_namespaced_resource_quota(QUOTA, namespace)
    obj = raycluster_must_be_provisioned(k8s, namespace, name, timeouts.long)
    obj = wait_until(lambda: rc.get(name), lambda o: not has_condition(o, "ReplicaFailure", "True"),
                     f"RayCluster {name} to drop ReplicaFailure once its head Pod could be created", timeouts.short)
    assert ray.status(obj).get("state") == "ready", \
        f"status.state: expected ready once provisioned, observed {ray.status(obj).get('state')!r}"


@pytest.mark.feature("RayClusterFailureConditions")
def test_head_pod_loss_turns_head_pod_ready_false(k8s, namespace, ray_version, timeouts):
    """When a provisioned RayCluster loses its head Pod, HeadPodReady turns False with a reason (the head Pod
    not found, or the new head not ready yet) while RayClusterProvisioned stays True the whole time; once the new
    head Pod is ready, HeadPodReady is True again."""
    body = head_only(ray_version, "headloss")
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
    old_head = ray.cluster_pods(k8s, namespace, name, "head")[0]

    with ConditionWatch(k8s, namespace, name) as conds:
        client.CoreV1Api(k8s).delete_namespaced_pod(old_head.metadata.name, namespace)
        new_head_must_be_ready(k8s, namespace, name, old_head.metadata.uid, timeouts.long)
        obj = wait_until(lambda: rc.get(name), lambda o: has_condition(o, "HeadPodReady", "True")
                         and any(s == "False" for s, _ in conds.seen("HeadPodReady")),
                         f"RayCluster {name} to report HeadPodReady=False after losing its head Pod, then True "
                         f"again with the new head", timeouts.medium,
                         render=lambda o: f"HeadPodReady over time: {conds.seen('HeadPodReady')}; now "
                         f"{condition(o, 'HeadPodReady')}")
    assert conds.error is None, f"could not watch RayCluster {name}: {conds.error}"
    false = [r for s, r in conds.seen("HeadPodReady") if s == "False"]
    assert all(false), f"HeadPodReady=False must say why (a reason); observed {conds.seen('HeadPodReady')}"
    provisioned = conds.seen("RayClusterProvisioned")
    assert all(s == "True" for s, _ in provisioned), \
        f"RayClusterProvisioned must stay True while the head Pod is replaced; observed over time {provisioned}"
    condition_must_be(obj, "RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime", when="with the new head")
