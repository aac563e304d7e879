"""The head Service as the user shapes it (serviceType, headServiceAnnotations, a headService of their own, the head
container's ports) and as the operator makes it by default (headless, Ray's default ports), each with the status
fields read from it (status.head, status.endpoints) and Ray answering through it."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.head_service import (describe_service, head_service_must_exist,
                                                         no_ingress_must_exist, service_must_carry,
                                                         service_must_have_ports, status_must_describe_head)

METRICS_PORT = 8080  # the port the operator adds for Prometheus when the head container names none "metrics"
DEFAULT_PORTS = {"client": 10001, "gcs-server": 6379, "dashboard": 8265, "metrics": METRICS_PORT, "serve": 8000}


@pytest.mark.feature("RayClusterHeadService")
@pytest.mark.samples("raycluster-head-service")
@pytest.mark.covers("RayCluster:spec.headGroupSpec.serviceType", "RayCluster:spec.headServiceAnnotations",
                    "RayCluster:spec.headGroupSpec.headService",
                    "RayCluster:spec.headGroupSpec.template.spec.containers[].ports",
                    "RayCluster:spec.headGroupSpec.rayStartParams[dashboard-port]")
def test_head_service_takes_the_users_type_name_annotations_and_ports(ctx):
    """The head Service is the one the user describes: named as their headService, of the serviceType they ask
    (NodePort, every port given a node port), carrying their headService's own annotation and label and every
    headServiceAnnotations entry (which wins over the headService's on a shared key), with their extra port beside
    one port per named head container port (the dashboard where they moved it) and the metrics port. It selects
    the head Pod: Ray's dashboard answers through it and lists the head alive. status.head gives the Service's
    name and cluster IP and the head Pod's name and IP; status.endpoints gives each port's node port."""
    body = ctx.sample("raycluster-head-service")
    head = body["spec"]["headGroupSpec"]
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    svc = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state)
    custom = head["headService"]["metadata"]["name"]
    assert svc.metadata.name == custom, \
        (f"the head Service must take the name of spec.headGroupSpec.headService ({custom}); observed "
         f"{describe_service(svc)}")
    assert svc.spec.type == head["serviceType"], \
        (f"a headService without a type must take spec.headGroupSpec.serviceType {head['serviceType']}; observed "
         f"{describe_service(svc)}")
    service_must_carry(svc, annotations={"rayconformance.io/own": "custom", **body["spec"]["headServiceAnnotations"]},
                       labels={"rayconformance.io/own": "custom"},
                       why="headService's own annotations and labels kept, headServiceAnnotations added over them")
    container_ports = {p["name"]: p["containerPort"] for p in head["template"]["spec"]["containers"][0]["ports"]}
    service_must_have_ports(svc, {"extra": 9999, **container_ports, "metrics": METRICS_PORT},
                            why="the headService's own port, then one per named head container port, plus metrics")
    unexposed = [p.name for p in svc.spec.ports if not p.node_port]
    assert not unexposed, f"a NodePort head Service gives every port a node port; ports {unexposed} have none " \
                          f"({describe_service(svc)})"

    # the Service reaches the head: Ray's dashboard answers on the port the user moved it to
    cluster.ray_must_list_alive_nodes(1)
    status_must_describe_head(ctx.k8s, ctx.namespace, cluster.name, svc, cluster.head_pod(), ctx.timeouts.state)


@pytest.mark.feature("RayClusterHeadService")
@pytest.mark.samples("raycluster-head-only")
@pytest.mark.covers("RayCluster:spec.headGroupSpec.serviceType",
                    "RayCluster:spec.headGroupSpec.template.spec.containers[].ports",
                    "RayCluster:spec.headGroupSpec.enableIngress")
def test_default_head_service_is_headless_with_rays_ports(ctx):
    """Left to the operator (no serviceType, no headService, no ports on the head container), the head Service is
    named `<cluster>-head-svc`, headless (clusterIP None) and publishes the head's address before it is ready, with
    Ray's default ports (client 10001, gcs-server 6379, dashboard 8265, metrics 8080, serve 8000); Ray's dashboard
    answers through it. status.head's serviceIP is then the head Pod's own IP and status.endpoints each port's
    number. No Ingress is made unless enableIngress asks for one."""
    cluster = ctx.create_raycluster("raycluster-head-only")
    cluster.must_be_provisioned()

    svc = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state)
    assert svc.metadata.name == f"{cluster.name}-head-svc", \
        f"the default head Service is named {cluster.name}-head-svc; observed {describe_service(svc)}"
    assert svc.spec.type in (None, "ClusterIP") and svc.spec.cluster_ip == "None", \
        (f"without serviceType the head Service must be headless (ClusterIP, clusterIP None); observed "
         f"{describe_service(svc)}")
    assert svc.spec.publish_not_ready_addresses, \
        (f"the headless head Service must publish the head's address before it is ready; observed "
         f"{describe_service(svc)}")
    service_must_have_ports(svc, DEFAULT_PORTS, why="no ports on the head container: Ray's default ports")

    cluster.ray_must_list_alive_nodes(1)
    status_must_describe_head(ctx.k8s, ctx.namespace, cluster.name, svc, cluster.head_pod(), ctx.timeouts.state)
    no_ingress_must_exist(ctx.k8s, ctx.namespace, cluster.name)
