"""Upgrading the operator itself from an earlier release while a RayService serves traffic."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import profiles, ray
from rayconformance.fixtures.expect.rayservice import active_and_pending_clusters, rayservice_upgrade_must_start
from rayconformance.fixtures.traffic import summary

from .helpers import (ObjectWatch, deploy, distinct_states, elapsed, final_stats, start_traffic, trigger_upgrade,
                      wait_switched)

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
def test_operator_upgrade_keeps_serving(k8s, namespace, ray_version, timeouts, measure, operator,
                                        upgrade_source, operator_release_swap):
    """A RayService created under the previous release of the operator (the profile's operatorUpgradeFrom) keeps
    serving with no failed request while the operator is upgraded to this release (its CRDs, then its
    Deployment); the upgrade creates no new RayCluster and the same one stays active, and a NewCluster upgrade
    afterwards still moves the RayService to a new RayCluster with no failed request."""
    if upgrade_source is None:
        pytest.skip(f"operator profile {operator.profile.name} names no operatorUpgradeFrom (the release it is "
                    f"upgraded from)")
    if operator_release_swap is None:
        pytest.skip("the suite did not install the operator (no install section for this provider), so it cannot "
                    "put an earlier release in its place")
    previous = profiles.load(str(profiles.upgrade_source(operator.profile.path, upgrade_source)))

    # step 1: the earlier release's operator (and CRDs) in place of the one under test
    before = operator_release_swap.install_previous(previous)
    # step 2: a RayService created and serving under it, with traffic through its serve Service
    rs, obj = deploy(k8s, namespace, ray_version, timeouts)
    name, (cluster, _) = obj["metadata"]["name"], active_and_pending_clusters(obj)
    gen = start_traffic(k8s, namespace, obj, timeouts)

    with ObjectWatch(k8s, namespace, "rayclusters", relist=True) as clusters, \
            ObjectWatch(k8s, namespace, "rayservices", name, relist=True) as services:
        # step 3: upgrade the operator as a user would: CRDs replaced, then the operator's manifests
        measure("operator_upgrade.started_at_s", elapsed(gen))
        after = operator_release_swap.upgrade()
        ready_at = clusters.clock()
        measure("operator_upgrade.rolled_out_at_s", elapsed(gen))

        # step 4: for a fixed window the upgraded operator keeps the RayService on its cluster
        changed = clusters.first(_cluster_change(cluster), OPERATOR_UPGRADE_WINDOW_S, since_at=ready_at)
        moved = services.first(lambda v: active_and_pending_clusters(v.obj) != (cluster, None), 0)
        clusters.must_not_have_failed()
        services.must_not_have_failed()
        stats = gen.stats()
        measure("operator_upgrade.from_image", before["image"])
        measure("operator_upgrade.to_image", after["image"])
        measure("operator_upgrade.failures", (stats or {}).get("failures"))
        # KubeRay's own record of the release that last wrote the cluster (an in-place update sets the new one)
        active = ray.RayResources(k8s, namespace, "RayCluster").get(cluster)
        measure("operator_upgrade.cluster_kuberay_version",
                ((active or {}).get("metadata", {}).get("annotations") or {}).get("ray.io/kuberay-version"))
        observed = [s for s in (
            changed and _describe_cluster_change(changed, ready_at),
            moved and f"the RayService's active/pending RayClusters became {active_and_pending_clusters(moved.obj)}",
            (stats is None or stats["failures"]) and f"traffic: {summary(stats)}") if s]
        assert not observed, (
            f"upgrading the operator from {before['image']} to {after['image']} must keep RayService {name} "
            f"serving from RayCluster {cluster} (no RayCluster created or deleted, no pending one) with no failed "
            f"request, watched until {OPERATOR_UPGRADE_WINDOW_S}s after the upgraded operator rolled out; "
            f"observed: {'; '.join(observed)}; RayService states:\n  " + "\n  ".join(distinct_states(
                services.snapshot())) + f"\ntraffic so far: {summary(stats)}")

    # step 5: a NewCluster upgrade under the upgraded operator still switches without failed requests
    obj = rs.get(name)
    measure("upgrade.started_at_s", elapsed(gen))
    trigger_upgrade(rs, obj, "after-operator-upgrade")
    rayservice_upgrade_must_start(k8s, namespace, name, cluster, timeouts.medium)
    wait_switched(k8s, namespace, name, cluster, gen, timeouts, measure)
    stats = final_stats(gen, measure)
    assert stats["failures"] == 0, \
        f"a NewCluster upgrade after the operator upgrade must not fail requests: {summary(stats)}"
