"""An Ingress for the head's dashboard: enableIngress makes one, owned by the RayCluster, routed to the dashboard
port of the head Service, with the cluster's annotations and ingress class; ingressOptions (KubeRay 1.7+) shape its
rule and TLS, follow changes on a running cluster, and default to every host, `/` and Prefix."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.head_service import (describe_ingress, head_ingress_must_route,
                                                         head_service_must_exist)

INGRESS_CLASS = "rayconformance"  # no controller serves it: the Ingress object is what is checked
DASHBOARD_PORT = 8266  # the head container's port named dashboard, moved off Ray's default


def with_ingress(body: dict) -> dict:
    """The head-only sample with enableIngress, an ingress class and one more annotation on the RayCluster, and
    the dashboard moved to DASHBOARD_PORT (container port and rayStartParams)."""
    body["metadata"]["annotations"] = {"kubernetes.io/ingress.class": INGRESS_CLASS,
                                       "rayconformance.io/ingress-note": "copied"}
    head = body["spec"]["headGroupSpec"]
    head["enableIngress"] = True
    head["rayStartParams"]["dashboard-port"] = str(DASHBOARD_PORT)
    head["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": DASHBOARD_PORT},
        {"name": "client", "containerPort": 10001}]
    return body


@pytest.mark.feature("RayClusterHeadIngress")
@pytest.mark.samples("raycluster-head-only")
@pytest.mark.covers("RayCluster:spec.headGroupSpec.enableIngress")
def test_enable_ingress_routes_to_the_head_dashboard(ctx):
    """With enableIngress, the RayCluster gets one Ingress it owns as its controller (so it goes with the cluster),
    whose one rule sends its path to the head Service on the head container's dashboard port, whose ingress class
    is the cluster's kubernetes.io/ingress.class annotation, and which carries the cluster's other annotations."""
    body = with_ingress(ctx.sample("raycluster-head-only"))
    cluster = ctx.create_raycluster(body)
    service = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.pods).metadata.name

    ing = head_ingress_must_route(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state,
                                  service=service, port=DASHBOARD_PORT,
                                  what="enableIngress on the head group")
    assert ing.spec.ingress_class_name == INGRESS_CLASS, \
        (f"the Ingress must take its class from the RayCluster's kubernetes.io/ingress.class annotation "
         f"({INGRESS_CLASS}); observed {describe_ingress(ing)}")
    note = (ing.metadata.annotations or {}).get("rayconformance.io/ingress-note")
    assert note == "copied", \
        f"the RayCluster's annotations must be copied to its Ingress; observed {describe_ingress(ing)}"


@pytest.mark.feature("RayClusterIngressOptions")
@pytest.mark.samples("raycluster-head-only")
@pytest.mark.covers("RayCluster:spec.headGroupSpec.ingressOptions", "RayCluster:spec.headGroupSpec.enableIngress")
def test_ingress_options_shape_the_rule_and_follow_changes(ctx):
    """ingressOptions set the Ingress rule's host, path and pathType and its TLS entries (hosts and Secret); changed
    on the running cluster they change the same Ingress in place (same UID); removed, the rule falls back to the
    defaults: any host, path `/` with pathType Prefix, no TLS."""
    body = with_ingress(ctx.sample("raycluster-head-only"))
    options = {"host": "ray.conformance.test", "path": "/dashboard", "pathType": "ImplementationSpecific",
               "tls": [{"hosts": ["ray.conformance.test"], "secretName": "ray-dashboard-tls"}]}
    body["spec"]["headGroupSpec"]["ingressOptions"] = options
    cluster = ctx.create_raycluster(body)
    service = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.pods).metadata.name

    # step 1: the rule and TLS as the options say
    first = head_ingress_must_route(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state, service=service,
                                    port=DASHBOARD_PORT, host=options["host"], path=options["path"],
                                    path_type=options["pathType"],
                                    tls=[(["ray.conformance.test"], "ray-dashboard-tls")],
                                    what="ingressOptions at creation")

    # step 2: changed options change the Ingress in place
    changed = {"host": "dashboard.conformance.test", "path": "/ray", "pathType": "Exact",
               "tls": [{"hosts": ["dashboard.conformance.test"], "secretName": "other-tls"}]}
    cluster.patch({"spec": {"headGroupSpec": {"ingressOptions": changed}}})
    second = head_ingress_must_route(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state, service=service,
                                     port=DASHBOARD_PORT, host=changed["host"], path="/ray", path_type="Exact",
                                     tls=[(["dashboard.conformance.test"], "other-tls")],
                                     what="ingressOptions changed on the running cluster")
    assert second.metadata.uid == first.metadata.uid, \
        (f"changed ingressOptions must update the cluster's Ingress in place (uid {first.metadata.uid}); observed "
         f"{describe_ingress(second)}")

    # step 3: without options, the defaults
    cluster.patch({"spec": {"headGroupSpec": {"ingressOptions": None}}})
    head_ingress_must_route(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state, service=service,
                            port=DASHBOARD_PORT, host="", path="/", path_type="Prefix", tls=[],
                            what="ingressOptions removed (defaults: any host, / with Prefix, no TLS)")
