"""A RayService scaled by Serve and Ray's autoscaler together: load adds a replica and the worker it needs, the end
of the load takes both away, and the RayService stays Ready on one RayCluster throughout."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import no_raycluster_must_be_created
from rayconformance.testing.traffic import summary

from .helpers import deploy, greeter


@pytest.mark.feature("RayServiceAutoscaling")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-autoscaling", "loadgen")
def test_load_scales_replicas_and_workers_up_and_back(ctx):
    """A RayService whose Serve deployment autoscales (1-2 replicas of a CPU each) on a RayCluster with Ray's
    in-tree autoscaler (1-2 workers of a CPU each, the head none): 20 requests/s make Serve ask for a second
    replica and the autoscaler add a second worker Pod for it; once the load stops, the replica and then the idle
    worker go, back to one worker. No request fails, the RayService stays Ready, and no new RayCluster is made (the
    autoscaler's changes to worker replicas are not an upgrade)."""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-autoscaling"))
    cluster = ctx.raycluster(active_and_pending_clusters(obj)[0])
    cluster.workers_must_be_running_and_ready(1, what="the RayService's RayCluster to start with minReplicas=1")

    with service.watch() as watch, ctx.watch("RayCluster") as clusters, cluster.watch_pods() as pods:
        # step 1: under load, a second replica and the worker it needs
        gen = service.start_traffic()
        cluster.workers_must_be_running_and_ready(2, what="Serve's second replica under load to get a worker")
        stats = service.stop_traffic(gen)

        # step 2: the load gone, the replica goes and the idle worker after it
        cluster.workers_must_be_running_and_ready(1, what="the idle worker to be removed once the load is gone")

        # step 3: Ready throughout, on the same RayCluster
        service.must_have_stayed_ready(watch, through="scaling up under load and back down")
        no_raycluster_must_be_created(clusters, through="autoscaling (the worker replicas are the autoscaler's)")
    pods.must_not_have_failed()

    assert pods.peak == 2, (f"the autoscaler must add exactly one worker for Serve's second replica (maxReplicas 2); "
                            f"observed {pods.peak} worker Pods at most: {pods.summary()}")
    assert stats["failures"] == 0, f"no request may fail while the RayService scales; observed {summary(stats)}"
