"""The ray.io/* annotations of a RayCluster the operator reads: its own command left to the Ray container
(ray.io/overwrite-container-cmd), a serve Service for the cluster (ray.io/enable-serve-service), no new head once
the cluster was provisioned (ray.io/disable-provisioned-head-restart), and how long a stuck Redis cleanup holds a
deleted cluster (ray.io/gcs-ft-deletion-timeout)."""
from __future__ import annotations

import time

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect.quotas import resource_quota_must_be_in_force
from rayconformance.testing.expect.raycluster_sidecars import container_log_must_show
from rayconformance.testing.expect.workloads import describe_pods
from rayconformance.testing.programs import program
from rayconformance.testing.waiting import must_keep, wait_until

OWN = "raycluster-own-command"
OVERWRITE = "ray.io/overwrite-container-cmd"
SERVE = "ray.io/enable-serve-service"
NO_RESTART = "ray.io/disable-provisioned-head-restart"
ANSWER = "hello from the serve Service"
NO_HEAD_WINDOW_S = 30  # how long a provisioned head-restart-disabled cluster is watched for a new head
DELETION_TIMEOUT = "ray.io/gcs-ft-deletion-timeout"
FT_DELETION_TIMEOUT_S = 30
HELD_MARGIN_S = 8  # the hold is watched until this long before the timeout (the delete and the watch start apart)
GONE_SLACK_S = 60  # after the timeout, for the operator's next reconcile and the deletion itself
NO_PODS = "no-pods"


def serving_services(ctx, cluster: str) -> list:
    """The Services owned by RayCluster `cluster` with a port named serve, other than its head Service."""
    head = (ray.status(ctx.raycluster(cluster).get()).get("head") or {}).get("serviceName")
    return [s for s in ctx.core.list_namespaced_service(ctx.namespace).items
            if s.metadata.name != head and any(p.name == "serve" for p in s.spec.ports or [])
            and any(o.kind == "RayCluster" and o.name == cluster for o in s.metadata.owner_references or [])]


@pytest.mark.feature("RayClusterOwnContainerCommand", "RayClusterServeService")
@pytest.mark.samples(OWN)
@pytest.mark.covers("RayCluster:metadata.annotations[ray.io/overwrite-container-cmd]",
                    "RayCluster:metadata.annotations[ray.io/enable-serve-service]")
def test_annotations_own_command_and_serve_service(ctx):
    """With ray.io/overwrite-container-cmd "true", the head's Ray container runs exactly the command and args of the
    template (the operator adds no `ray start` of its own): it prints its own line and the head comes up through
    the `ray start` it runs itself. Such a cluster has no serve Service until it is annotated
    ray.io/enable-serve-service "true"; then a Service owned by it, with a serve port, answers through a Ray Serve
    application deployed on the cluster."""
    body = ctx.sample(OWN)
    own = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    head = cluster.head_pod()
    ray_container = head.spec.containers[0]
    assert (ray_container.command, ray_container.args) == (own["command"], own["args"]), \
        (f"with {OVERWRITE} true the Ray container of head Pod {head.metadata.name} must run the template's command "
         f"and args as given, {own['command']} {own['args']}; observed {ray_container.command} {ray_container.args}")
    container_log_must_show(ctx.k8s, ctx.namespace, head.metadata.name, ray_container.name, r"^rc-own-command$",
                            ctx.timeouts.short, what="the line its own command prints")

    before = serving_services(ctx, cluster.name)
    assert not before, \
        (f"without {SERVE} RayCluster {cluster.name} must have no serve Service; observed "
         f"{[s.metadata.name for s in before]}")
    cluster.patch({"metadata": {"annotations": {SERVE: "true"}}})
    services = wait_until(lambda: serving_services(ctx, cluster.name), lambda ss: len(ss) == 1,
                          f"a serve Service owned by RayCluster {cluster.name} once annotated {SERVE}",
                          ctx.timeouts.short, render=lambda ss: [s.metadata.name for s in ss])
    svc = services[0].metadata.name
    cluster.ray_job_must_succeed(program("serve_hello", answer=ANSWER))
    wait_until(lambda: ray.proxy_get(ctx.k8s, ctx.namespace, svc, "serve", "/"), lambda a: a == (200, ANSWER),
               f"the serve Service {svc} to answer {ANSWER!r} from the Serve application", ctx.timeouts.medium,
               render=lambda a: f"HTTP {a[0]}: {a[1][:300]!r}")


@pytest.mark.feature("RayClusterNoHeadRestartAfterProvisioning")
@pytest.mark.samples(OWN)
@pytest.mark.covers("RayCluster:metadata.annotations[ray.io/disable-provisioned-head-restart]")
def test_no_new_head_once_provisioned(ctx):
    """A RayCluster annotated ray.io/disable-provisioned-head-restart "true" gets its head once: after it was
    provisioned, deleting the head Pod brings no new one (watched for 30 s), and the RayCluster stays."""
    body = ctx.sample(OWN)
    body["metadata"]["annotations"] = {NO_RESTART: "true"}
    del body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["command"]
    del body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["args"]
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    head = cluster.head_pod()
    cluster.delete_pod(head)

    def heads():
        return [p for p in cluster.pods("head") if p.metadata.uid != head.metadata.uid]

    must_keep(heads, lambda hs: not hs, f"no new head Pod for RayCluster {cluster.name} ({NO_RESTART} true) after "
              f"its head {head.metadata.name} was deleted", NO_HEAD_WINDOW_S, render=describe_pods)
    assert cluster.get() is not None, f"RayCluster {cluster.name} must stay when its head Pod is gone"


@pytest.mark.feature("RayClusterGCSFTDeletionTimeout")
@pytest.mark.samples("raycluster-gcs-ft")
@pytest.mark.covers("RayCluster:metadata.annotations[ray.io/gcs-ft-deletion-timeout]")
def test_stuck_redis_cleanup_gives_up_after_the_deletion_timeout(ctx, redis):
    """A RayCluster with GCS fault tolerance annotated ray.io/gcs-ft-deletion-timeout "30", deleted while its Redis
    cleanup cannot run (a ResourceQuota admits no Pod, so the cleanup Job gets none), is kept by its cleanup
    finalizer for those 30 s and then goes without the cleanup having completed: well before the 5 minutes it would
    be kept without the annotation (KubeRay 1.7)."""
    body = ctx.sample("raycluster-gcs-ft")
    body["metadata"]["annotations"] = {DELETION_TIMEOUT: str(FT_DELETION_TIMEOUT_S)}
    group = body["spec"]["workerGroupSpecs"][0]
    group["replicas"] = group["minReplicas"] = 0  # the head alone: the cleanup is what is looked at
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    ctx.core.create_namespaced_resource_quota(ctx.namespace, {"metadata": {"name": NO_PODS},
                                                              "spec": {"hard": {"pods": "0"}}})
    try:
        resource_quota_must_be_in_force(ctx.k8s, ctx.namespace, NO_PODS, {"pods": "0"}, ctx.timeouts.short)
        cluster.delete()
        start = time.monotonic()
        must_keep(cluster.get, lambda o: o is not None,
                  f"RayCluster {cluster.name} to be kept by its Redis cleanup finalizer while the cleanup cannot run "
                  f"({DELETION_TIMEOUT}={FT_DELETION_TIMEOUT_S})", FT_DELETION_TIMEOUT_S - HELD_MARGIN_S,
                  render=lambda o: "gone")
        wait_until(cluster.get, lambda o: o is None,
                   f"RayCluster {cluster.name} to be gone once {DELETION_TIMEOUT}={FT_DELETION_TIMEOUT_S} s have "
                   f"passed (KubeRay's default without it: 300 s)", FT_DELETION_TIMEOUT_S + GONE_SLACK_S,
                   render=lambda o: f"still there, finalizers {o['metadata'].get('finalizers')}")
        elapsed = time.monotonic() - start
        done = [j.metadata.name for j in ctx.batch.list_namespaced_job(ctx.namespace).items
                if any(c.type == "Complete" and c.status == "True" for c in j.status.conditions or [])]
        assert not done, \
            (f"RayCluster {cluster.name} must have gone by its deletion timeout, not by a cleanup that completed; "
             f"completed Jobs: {done} (gone {elapsed:.0f}s after the delete)")
    finally:
        ctx.core.delete_namespaced_resource_quota(NO_PODS, ctx.namespace)
