"""The ray.io/* annotations of a RayCluster the operator reads: its own command left to the Ray container
(ray.io/overwrite-container-cmd), a serve Service for the cluster (ray.io/enable-serve-service), and no new head once
the cluster was provisioned (ray.io/disable-provisioned-head-restart)."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster_sidecars import container_log_must_show
from rayconformance.fixtures.expect.workloads import describe_pods
from rayconformance.fixtures.waiting import must_keep, wait_until

OWN = "raycluster-own-command"
OVERWRITE = "ray.io/overwrite-container-cmd"
SERVE = "ray.io/enable-serve-service"
NO_RESTART = "ray.io/disable-provisioned-head-restart"
ANSWER = "hello from the serve Service"
# a Ray job deploying a Serve application answering ANSWER on / (its proxy on every address, as a Service needs)
DEPLOY = f"""
import ray
from ray import serve
ray.init()
serve.start(http_options={{'host': '0.0.0.0'}})
@serve.deployment(ray_actor_options={{'num_cpus': 0.1}})
def hello(request):
    return '{ANSWER}'
serve.run(hello.bind(), route_prefix='/')
print('DEPLOYED')
"""
NO_HEAD_WINDOW_S = 30  # how long a provisioned head-restart-disabled cluster is watched for a new head


def serving_services(ctx, cluster: str) -> list:
    """The Services owned by RayCluster `cluster` with a port named serve, other than its head Service."""
    head = (ray.status(ctx.raycluster(cluster).get()).get("head") or {}).get("serviceName")
    return [s for s in ctx.core.list_namespaced_service(ctx.namespace).items
            if s.metadata.name != head and any(p.name == "serve" for p in s.spec.ports or [])
            and any(o.kind == "RayCluster" and o.name == cluster for o in s.metadata.owner_references or [])]


@pytest.mark.feature("RayClusterOwnContainerCommand", "RayClusterServeService")
@pytest.mark.samples(OWN)
@pytest.mark.covers(f"RayCluster:metadata.annotations[{OVERWRITE}]", f"RayCluster:metadata.annotations[{SERVE}]")
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
    cluster.ray_job_must_succeed(DEPLOY)
    wait_until(lambda: ray.proxy_get(ctx.k8s, ctx.namespace, svc, "serve", "/"), lambda a: a == (200, ANSWER),
               f"the serve Service {svc} to answer {ANSWER!r} from the Serve application", ctx.timeouts.medium,
               render=lambda a: f"HTTP {a[0]}: {a[1][:300]!r}")


@pytest.mark.feature("RayClusterNoHeadRestartAfterProvisioning")
@pytest.mark.samples(OWN)
@pytest.mark.covers(f"RayCluster:metadata.annotations[{NO_RESTART}]")
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
