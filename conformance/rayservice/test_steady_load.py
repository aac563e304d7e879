"""A RayService left alone under a steady load: what KubeRay's static-service check (TestStaticRayService) asks of
an operator, that once Ready it keeps serving and touches nothing."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import no_pod_must_come_or_go, no_raycluster_must_be_created
from rayconformance.testing.expect.traffic import load_generator_must_get_more_answers
from rayconformance.testing.traffic import summary

from rayconformance.testing.handles.rayservice import TRAFFIC_RATE

from .helpers import deploy

STEADY_ANSWERS = 60 * TRAFFIC_RATE  # a minute of answers at the load generator's rate


@pytest.mark.feature("RayServiceReady")
@pytest.mark.samples("rayservice-greeter", "loadgen")
def test_steady_load_is_served_without_failures(ctx):
    """A Ready RayService left alone serves a steady load through its serve Service (20 requests/s for about a
    minute) without a failed request, and the operator changes nothing meanwhile: the RayService stays Ready on the
    same RayCluster, its head and serve Services stay the same objects selecting that cluster, and no RayCluster
    and no Pod is created or deleted."""
    service, obj = deploy(ctx)
    cluster, _ = active_and_pending_clusters(obj)
    gen = service.start_traffic()

    with service.watch() as watch, service.watch_services() as services, ctx.watch("RayCluster") as clusters, \
            ctx.watch_pods(None, node_type=None) as pods:
        # step 1: a minute of steady load
        before = gen.stats()
        load_generator_must_get_more_answers(gen, before, STEADY_ANSWERS, STEADY_ANSWERS / TRAFFIC_RATE + ctx.timeouts.medium,
                                             after="the RayService was Ready")

    # step 2: the operator left everything as it was (its Services first: a replaced Service also costs readiness)
    service.services_must_have_stayed(services, through="a minute of steady load")
    service.must_have_stayed_ready(watch, through="a minute of steady load")
    service.must_have_stayed_on(watch, cluster, through="a minute of steady load")
    no_raycluster_must_be_created(clusters, through="a minute of steady load")
    no_pod_must_come_or_go(pods, through="a minute of steady load")

    # step 3: no request failed
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, f"a RayService left alone must not fail requests under a steady load: {summary(stats)}"
