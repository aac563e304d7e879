"""Fixtures only the RayCluster tests need: cert-manager's controller, which issues the certificates of a RayCluster
with tlsOptions (KubeRay's RayClusterMTLS)."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.workloads import deployment_must_be_ready

CERT_MANAGER_API = "cert-manager.io"


@pytest.fixture
def cert_manager(ctx):
    """cert-manager's controller (samples/cert-manager.yaml) in the test's namespace, watching only it, ready: it goes
    with the namespace. A cluster without cert-manager's API fails the test naming what is missing: the operator
    profile must install cert-manager's CRDs before the operator starts."""
    from kubernetes import client

    groups = {g.name for g in client.ApisApi(ctx.k8s).get_api_versions().groups}
    if CERT_MANAGER_API not in groups:
        pytest.fail(f"the cluster serves no {CERT_MANAGER_API} API: the operator profile claiming RayClusterMTLS must "
                    f"install cert-manager's CRDs (before the operator starts)", pytrace=False)
    docs = ctx.samples("cert-manager")
    for d in docs:
        for s in d.get("subjects") or []:
            s["namespace"] = ctx.namespace
    ctx.create(docs)
    deployment_must_be_ready(ctx.k8s, ctx.namespace, "cert-manager", ctx.timeouts.medium,
                             what="cert-manager's controller (samples/cert-manager.yaml)")
