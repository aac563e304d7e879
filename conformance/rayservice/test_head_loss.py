"""A RayService losing its head Pod with no upgrade going on (with GCS fault tolerance it keeps serving; without, its
applications are deployed again), its GCS crashing inside the head (with GCS fault tolerance: no failed request),
and which Pods its serve Service routes to (only those with a working Serve proxy)."""
from __future__ import annotations

import uuid

import pytest

from rayconformance.testing.context import Context
from rayconformance.testing.events import events
from rayconformance.testing.expect.raycluster_pods import head_restarts
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_history import no_raycluster_must_be_created
from rayconformance.testing.expect.traffic import load_generator_must_get_more_answers
from rayconformance.testing.traffic import answered, summary

from .helpers import ON_THE_HEAD, ON_THE_WORKER, deploy, greeter, place_replica, signal_processes

APP = "greeter"
TRAFFIC_AFTER = 40  # answers the load generator must get after the head is back, before it is stopped


# Serial: on a 2-core machine, with other tests running beside it (run headloss-pass1, -n 2), the worker's Serve proxy
# missed its health checks after the new head started and the worker left the serve Service for ~130 s (138 of
# 1121 requests refused); run alone (s8-gcsft-alone) no request failed.
# What the operator controls is asserted: the RayService, its RayCluster and Pods, and the serve Service selecting the
# worker (and no other Pod) throughout. What Ray's Serve controller does once it restarts on the new head is measured
# (traffic.*, head_loss.failed_requests, head_loss.serve_endpoints_not_ready_s), not asserted. Run alone on the bed:
# (rootcause-headloss1) it recovered the replica in 8 s, then the worker's proxy held one request 2.9 s (a fresh
# `make conformance`: 5 s, the load generator's timeout, 1 failed request) with the worker Ready in the Service;
# (rootcause-headloss2) it could not recover the live replica in 30 s, killed it and started another, draining the
# worker's proxy for 1.3 s meanwhile: the worker's readiness probe failed once, the worker left the Service for 5 s
# (9 connections refused) and the operator reported, truly, Ready=False/ZeroServeEndpoints.
@pytest.mark.serial  # losing a head Pod must not compete with other tests for the CPU
@pytest.mark.feature("RayServiceHeadLossWithGCSFT", "RayClusterGCSFaultTolerance")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-ft", "loadgen")
def test_gcs_ft_head_loss_keeps_the_service_on_its_cluster(ctx, redis):
    """With GCS fault tolerance (external Redis) and the head kept out of the serve Service, losing the active
    RayCluster's head Pod while no upgrade is going on takes nothing away from the clients that the operator
    controls: the RayService stays Ready on the same RayCluster (no pending or new one; Ready=False only with reason
    ZeroServeEndpoints, while Ray's Serve proxy drains), its serve Service keeps selecting the worker (and only it)
    throughout, the worker keeps answering and is neither replaced nor restarted, a new head Pod comes up, Ray lists
    the new head and the same worker as alive, and the Serve application is RUNNING again. The worker answers while
    the head is gone. Requests the worker's Serve proxy holds or fails meanwhile are measured, not bounded: once
    the Serve controller restarts on the new head, Ray Serve may drain the worker's proxy while it recovers the
    replica (root-caused on the bed, the comment above), which the operator truly reports as
    Ready=False/ZeroServeEndpoints; what the operator controls (Service, selection, Pods, conditions) is asserted."""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-ft"))
    cluster = ctx.raycluster(active_and_pending_clusters(obj)[0])
    heads = cluster.pods("head")
    assert len(heads) == 1, f"expected one head Pod in the active RayCluster {cluster.name}, observed {len(heads)}"
    workers = cluster.worker_pods_now()
    gen = service.start_traffic()

    with service.watch() as watch, ctx.watch("RayCluster") as clusters, service.watch_serve_endpoints() as endpoints:
        # step 1: the active head Pod is lost (no upgrade going on)
        before = gen.stats()
        lost_at = (before or {}).get("elapsed")
        assert lost_at is not None, "could not read the load generator's clock before deleting the head"
        ctx.measure("head_loss.head_deleted_at_s", lost_at)
        cluster.delete_pod(heads[0])

        # step 2: a new head Pod comes up in the same RayCluster
        cluster.new_head_must_be_ready(heads[0].metadata.uid)
        while_lost = gen.stats()
        ctx.measure("head_loss.new_head_ready_at_s", (while_lost or {}).get("elapsed"))

        # step 3: the RayService serves again from the same RayCluster, its application RUNNING
        service.must_serve_again_from(watch, cluster.name, APP, after="the loss of its head Pod")
        ctx.measure("head_loss.serving_again_at_s", gen.elapsed())

        # step 4: Ray lists the new head and the worker as alive: the worker joined the new head
        cluster.ray_must_list_alive_nodes(1 + len(workers))
        ctx.measure("head_loss.nodes_alive_at_s", gen.elapsed())

        # step 5: the worker Pod that served meanwhile is the same Pod, not restarted
        cluster.workers_must_be_kept(workers, through="the loss of the head")

        # step 6: the RayService never reported itself not Ready but for its serve endpoints (Ray's proxy) going
        service.must_have_stayed_ready(watch, through="the loss of its head Pod", unless=("ZeroServeEndpoints",))

        # step 7: no RayCluster was created
        no_raycluster_must_be_created(clusters, through="the loss of the head Pod (no upgrade going on)")

        # step 8: the serve Service kept selecting the worker, and routed to no other Pod (the head is excluded),
        # from before the loss until now; how long the worker's readiness (Ray's Serve proxy) left it empty is measured
        ctx.measure("head_loss.serve_endpoints_not_ready_s", service.serve_endpoints_must_have_stayed(
            endpoints, [name for name, _ in workers.values()],
            through="the loss of the head Pod (excludeHeadPodFromServeSvc)"))

    # step 9: requests were answered while the head was gone
    stats = service.stop_traffic(gen)
    meanwhile = answered(while_lost) - answered(before)
    ctx.measure("head_loss.answered_while_head_lost", meanwhile)
    assert meanwhile > 0, \
        (f"expected answers through the serve Service while the head was gone (from {lost_at}s until the new head "
         f"was Ready at {(while_lost or {}).get('elapsed')}s), observed none: {summary(stats)}")

    # measured, not asserted: requests the worker's Serve proxy held or failed while Ray's Serve controller came
    # back on the new head (the serve Service selected the worker throughout: step 8)
    ctx.measure("head_loss.worker_readiness_failures", readiness_failures(ctx, [n for n, _ in workers.values()]))
    ctx.measure("head_loss.failed_requests", stats["failures"])


# Serial, as the head loss above: the GCS coming back from Redis on a 2-core bed must not compete with other tests.
@pytest.mark.serial
@pytest.mark.feature("RayServiceHeadLossWithGCSFT", "RayClusterGCSFaultTolerance")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-ft", "loadgen")
def test_gcs_crash_in_the_head_keeps_serving_without_failures(ctx, redis):
    """With GCS fault tolerance (external Redis) and the head kept out of the serve Service, the GCS process dying
    inside the active RayCluster's head (no upgrade going on) restarts the head's Ray container once, in the same
    head Pod (not replaced), and costs the clients nothing: the RayService stays on the same RayCluster (no pending
    or new one), the worker is neither replaced nor restarted, Ray lists the head and the worker as alive again, the
    Serve application is RUNNING, and not one request sent through the serve Service under steady load fails,
    from before the crash until after the head is back. (KubeRay's e2e TestRayServiceGCSFaultTolerance.)"""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-ft"))
    cluster = ctx.raycluster(active_and_pending_clusters(obj)[0])
    head = cluster.head_pod()
    restarts = head_restarts(head)
    workers = cluster.worker_pods_now()
    gen = service.start_traffic()

    with service.watch() as watch, ctx.watch("RayCluster") as clusters:
        # step 1: the GCS process dies inside the head's Ray container
        ctx.measure("gcs_crash.killed_at_s", gen.elapsed())
        code, answer = cluster.submit_ray_job(signal_processes("gcs_server", "SIGKILL"),
                                              f"rc-kill-gcs-{uuid.uuid4().hex[:6]}")
        assert code == 200, f"the Jobs API refused the job that kills the GCS: HTTP {code} {answer[:300]}"

        # step 2: the head's Ray container restarts once, in the same head Pod
        again = cluster.head_must_restart_in_place(head.metadata.uid, restarts, ctx.timeouts.long)
        ctx.measure("gcs_crash.head_ready_again_at_s", gen.elapsed())
        assert head_restarts(again) == restarts + 1, \
            (f"expected the head's Ray container to restart once after its GCS died (restartCount {restarts} -> "
             f"{restarts + 1}), observed restartCount {head_restarts(again)}")

        # step 3: the RayService serves from the same RayCluster, its application RUNNING
        service.must_serve_again_from(watch, cluster.name, APP, after="the GCS crash in its head")

        # step 4: Ray lists the head and the worker as alive: the worker is back with the restarted GCS
        cluster.ray_must_list_alive_nodes(1 + len(workers))
        ctx.measure("gcs_crash.nodes_alive_at_s", gen.elapsed())

        # step 5: the worker Pod that served meanwhile is the same Pod, not restarted
        cluster.workers_must_be_kept(workers, through="the GCS crash in the head")

        # step 6: no RayCluster was created
        no_raycluster_must_be_created(clusters, through="the GCS crash in the head (no upgrade going on)")

    # step 7: not one request failed, from before the crash until after the head was back (and 40 answers more)
    load_generator_must_get_more_answers(gen, gen.stats(), TRAFFIC_AFTER, ctx.timeouts.medium,
                                         after="the head came back")
    stats = service.stop_traffic(gen)
    assert stats["failures"] == 0, \
        f"with GCS fault tolerance, a GCS crash in the head must not fail requests: {summary(stats)}"


def readiness_failures(ctx: Context, pods: list[str]) -> list[str]:
    """The distinct messages of the Unhealthy events of the Pods named `pods` (why a probe failed), oldest first."""
    names = set(pods)
    return list(dict.fromkeys(f"{e.name}: {e.message}" for e in events(ctx.k8s, ctx.namespace, reason="Unhealthy")
                              if e.name in names))


@pytest.mark.feature("RayServiceHeadLossRedeploy")
@pytest.mark.samples("rayservice-greeter")
def test_head_loss_without_ft_redeploys_the_applications(ctx):
    """Without GCS fault tolerance, a RayService whose active head Pod is lost while no upgrade is going on gets its
    Serve application back: a new head Pod comes up in the same RayCluster, the operator finds that head without
    the application and submits it again, the RayService reports Ready with the application RUNNING on that same
    RayCluster (no pending or new one), and the serve Service answers from the new head."""
    service, obj = deploy(ctx)
    cluster = ctx.raycluster(active_and_pending_clusters(obj)[0])
    heads = cluster.pods("head")
    assert len(heads) == 1, f"expected one head Pod in the active RayCluster {cluster.name}, observed {len(heads)}"

    with service.watch() as watch, ctx.watch("RayCluster") as clusters, service.watch_serve_endpoints() as endpoints:
        # step 1: the active head Pod, which runs the only Serve replica, is lost
        cluster.delete_pod(heads[0])

        # step 2: a new head Pod comes up in the same RayCluster
        new_head = cluster.new_head_must_be_ready(heads[0].metadata.uid)
        ctx.measure("head_loss.new_head_ready_at_s", watch.now())

        # step 3: the serve Service answers again: the application was submitted again to the new head
        service.serve_service_must_answer(ctx.timeouts.long, body=f"v1 from {cluster.name}")
        ctx.measure("head_loss.answering_again_at_s", watch.now())

        # step 4: the RayService reports Ready with the application RUNNING, still on the same RayCluster
        service.must_serve_again_from(watch, cluster.name, APP, after="the loss of its head Pod")
        alive = [p.metadata.name for p in cluster.pods("head") if p.metadata.deletion_timestamp is None]
        assert alive == [new_head.metadata.name], \
            f"expected the new head {new_head.metadata.name} to be the only head of {cluster.name}, observed {alive}"

        # step 5: no RayCluster was created
        no_raycluster_must_be_created(clusters, through="the loss of the head Pod (no upgrade going on)")


@pytest.mark.feature("RayServiceServeEndpoints")
@pytest.mark.samples("rayservice-greeter", "rayservice-greeter-endpoints")
def test_serve_service_routes_only_to_healthy_proxies(ctx):
    """A RayService's serve Service routes only to the Ray Pods whose Serve proxy works: the head once the operator
    has labeled it `ray.io/serve: "true"` (its proxy answers), and a worker while its readiness probe, which asks
    the worker's Serve proxy, passes. When the worker's proxy goes away (Serve stops it once no replica runs there)
    the worker drops out of the Service, which keeps answering from the head; when a replica runs there again, the
    worker is back."""
    service, obj = deploy(ctx, greeter(ctx, "rayservice-greeter-endpoints"))
    cluster, _ = active_and_pending_clusters(obj)
    workers = ctx.raycluster(cluster).pods("worker")
    assert len(workers) == 1, f"expected one worker Pod in {cluster}, observed {len(workers)}"
    worker = workers[0].metadata.name

    # step 1: the head's proxy answers, and the operator labels the head as serving
    head = service.head_must_be_labeled_serving(cluster, "true", why="its Serve proxy answers").metadata.name

    # step 2: the serve Service routes to the head and to the worker (which runs the replica)
    service.serve_endpoints_must_be(cluster, [head, worker], why="both run a working Serve proxy")

    # step 3: the replica moves to the head; the worker's proxy goes away and the worker drops out
    obj = place_replica(service, obj, ON_THE_HEAD)
    service.serve_endpoints_must_be(cluster, [head], why="the worker runs no replica, so Serve stops its proxy")

    # step 4: the serve Service still answers, from the head
    service.serve_service_must_answer(ctx.timeouts.short, body=f"v1 from {cluster}")

    # step 5: the replica moves back; the worker's proxy is back and so is the worker
    obj = place_replica(service, obj, ON_THE_WORKER)
    service.serve_endpoints_must_be(cluster, [head, worker], why="the worker runs the replica again, with a Serve proxy")
