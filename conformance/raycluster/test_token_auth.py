"""Ray token authentication (spec.authOptions mode token; KubeRay v1.5.1+, Ray >= 2.52): the operator creates the
cluster's token Secret and wires the token into Ray, Ray's dashboard refuses requests without it, and a RayJob
and a RayService still work with auth on."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import raycluster_must_be_provisioned
from rayconformance.fixtures.expect.raycluster_ray import auth_secret_must_hold_token, dashboard_must_refuse, ray_must_list_alive_nodes
from rayconformance.fixtures.expect.rayjob import rayjob_must_create_its_cluster, rayjob_must_succeed
from rayconformance.fixtures.expect.rayservice import active_and_pending_clusters, serve_service_must_answer

from ..rayservice.helpers import deploy
from .helpers import create_provisioned

WRONG_TOKEN = "not-the-cluster-token"


@pytest.mark.feature("RayClusterTokenAuth")
def test_token_auth_guards_the_dashboard(k8s, namespace, ray_version, timeouts):
    """With token authentication on, the operator creates a Secret holding the cluster's token; Ray's dashboard
    refuses a request without the token and one with a wrong token, and accepts one carrying the cluster's
    token, which shows the head and the worker joined."""
    body = ray.sample("raycluster-token-auth", ray_version)
    name = body["metadata"]["name"]
    _, obj = create_provisioned(k8s, namespace, body, timeouts.medium)

    token = auth_secret_must_hold_token(k8s, namespace, name, timeouts.short)
    dashboard_must_refuse(k8s, namespace, obj, timeouts.short, what="a request without the token")
    dashboard_must_refuse(k8s, namespace, obj, timeouts.short, token=WRONG_TOKEN, what="a request with a wrong token")
    ray_must_list_alive_nodes(k8s, namespace, obj, 2, timeouts.medium, token=token)


@pytest.mark.feature("RayClusterTokenAuth", "RayJobK8sJobMode")
def test_rayjob_succeeds_with_token_auth(k8s, namespace, ray_version, timeouts):
    """A RayJob whose cluster has token authentication on runs to completion (SUCCEEDED/Complete): its
    submitter gets through to Ray's Jobs API, while the cluster's dashboard refuses requests without the
    token."""
    body = ray.sample("rayjob-token-auth", ray_version)
    name = body["metadata"]["name"]
    ray.RayResources(k8s, namespace, "RayJob").create(body)

    cluster = rayjob_must_create_its_cluster(k8s, namespace, name, timeouts.medium)
    obj = raycluster_must_be_provisioned(k8s, namespace, cluster, timeouts.medium)
    dashboard_must_refuse(k8s, namespace, obj, timeouts.short, what="a request without the token")
    rayjob_must_succeed(k8s, namespace, name, timeouts.long, when="with token authentication on")


@pytest.mark.feature("RayClusterTokenAuth", "RayServiceReady")
def test_rayservice_serves_with_token_auth(k8s, namespace, ray_version, timeouts):
    """A RayService whose cluster has token authentication on becomes Ready and its serve Service answers with
    the application's reply (the operator deploys the Serve application through the authenticated dashboard),
    while the cluster's dashboard refuses requests without the token."""
    greeter = ray.load_sample("rayservice-greeter", ray_version)
    docs = [d for d in greeter if d["kind"] == "ConfigMap"] + ray.load_sample("rayservice-token-auth", ray_version)
    _, obj = deploy(k8s, namespace, ray_version, timeouts, docs)
    cluster, _ = active_and_pending_clusters(obj)

    rc = ray.RayResources(k8s, namespace, "RayCluster").get(cluster)
    assert rc is not None, f"the RayService's active RayCluster {cluster} does not exist"
    dashboard_must_refuse(k8s, namespace, rc, timeouts.short, what="a request without the token")
    serve_service_must_answer(k8s, namespace, obj, timeouts.medium, body=f"v1 from {cluster}")
