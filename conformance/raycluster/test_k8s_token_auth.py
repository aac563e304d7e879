"""Ray token authentication delegated to Kubernetes (authOptions.enableK8sTokenAuth, KubeRay v1.6+, Ray >= 2.55):
Ray lets in the Kubernetes identities that RBAC allows the verb ray:write on the RayCluster, its own nodes
included, and the operator makes no token Secret."""
from __future__ import annotations

import pytest
from kubernetes import client

SAMPLE = "raycluster-k8s-token-auth"
RAY_ACCOUNT = "k8s-auth-ray"  # runs the Ray Pods, holds ray:write, asks the API server for the reviews
USER = "k8s-auth-user"  # a user of the cluster, allowed ray:write on it
OUTSIDER = "k8s-auth-outsider"  # an identity of the namespace without ray:write
REVIEWER_ROLE = "system:auth-delegator"  # Kubernetes' own: create TokenReviews and SubjectAccessReviews
TOKEN_SECONDS = 600


def let_review_tokens(ctx, account: str) -> None:
    """Bind ServiceAccount `account` of the test's namespace to system:auth-delegator, owned by the namespace (so it
    goes with it): the Ray head asks the API server to review the tokens it gets."""
    ns = ctx.core.read_namespace(ctx.namespace)
    client.RbacAuthorizationV1Api(ctx.k8s).create_cluster_role_binding({
        "metadata": {"name": f"{ctx.namespace}-{account}-reviews", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Namespace", "name": ctx.namespace, "uid": ns.metadata.uid}]},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": REVIEWER_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ctx.namespace}]})


def token_of(ctx, account: str) -> str:
    """A fresh token of ServiceAccount `account` (TokenRequest, the API server's default audience)."""
    answer = ctx.core.create_namespaced_service_account_token(
        account, ctx.namespace, {"spec": {"expirationSeconds": TOKEN_SECONDS}})
    return answer.status.token


@pytest.mark.feature("RayClusterK8sTokenAuth")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.authOptions.enableK8sTokenAuth")
def test_kubernetes_identities_with_ray_write_get_in(ctx):
    """With authOptions mode token and enableK8sTokenAuth, and the user's RBAC in place (the Ray Pods' ServiceAccount
    allowed ray:write on the RayCluster and to have tokens reviewed), the cluster provisions with its worker joined
    on its ServiceAccount's token; Ray's dashboard refuses a request without a token, one with a token Kubernetes
    does not know and one with the token of a ServiceAccount not allowed ray:write, and accepts the token of a user's
    ServiceAccount allowed ray:write on the RayCluster, listing the head and the worker; the operator creates no
    token Secret for the cluster."""
    docs = ctx.samples(SAMPLE)
    let_review_tokens(ctx, RAY_ACCOUNT)
    ctx.create([d for d in docs if d["kind"] != "RayCluster"])
    cluster = ctx.create_raycluster(next(d for d in docs if d["kind"] == "RayCluster"))
    cluster.must_be_provisioned(ctx.timeouts.medium)

    # step 1: only a Kubernetes identity allowed ray:write on the RayCluster gets in
    cluster.dashboard_must_refuse(what="a request without a token")
    cluster.dashboard_must_refuse(token="not-a-kubernetes-token", what="a token Kubernetes does not know")
    cluster.dashboard_must_refuse(token=token_of(ctx, OUTSIDER),
                                  what=f"the token of ServiceAccount {OUTSIDER}, not allowed ray:write")
    cluster.ray_must_list_alive_nodes(2, token=token_of(ctx, USER),
                                      whose=f"ServiceAccount {USER}'s token (allowed ray:write)")

    # step 2: Kubernetes holds the credentials: the operator made no token Secret
    cluster.auth_secret_must_not_exist(why="authOptions.enableK8sTokenAuth (Ray takes Kubernetes tokens)")
