"""Mutual TLS between a RayCluster's Ray processes (spec.tlsOptions.enabled: KubeRay 1.7, alpha, its RayClusterMTLS
gate on, cert-manager in the cluster): the operator has cert-manager issue a CA and head and worker certificates,
gives the Ray Pods Ray's TLS settings with those Secrets mounted, and the PKI goes with the cluster; a cluster
without tlsOptions.enabled gets none of it. cert-manager's controller runs in the test's namespace (the
`cert_manager` fixture)."""
from __future__ import annotations

import json

import pytest

from rayconformance.testing.expect import raycluster_tls as tls
from rayconformance.testing.expect.raycluster_pods import runs_ray_autoscaler
from rayconformance.testing.programs import program

SAMPLE = "raycluster-mtls"
QUIET = 30.0  # seconds a cluster without tlsOptions.enabled is watched for cert-manager objects


def head_service_dns(cluster) -> str:
    """The start of the head Service's DNS name, `<name>.<namespace>.svc.` (the cluster's domain follows)."""
    return f"{cluster.head_service_name()}.{cluster.namespace}.svc."


def tls_lines(logs: str) -> list[tuple[str, str, object]]:
    """The `TLS <node IP> <RAY_USE_TLS> <JSON>` lines of the tls_handshake program."""
    out = []
    for line in logs.splitlines():
        if line.startswith("TLS "):
            _, ip, use_tls, seen = line.split(" ", 3)
            out.append((ip, use_tls, json.loads(seen)))
    return out


@pytest.mark.feature("RayClusterMTLS")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.tlsOptions.enabled")
def test_tls_cluster_gets_its_pki_and_runs_over_tls(ctx, cert_manager):
    """With tlsOptions.enabled, the operator has cert-manager issue the cluster's PKI (a self-signed Issuer, a CA
    Certificate, a CA Issuer, head and worker Certificates, owned by the RayCluster and Ready, their Secrets holding
    tls.crt, tls.key and ca.crt); the head's certificate names the head Service and the head Pod's IP, the worker's
    the worker Pod's IP, both signed by the cluster's CA; the head and worker Pods mount their Secret at
    /etc/ray/tls with Ray's TLS settings in the Ray container; the cluster provisions, and a Ray job runs a task on
    the head and on the worker, each with Ray's TLS on, whose TLS handshake with the GCS (with its node's
    certificate, verified against the cluster's CA) is accepted."""
    cluster = ctx.create_raycluster(SAMPLE)
    cluster.must_be_provisioned(ctx.timeouts.long)
    uid = cluster.get()["metadata"]["uid"]
    pki = tls.pki_of(cluster.name, uid)
    secrets = tls.tls_pki_must_be_issued(ctx.k8s, ctx.namespace, cluster.name, uid, ctx.timeouts.medium)

    # step 1: the certificates name what the Ray processes are reached by
    head, workers = cluster.head_pod(), cluster.pods("worker")
    assert len(workers) == 1, f"expected 1 worker Pod of RayCluster {cluster.name}; observed {len(workers)}"
    tls.certificate_must_name(secrets, pki.head_secret, pki.ca_secret, tls.ips([head]),
                              dns_prefix=head_service_dns(cluster), whose="the head's")
    tls.certificate_must_name(secrets, pki.worker_secret, pki.ca_secret, tls.ips(workers), whose="the worker's")

    # step 2: the Pods carry the wiring
    tls.pod_must_carry_tls(head, pki.head_secret)
    tls.pod_must_carry_tls(workers[0], pki.worker_secret)

    # step 3: Ray runs across head and worker with TLS on, and its GCS speaks TLS to holders of the CA's certificates
    logs = cluster.ray_job_must_succeed(program("tls_handshake"))
    lines = tls_lines(logs)
    assert len(lines) == 2, f"expected a task on each of 2 Ray nodes (head and worker); observed {lines}:\n{logs}"
    for ip, use_tls, seen in lines:
        named = isinstance(seen, list) and any(s.startswith(f"DNS:{head_service_dns(cluster)}") for s in seen)
        assert use_tls == "1" and named, (
            f"on Ray node {ip}: expected RAY_USE_TLS=1 and the GCS to present the head's certificate (naming "
            f"{head_service_dns(cluster)}...) over a TLS handshake verified against the cluster's CA; observed "
            f"RAY_USE_TLS={use_tls}, {seen}")


@pytest.mark.feature("RayClusterMTLS", "RayClusterAutoscalerV1")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.tlsOptions.enabled")
def test_tls_reaches_every_group_the_autoscaler_and_the_gcs_wait(ctx, cert_manager):
    """With tlsOptions.enabled on a cluster of two worker groups autoscaled by Ray's in-tree autoscaler, the workers
    of both groups mount the worker Secret with Ray's TLS settings, and so does the head with its own; the head's
    autoscaler sidecar, which talks to the GCS, has Ray's TLS settings and the certificates mounted; and the init
    container the operator puts before a worker's Ray container to wait for the GCS (KubeRay's wait-gcs-ready, which
    runs `ray health-check`) has them too."""
    body = ctx.sample(SAMPLE)
    body["spec"]["enableInTreeAutoscaling"] = True
    body["spec"]["autoscalerOptions"] = {"version": "v1"}
    small = body["spec"]["workerGroupSpecs"][0]
    small["minReplicas"] = 1  # the autoscaler keeps one worker per group
    body["spec"]["workerGroupSpecs"].append({**small, "groupName": "second"})
    cluster = ctx.create_raycluster(body)
    pki = tls.pki_of(cluster.name, cluster.get()["metadata"]["uid"])

    # step 1: the Pods as the operator made them (a container without TLS could not reach the GCS to start)
    cluster.worker_pods_must_number(2, what="a worker Pod in each of the 2 groups", consecutive=1)
    head = cluster.head_pod()
    tls.pod_must_carry_tls(head, pki.head_secret)
    tls.containers_must_carry_tls(head, [c.name for c in head.spec.containers[1:] if runs_ray_autoscaler(c)],
                                  which="the autoscaler sidecar")
    for group in ("small", "second"):
        workers = cluster.group_pods(group)
        assert len(workers) == 1, f"expected 1 worker Pod in group {group} of RayCluster {cluster.name}; " \
                                  f"observed {[p.metadata.name for p in workers]}"
        tls.pod_must_carry_tls(workers[0], pki.worker_secret)
        waits = [c.name for c in workers[0].spec.init_containers or []
                 if "health-check" in " ".join([*(c.command or []), *(c.args or [])])]
        tls.containers_must_carry_tls(workers[0], waits, which=f"group {group}'s init containers waiting for the GCS")

    # step 2: with them the cluster comes up, its autoscaler running
    cluster.must_be_provisioned(ctx.timeouts.long)
    cluster.head_must_run_autoscaler_sidecar(what="the head Pod")


@pytest.mark.feature("RayClusterMTLS")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.tlsOptions.enabled")
def test_tls_pki_goes_with_the_cluster(ctx, cert_manager):
    """Deleting a provisioned RayCluster with tlsOptions.enabled deletes its Issuers, its Certificates and the CA,
    head and worker Secrets cert-manager issued for it: nothing of its PKI is left in the namespace."""
    cluster = ctx.create_raycluster(SAMPLE)
    cluster.must_be_provisioned(ctx.timeouts.long)
    uid = cluster.get()["metadata"]["uid"]
    pki = tls.pki_of(cluster.name, uid)
    tls.tls_pki_must_be_issued(ctx.k8s, ctx.namespace, cluster.name, uid, ctx.timeouts.medium)
    cluster.must_be_deleted_and_gone(after="deleting a RayCluster with tlsOptions.enabled")
    tls.tls_pki_must_be_gone(ctx.k8s, ctx.namespace, cluster.name, pki, ctx.timeouts.medium)


@pytest.mark.feature("RayClusterMTLS")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.tlsOptions.enabled")
def test_tls_disabled_leaves_no_tls_parts(ctx):
    """With tlsOptions.enabled false (the gate on), the operator makes no Issuer or Certificate for the cluster, and
    its head and worker Pods come up without Ray's TLS settings, the certificate volume or the init container that
    waits for a certificate."""
    body = ctx.sample(SAMPLE)
    body["spec"]["tlsOptions"]["enabled"] = False
    cluster = ctx.create_raycluster(body)
    tls.no_tls_pki_must_appear(ctx.k8s, ctx.namespace, cluster.name, QUIET)
    cluster.must_be_provisioned(ctx.timeouts.long)
    for pod in cluster.pods():
        tls.pod_must_carry_no_tls(pod)
