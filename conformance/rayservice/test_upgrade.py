"""Zero-downtime RayService upgrade (NewCluster) under continuous traffic, and head Pod failure during it."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import head_pod_must_be_created
from rayconformance.fixtures.expect.rayservice import (active_and_pending_clusters,
                                                       pending_cluster_must_get_applications,
                                                       rayservice_must_have_pending_cluster,
                                                       rayservice_upgrade_must_start)
from rayconformance.fixtures.traffic import summary

from .helpers import deploy, elapsed, final_stats, start_traffic, trigger_upgrade, wait_switched

# How long the upgraded application's replica takes to start (samples/rayservice-greeter.yaml reads it): long
# enough to lose the pending head between the operator's submission and the application running.
APP_START_DELAY_S = 20


@pytest.mark.feature("RayServiceZeroDowntimeUpgrade")
def test_new_cluster_upgrade_drops_no_request(k8s, namespace, ray_version, timeouts, measure):
    """Changing a RayService's cluster spec upgrades it to a new RayCluster (NewCluster): traffic switches to
    the new cluster, the old one is deleted, and no request sent through the serve Service meanwhile fails."""
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, (old, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)

    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "1")
    rayservice_upgrade_must_start(k8s, namespace, name, old, timeouts.medium)
    wait_switched(k8s, namespace, name, old, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    assert stats["failures"] == 0, f"a zero-downtime upgrade must not fail requests: {summary(stats)}"


@pytest.mark.feature("RayServiceHeadFailureDuringUpgrade")
def test_pending_head_failure_does_not_break_upgrade(k8s, namespace, ray_version, timeouts, measure):
    """Losing the pending RayCluster's head Pod during a NewCluster upgrade, after the operator has already
    submitted the new Serve config to it, does not stop the upgrade: the restarted head has no Serve application,
    so the operator must notice and submit the config again; traffic then switches to the new RayCluster, and no
    request fails."""
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, (old, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)

    # step 1: an upgrade whose new application takes a while to start (it stays DEPLOYING for that long)
    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "head-failure", env={"GREETER_INIT_DELAY_S": str(APP_START_DELAY_S)})
    pending = rayservice_must_have_pending_cluster(k8s, namespace, name, timeouts.medium)

    # step 2: once the operator has submitted the Serve config to the pending cluster, its head Pod is lost
    pending_cluster_must_get_applications(k8s, namespace, name, pending, timeouts.medium)
    head = head_pod_must_be_created(k8s, namespace, pending, timeouts.short)
    measure("upgrade.pending_head_killed_at_s", elapsed(gen))
    client.CoreV1Api(k8s).delete_namespaced_pod(head.metadata.name, namespace, grace_period_seconds=0)

    # step 3: the upgrade still completes (the config submitted again), without a failed request
    wait_switched(k8s, namespace, name, old, gen, timeouts, measure)
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
    """With GCS fault tolerance, losing the active RayCluster's head Pod during a NewCluster upgrade fails
    requests for at most a short window, none before the head was lost, and the upgrade still completes."""
    greeter = ray.load_sample("rayservice-greeter", ray_version)
    docs = [d for d in greeter if d["kind"] == "ConfigMap"] + ray.load_sample("rayservice-greeter-ft", ray_version)
    rs, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    name, (old, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)

    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "active-head-failure")
    rayservice_must_have_pending_cluster(k8s, namespace, name, timeouts.medium)
    heads = ray.cluster_pods(k8s, namespace, old, "head")
    assert heads, f"the active cluster {old} has no head Pod"
    killed_at = elapsed(gen)
    assert killed_at is not None, "could not read the load generator's clock before killing the head"
    measure("upgrade.active_head_killed_at_s", killed_at)
    client.CoreV1Api(k8s).delete_namespaced_pod(heads[0].metadata.name, namespace, grace_period_seconds=0)

    wait_switched(k8s, namespace, name, old, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    window = round(stats["last_failure_s"] - stats["first_failure_s"], 2) if stats["failures"] else 0.0
    measure("traffic.failure_window_s", window)
    assert stats["first_failure_s"] is None or stats["first_failure_s"] >= killed_at - 1, \
        f"requests failed before the active head was killed (at {killed_at}s): {summary(stats)}"
    assert window <= ACTIVE_HEAD_FAILURE_WINDOW_S, \
        (f"requests may fail within at most {ACTIVE_HEAD_FAILURE_WINDOW_S}s when the active head is lost during an "
         f"upgrade (killed at {killed_at}s); they failed from {stats['first_failure_s']}s to "
         f"{stats['last_failure_s']}s: {summary(stats)}")

