"""Upgrading the operator itself from an earlier release while a RayService serves traffic."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.created import raycluster_traces_besides
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import distinct_states
from rayconformance.testing.traffic import summary

from .helpers import deploy

# How long the test watches, once the upgraded operator has rolled out, for a RayCluster that must not come (or
# go) and for the RayService moving off its cluster. KubeRay's new Pod takes over within one leader-election
# lease (15 s) and then reconciles every RayService at once and every 2 s: a wrong decision (a new cluster)
# shows as a pending RayCluster within a few passes.
OPERATOR_UPGRADE_WINDOW_S = 60


def _cluster_change(cluster: str):
    """A RayCluster version that is not the active `cluster` alive: another RayCluster, or `cluster` deleted."""
    def holds(v) -> bool:
        meta = v.obj["metadata"]
        return meta["name"] != cluster or v.type == "DELETED" or bool(meta.get("deletionTimestamp"))
    return holds


def _describe_cluster_change(v, ready_at: float) -> str:
    meta = v.obj["metadata"]
    what = "deleted" if v.type == "DELETED" or meta.get("deletionTimestamp") else "created"
    return f"RayCluster {meta['name']} {what} ({v.at - ready_at:+.1f}s after the upgraded operator rolled out)"


@pytest.mark.serial  # it swaps the operator every test uses
@pytest.mark.feature("RayServiceOperatorUpgrade")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_operator_upgrade_keeps_serving(ctx, operator_release_swap):
    """A RayService created under the previous release of the operator (the profile's operatorUpgradeFrom) keeps
    serving with no failed request while the operator is upgraded to this release (its CRDs, then its
    Deployment); the upgrade creates no new RayCluster and the same one stays active, and a NewCluster upgrade
    afterwards still moves the RayService to a new RayCluster with no failed request."""
    swap, previous = operator_release_swap

    # step 1: the earlier release's operator (and CRDs) in place of the one under test
    before = swap.install_previous(previous)
    # step 2: a RayService created and serving under it, with traffic through its serve Service
    service, obj = deploy(ctx)
    cluster, _ = active_and_pending_clusters(obj)
    uid = ctx.raycluster(cluster).get()["metadata"]["uid"]
    gen = service.start_traffic()

    with ctx.watch("RayCluster", relist=True) as clusters, service.watch(relist=True) as services:
        # step 3: upgrade the operator as a user would: CRDs replaced, then the operator's manifests
        ctx.measure("operator_upgrade.started_at_s", gen.elapsed())
        after = swap.upgrade()
        ready_at = clusters.clock()
        ctx.measure("operator_upgrade.rolled_out_at_s", gen.elapsed())

        # step 4: for a fixed window the upgraded operator keeps the RayService on its cluster
        # the CRDs' replacement may expire both watches: what they could not see there is looked for afresh
        def fresh_look(gaps) -> str | None:
            return raycluster_traces_besides(ctx.k8s, ctx.namespace, cluster, uid)

        changed = clusters.first(_cluster_change(cluster), OPERATOR_UPGRADE_WINDOW_S, since_at=ready_at,
                                 gaps_checked=fresh_look)
        moved = services.first(lambda v: active_and_pending_clusters(v.obj) != (cluster, None), 0,
                               gaps_checked=fresh_look)
        ctx.measure("operator_upgrade.watch_gaps", [g.describe(clusters.start) for g in clusters.gaps + services.gaps])
        clusters.must_not_have_failed()
        services.must_not_have_failed()
        stats = gen.stats()
        ctx.measure("operator_upgrade.from_image", before["image"])
        ctx.measure("operator_upgrade.to_image", after["image"])
        ctx.measure("operator_upgrade.failures", (stats or {}).get("failures"))
        # KubeRay's own record of the release that last wrote the cluster (an in-place update sets the new one)
        active = ctx.raycluster(cluster).get()
        ctx.measure("operator_upgrade.cluster_kuberay_version",
                ((active or {}).get("metadata", {}).get("annotations") or {}).get("ray.io/kuberay-version"))
        observed = [s for s in (
            changed and _describe_cluster_change(changed, ready_at),
            moved and f"the RayService's active/pending RayClusters became {active_and_pending_clusters(moved.obj)}",
            (stats is None or stats["failures"]) and f"traffic: {summary(stats)}") if s]
        assert not observed, (
            f"upgrading the operator from {before['image']} to {after['image']} must keep RayService {service.name} "
            f"serving from RayCluster {cluster} (no RayCluster created or deleted, no pending one) with no failed "
            f"request, watched until {OPERATOR_UPGRADE_WINDOW_S}s after the upgraded operator rolled out; "
            f"observed: {'; '.join(observed)}; RayService states:\n  " + "\n  ".join(distinct_states(
                services.snapshot())) + f"\ntraffic so far: {summary(stats)}")

    # step 5: a NewCluster upgrade under the upgraded operator still switches without failed requests
    ctx.measure("upgrade.started_at_s", gen.elapsed())
    service.trigger_upgrade("after-operator-upgrade")
    service.must_start_upgrade(cluster)
    service.must_complete_upgrade(cluster, gen)
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, \
        f"a NewCluster upgrade after the operator upgrade must not fail requests: {summary(stats)}"
