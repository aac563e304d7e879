"""fixtures.expect: the predicates on ray.io objects, and the failure messages naming expected and observed state."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect import raycluster, rayjob, rayservice
from rayconformance.fixtures.expect.conditions import condition, condition_must_be, describe_conditions, has_condition

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
