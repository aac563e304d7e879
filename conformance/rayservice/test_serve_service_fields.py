"""The Services a user shapes through a RayService's fields: spec.serveService (a serve Service of the user's
making), rayClusterConfig's headGroupSpec.serviceType (the type both of the RayService's Services default to) and
headServiceAnnotations (on its RayCluster's head Service)."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect import service_fields
from rayconformance.testing.expect.rayservice import active_and_pending_clusters
from rayconformance.testing.expect.rayservice_services import head_service_name
from rayconformance.testing.expect.service_fields import ServiceShape

from .helpers import deploy, greeter

TIER, OWNER, SCRAPE = "example.com/tier", "example.com/owner", "example.com/scrape"


def serving_selector(cluster: str) -> dict[str, str]:
    """The selector of a RayService's serve Service: the Pods of its active RayCluster that serve."""
    return {"ray.io/cluster": cluster, "ray.io/serve": "true"}


@pytest.mark.feature("RayServiceCustomServeService")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.covers("RayService:spec.serveService")
def test_custom_serve_service_keeps_its_name_type_and_metadata(ctx):
    """A RayService given its own serve Service (spec.serveService: a name, type NodePort, a label, an annotation,
    a selector of its own and another namespace) gets that Service in the RayService's namespace under the given
    name, with the given type, label and annotation, and no `<name>-serve-svc` beside it; its selector is replaced
    by the active RayCluster's serving Pods (a selector of the user's would route nowhere) and it keeps the head's
    serve port. The RayService becomes Ready counting its endpoints there, and it answers from the active cluster."""
    docs = greeter(ctx)
    body = next(d for d in docs if d["kind"] == "RayService")
    body["spec"]["serveService"] = {
        "metadata": {"name": "greeter-front", "namespace": "not-the-rayservices", "labels": {TIER: "front"},
                     "annotations": {OWNER: "team-a"}},
        "spec": {"type": "NodePort", "selector": {"app": "nothing-serves-here"}},
    }

    # step 1: Ready, which needs serve endpoints counted on the user's Service
    service, obj = deploy(ctx, docs)
    cluster, _ = active_and_pending_clusters(obj)

    # step 2: the Service is the user's, in the RayService's namespace, routing to the active cluster's serving Pods
    service_fields.service_must_have_shape(
        ctx.k8s, ctx.namespace, "greeter-front",
        ServiceShape(type="NodePort", labels={TIER: "front"}, annotations={OWNER: "team-a"},
                     selector=serving_selector(cluster), ports={"serve": (8000, None)}),
        ctx.timeouts.state, what="spec.serveService of RayService greeter")
    service_fields.service_must_not_exist(ctx.k8s, ctx.namespace, "greeter-serve-svc",
                                          why="spec.serveService names the serve Service greeter-front")

    # step 3: it answers from the active RayCluster
    service.serve_service_must_answer(body=f"v1 from {cluster}")


@pytest.mark.feature("RayServiceCustomServePorts")
@pytest.mark.samples("rayservice-greeter")
@pytest.mark.covers("RayService:spec.serveService", "RayService:spec.rayClusterConfig.headGroupSpec.serviceType",
                    "RayService:spec.rayClusterConfig.headServiceAnnotations")
def test_serve_port_and_service_type_come_from_the_rayservice(ctx):
    """A RayService whose spec.serveService gives only a serve port (port 80 to the container's port named serve)
    and whose rayClusterConfig asks for headGroupSpec.serviceType NodePort and headServiceAnnotations: its serve
    Service keeps the default name `<name>-serve-svc`, takes the NodePort type and the user's port 80, which answers
    from the active RayCluster; the RayService's head Service `<name>-head-svc` is a NodePort Service too, and the
    RayCluster's own head Service carries the annotations."""
    docs = greeter(ctx)
    body = next(d for d in docs if d["kind"] == "RayService")
    body["spec"]["serveService"] = {"spec": {"ports": [{"name": "serve", "port": 80, "targetPort": "serve"}]}}
    config = body["spec"]["rayClusterConfig"]
    config["headGroupSpec"]["serviceType"] = "NodePort"
    config["headServiceAnnotations"] = {SCRAPE: "true"}
    service, obj = deploy(ctx, docs)
    cluster, _ = active_and_pending_clusters(obj)

    # step 1: the serve Service: the default name, the head group's service type, the user's port
    service_fields.service_must_have_shape(
        ctx.k8s, ctx.namespace, "greeter-serve-svc",
        ServiceShape(type="NodePort", selector=serving_selector(cluster), ports={"serve": (80, "serve")}),
        ctx.timeouts.state, what="spec.serveService with only a port, rayClusterConfig serviceType NodePort")
    service_fields.service_must_answer_on_port(ctx.k8s, ctx.namespace, "greeter-serve-svc", 80,
                                               f"v1 from {cluster}", ctx.timeouts.pods)

    # step 2: the RayService's head Service takes the type too; the cluster's head Service gets the annotations
    service_fields.service_must_have_shape(
        ctx.k8s, ctx.namespace, head_service_name("greeter"), ServiceShape(type="NodePort"), ctx.timeouts.state,
        what="the RayService's head Service, rayClusterConfig serviceType NodePort")
    service_fields.service_must_have_shape(
        ctx.k8s, ctx.namespace, ctx.raycluster(cluster).head_service_name(),
        ServiceShape(type="NodePort", annotations={SCRAPE: "true"}), ctx.timeouts.state,
        what=f"the head Service of RayCluster {cluster}, rayClusterConfig headServiceAnnotations")
