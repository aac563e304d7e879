"""Zero-downtime RayService upgrade (NewCluster) under continuous traffic, and head Pod failure during it."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.traffic import summary
from rayconformance.fixtures.waiting import wait_for

from .helpers import (active_cluster, deploy, describe, elapsed, final_stats, pending_cluster, start_traffic,
                      trigger_upgrade, wait_switched)


@pytest.mark.feature("RayServiceZeroDowntimeUpgrade")
def test_new_cluster_upgrade_drops_no_request(k8s, namespace, ray_version, timeouts, measure):
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, old = obj["metadata"]["name"], active_cluster(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)

    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "1")
    wait_for(lambda: (pending_cluster(rs.get(name)) is not None or active_cluster(rs.get(name)) != old, True),
             timeouts.medium, "a pending RayCluster for the upgrade", observe=lambda: describe(rs.get(name)))
    wait_switched(k8s, namespace, rs, name, old, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    assert stats["failures"] == 0, f"a zero-downtime upgrade must not fail requests: {summary(stats)}"


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade")
def test_pending_head_failure_does_not_break_upgrade(k8s, namespace, ray_version, timeouts, measure):
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, old = obj["metadata"]["name"], active_cluster(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)
    core = client.CoreV1Api(k8s)

    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "head-failure")
    pending = wait_for(lambda: ((p := pending_cluster(rs.get(name))) is not None, p), timeouts.medium,
                       "a pending RayCluster", observe=lambda: describe(rs.get(name)))

    def pending_head():
        hs = core.list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={pending},ray.io/node-type=head").items
        return bool(hs), hs[0] if hs else None

    head = wait_for(pending_head, timeouts.medium, f"the pending cluster {pending}'s head Pod",
                    observe=lambda: describe(rs.get(name)))
    measure("upgrade.pending_head_killed_at_s", elapsed(gen))
    core.delete_namespaced_pod(head.metadata.name, namespace, grace_period_seconds=0)

    wait_switched(k8s, namespace, rs, name, old, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    # The pending cluster serves no traffic before the switch, so its head failing must cost no request.
    assert stats["failures"] == 0, f"losing the pending head during an upgrade must not fail requests: {summary(stats)}"


# With GCS fault tolerance and the head out of the serve Service, a worker keeps serving while the active head is
# gone. Allowed: requests failing within one window of at most this many seconds (first to last failure), e.g.
# while the worker's Serve proxy reconnects to the restarted GCS or while the Service moves to the new cluster.
ACTIVE_HEAD_FAILURE_WINDOW_S = 30


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade", "RayClusterGCSFaultTolerance")
def test_active_head_failure_with_gcs_ft_does_not_break_upgrade(k8s, namespace, ray_version, timeouts, redis,
                                                                measure):
    greeter = ray.load_sample("rayservice-greeter", ray_version)
    docs = [d for d in greeter if d["kind"] == "ConfigMap"] + ray.load_sample("rayservice-greeter-ft", ray_version)
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name = obj["metadata"]["name"]
    old = active_cluster(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)
    core = client.CoreV1Api(k8s)

    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "active-head-failure")
    wait_for(lambda: (pending_cluster(rs.get(name)) is not None, True), timeouts.medium, "a pending RayCluster",
             observe=lambda: describe(rs.get(name)))
    heads = core.list_namespaced_pod(namespace, label_selector=f"ray.io/cluster={old},ray.io/node-type=head").items
    assert heads, f"the active cluster {old} has no head Pod"
    killed_at = elapsed(gen)
    assert killed_at is not None, "could not read the load generator's clock before killing the head"
    measure("upgrade.active_head_killed_at_s", killed_at)
    core.delete_namespaced_pod(heads[0].metadata.name, namespace, grace_period_seconds=0)

    wait_switched(k8s, namespace, rs, name, old, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    window = round(stats["last_failure_s"] - stats["first_failure_s"], 2) if stats["failures"] else 0.0
    measure("traffic.failure_window_s", window)
    assert stats["first_failure_s"] is None or stats["first_failure_s"] >= killed_at - 1, \
        f"requests failed before the active head was killed (at {killed_at}s): {summary(stats)}"
    assert window <= ACTIVE_HEAD_FAILURE_WINDOW_S, \
        (f"requests may fail within at most {ACTIVE_HEAD_FAILURE_WINDOW_S}s when the active head is lost during an "
         f"upgrade (killed at {killed_at}s); they failed from {stats['first_failure_s']}s to "
         f"{stats['last_failure_s']}s: {summary(stats)}")

