"""testing.expect: the predicates on ray.io objects, and the failure messages naming expected and observed state."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.expect import raycluster, raycluster_ray, rayjob, rayservice
from rayconformance.testing.expect.conditions import condition, condition_must_be, describe_conditions, has_condition

CLUSTER = {"kind": "RayCluster", "metadata": {"name": "rc"}, "status": {"conditions": [
    {"type": "RayClusterProvisioned", "status": "True", "reason": "AllPodRunningAndReadyFirstTime"},
    {"type": "HeadPodReady", "status": "False", "reason": "HeadPodNotFound"}]}}


def test_conditions():
    assert condition(CLUSTER, "HeadPodReady")["reason"] == "HeadPodNotFound"
    assert condition(None, "HeadPodReady") is None and condition({"status": None}, "HeadPodReady") is None
    assert has_condition(CLUSTER, "RayClusterProvisioned") and raycluster.is_provisioned(CLUSTER)
    assert has_condition(CLUSTER, "HeadPodReady", "False", "HeadPodNotFound")
    assert not has_condition(CLUSTER, "HeadPodReady", "False", "Other") and not has_condition(CLUSTER, "Missing")
    assert describe_conditions(CLUSTER) == ("RayClusterProvisioned=True(AllPodRunningAndReadyFirstTime), "
                                            "HeadPodReady=False(HeadPodNotFound)")
    assert describe_conditions({}) == "no conditions"


def test_condition_must_be_names_expected_and_observed():
    assert condition_must_be(CLUSTER, "HeadPodReady", "False")["reason"] == "HeadPodNotFound"
    with pytest.raises(AssertionError, match=r"^expected HeadPodReady=True/HeadPodRunningAndReady after resume, "
                                             r"observed RayClusterProvisioned=True\(AllPod"):
        condition_must_be(CLUSTER, "HeadPodReady", "True", "HeadPodRunningAndReady", when="after resume")


def job(**status) -> dict:
    return {"kind": "RayJob", "metadata": {"name": "j"}, "status": status}


def test_rayjob_predicates():
    assert rayjob.is_finished(job(jobDeploymentStatus="Complete"))
    assert rayjob.is_finished(job(jobDeploymentStatus="Failed"))
    assert not rayjob.is_finished(job(jobDeploymentStatus="Running")) and not rayjob.is_finished(None)
    assert rayjob.is_suspended(job(jobDeploymentStatus="Suspended")) and rayjob.is_running(job(jobStatus="RUNNING"))


def test_rayjob_must_finish_names_the_outcome_expected_and_observed(monkeypatch):
    observed = job(jobStatus="FAILED", jobDeploymentStatus="Failed")
    monkeypatch.setattr(ray.RayResources, "__init__", lambda self, api, ns, kind: None)
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: observed)
    assert rayjob.rayjob_must_finish(None, "ns", "j", 1, job_status="FAILED") is observed
    with pytest.raises(AssertionError, match=r"expected RayJob j to end with jobStatus=SUCCEEDED, "
                                             r"jobDeploymentStatus=Complete; observed jobStatus='FAILED'"):
        rayjob.rayjob_must_succeed(None, "ns", "j", 1)
    observed = job(jobDeploymentStatus="Running")
    with pytest.raises(AssertionError, match=r"waiting for RayJob j to finish \(jobDeploymentStatus Complete or "
                                             r"Failed\); last observed: jobStatus=None, jobDeploymentStatus='Running'"):
        rayjob.rayjob_must_finish(None, "ns", "j", 0.05)


def service(active=None, pending=None) -> dict:
    return {"status": {"activeServiceStatus": {"rayClusterName": active} if active else {},
                       "pendingServiceStatus": {"rayClusterName": pending} if pending else {}}}


def test_rayservice_clusters():
    assert rayservice.active_and_pending_clusters(service("a", "b")) == ("a", "b")
    assert rayservice.active_and_pending_clusters(None) == (None, None)
    assert rayservice.is_upgrading(service("a", "b")) and not rayservice.is_upgrading(service(pending="first"))
    assert rayservice.has_switched_from(service("b"), "a")
    assert not rayservice.has_switched_from(service("a"), "a")
    assert not rayservice.has_switched_from(service("b", "c"), "a")
    assert rayservice.describe_rayservice(service("a")) == \
        "no conditions; numServeEndpoints=None; active=a; pending=None"


# Ray token authentication: the token in the operator's Secret, the header carrying it, the dashboard's refusal.

def secret(data: dict | None, owners=(("RayCluster", "auth"),), name: str = "auth"):
    from kubernetes import client

    refs = [client.V1OwnerReference(api_version="ray.io/v1", kind=k, name=n, uid="u") for k, n in owners]
    return client.V1Secret(metadata=client.V1ObjectMeta(name=name, owner_references=refs or None), data=data)


def test_secret_token_decodes_auth_token():
    import base64

    assert ray.secret_token(secret({"auth_token": base64.b64encode(b"s3cret").decode()})) == "s3cret"
    assert ray.secret_token(secret({"other": "eA=="})) is None
    assert ray.secret_token(secret({"auth_token": ""})) is None and ray.secret_token(secret(None)) is None
    assert ray.secret_token(secret({"auth_token": "!!not base64"})) is None and ray.secret_token(None) is None
    assert ray.auth_headers("s3cret") == {"X-Ray-Authorization": "Bearer s3cret"}


HEADED = {"kind": "RayCluster", "metadata": {"name": "auth"}, "status": {"head": {"serviceName": "auth-head-svc"}}}


def answers(monkeypatch, *seq):
    """ray.proxy_get answers `seq` in turn (the last one from then on); returns the headers each call sent."""
    sent, left = [], list(seq)

    def fake(api, ns, svc, port, path, timeout=10, headers=None):
        sent.append((svc, port, path, headers))
        return left.pop(0) if len(left) > 1 else left[0]

    monkeypatch.setattr(ray, "proxy_get", fake)
    return sent


def test_dashboard_must_refuse_waits_for_an_answer_then_wants_a_refusal(monkeypatch):
    sent = answers(monkeypatch, (503, "no endpoints available"), (0, "ConnectionResetError"),
                   (401, "Unauthorized: Missing authentication token"))
    code, _ = raycluster_ray.dashboard_must_refuse(None, "ns", HEADED, 5, what="a request without the token")
    assert code == 401 and len(sent) == 3 and sent[0][:2] == ("auth-head-svc", "dashboard") and sent[0][3] is None
    sent = answers(monkeypatch, (403, "Forbidden: Invalid authentication token"))
    assert raycluster_ray.dashboard_must_refuse(None, "ns", HEADED, 5, token="wrong", what="x")[0] == 403
    assert sent[0][3] == {"X-Ray-Authorization": "Bearer wrong"}


def test_dashboard_must_refuse_names_an_accepted_request(monkeypatch):
    answers(monkeypatch, (200, '{"result": true}'))
    with pytest.raises(AssertionError, match=r"Ray's dashboard \(head Service auth-head-svc of auth\) must refuse a "
                                             r"request without the token \(HTTP 401 or 403\); observed HTTP 200: "
                                             r"'\{\"result\": true\}'"):
        raycluster_ray.dashboard_must_refuse(None, "ns", HEADED, 5, what="a request without the token")


def test_dashboard_must_refuse_times_out_naming_the_last_answer(monkeypatch):
    answers(monkeypatch, (503, "no endpoints available for service"))
    with pytest.raises(AssertionError, match=r"waiting for Ray's dashboard \(head Service auth-head-svc of auth\) to "
                                             r"answer x; last observed: HTTP 503: 'no endpoints"):
        raycluster_ray.dashboard_must_refuse(None, "ns", HEADED, 0.05, what="x")
    with pytest.raises(AssertionError, match="names no head Service"):
        raycluster_ray.dashboard_must_refuse(None, "ns", {"metadata": {"name": "auth"}}, 1, what="x")


def secrets_read(monkeypatch, *seq):
    """client.CoreV1Api(...).read_namespaced_secret returns `seq` in turn (None: 404)."""
    from kubernetes.client.rest import ApiException

    left = list(seq)

    class Core:
        def __init__(self, api):
            pass

        def read_namespaced_secret(self, name, ns):
            s = left.pop(0) if len(left) > 1 else left[0]
            if s is None:
                raise ApiException(status=404, reason="Not Found")
            return s

    monkeypatch.setattr(raycluster_ray.client, "CoreV1Api", Core)


def test_auth_secret_must_hold_token(monkeypatch):
    good = secret({"auth_token": "czNjcmV0"})  # s3cret
    secrets_read(monkeypatch, None, secret({}), good)
    assert raycluster_ray.auth_secret_must_hold_token(None, "ns", "auth", 5) == "s3cret"


def test_auth_secret_must_hold_token_names_what_it_found(monkeypatch):
    secrets_read(monkeypatch, None)
    with pytest.raises(AssertionError, match=r"waiting for the operator to create Secret auth holding the cluster's "
                                             r"auth token under 'auth_token', owned by RayCluster auth; last "
                                             r"observed: no such Secret"):
        raycluster_ray.auth_secret_must_hold_token(None, "ns", "auth", 0.05)
    secrets_read(monkeypatch, secret({"auth_token": "czNjcmV0"}, owners=()))
    with pytest.raises(AssertionError, match=r"observed: Secret auth with data keys \['auth_token'\] \(a non-empty "
                                             r"token under 'auth_token'\), owners none \(expected RayCluster/auth\)"):
        raycluster_ray.auth_secret_must_hold_token(None, "ns", "auth", 0.05)


def test_alive_ray_nodes_asks_with_the_token(monkeypatch):
    summary = '{"data": {"summary": [{"raylet": {"state": "ALIVE"}}, {"raylet": {"state": "DEAD"}}]}}'
    sent = answers(monkeypatch, (200, summary))
    assert ray.alive_ray_nodes(None, "ns", HEADED, "t") == (1, "1 alive of 2 Ray nodes")
    assert ray.alive_ray_nodes(None, "ns", HEADED) == (1, "1 alive of 2 Ray nodes")
    assert [s[3] for s in sent] == [{"X-Ray-Authorization": "Bearer t"}, None]
    answers(monkeypatch, (401, "Unauthorized: Missing authentication token"))
    with pytest.raises(AssertionError, match=r"asked with the cluster's auth token, to list 2 alive node\(s\); last "
                                             r"observed: dashboard HTTP 401: Unauthorized"):
        raycluster_ray.ray_must_list_alive_nodes(None, "ns", HEADED, 2, 0.05, token="t")
