"""Ray token authentication with the user's own token (authOptions.secretName, KubeRay 1.6+, Ray >= 2.52): the
operator makes no token Secret of its own and Ray takes the token from the user's Secret."""
from __future__ import annotations

import base64
import uuid

import pytest
from kubernetes.client.rest import ApiException

SAMPLE = "raycluster-token-auth"
SECRET = "users-ray-token"
WRONG_TOKEN = "not-the-users-token"


@pytest.mark.feature("RayClusterTokenAuthSecretName")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.authOptions.secretName")
def test_token_comes_from_the_users_secret(ctx):
    """With authOptions mode token and secretName naming a Secret of the user's (its token under auth_token), the
    operator creates no token Secret for the RayCluster, and Ray's dashboard refuses a request without a token and
    one with another token, and accepts the user's token, listing the head and the worker."""
    token = f"rc-{uuid.uuid4().hex}"
    ctx.core.create_namespaced_secret(ctx.namespace, {
        "metadata": {"name": SECRET}, "data": {"auth_token": base64.b64encode(token.encode()).decode()}})
    body = ctx.sample(SAMPLE)
    body["spec"]["authOptions"]["secretName"] = SECRET
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned(ctx.timeouts.medium)

    cluster.dashboard_must_refuse(what="a request without the token")
    cluster.dashboard_must_refuse(token=WRONG_TOKEN, what="a request with another token than the user's")
    cluster.ray_must_list_alive_nodes(2, token=token)
    try:
        own = ctx.core.read_namespaced_secret(cluster.name, ctx.namespace)
    except ApiException as e:
        if e.status != 404:
            raise
        own = None
    assert own is None, \
        (f"with authOptions.secretName {SECRET} the operator must not create a token Secret of its own; observed "
         f"Secret {cluster.name} (owners {[o.name for o in own.metadata.owner_references or []]})")
