"""testing/expect/kuberay_samples.py: the worker Pods a sample's groups ask for, and the check made once its
cluster is provisioned, with its expected-vs-observed message."""
from __future__ import annotations

import pytest
from kubernetes import client

from rayconformance.testing.expect import kuberay_samples as expect


def cluster(groups, desired):
    return {"metadata": {"name": "c"}, "spec": {"workerGroupSpecs": groups},
            "status": {"desiredWorkerReplicas": desired}}


def pod(name, ready=True):
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name), status=client.V1PodStatus(
        phase="Running", conditions=[client.V1PodCondition(type="Ready", status="True" if ready else "False")]))


def test_desired_workers_count_hosts_and_leave_out_suspended_groups():
    groups = [{"replicas": 2}, {"replicas": 1, "numOfHosts": 4}, {"replicas": 3, "suspend": True}, {}]
    assert expect.desired_workers(cluster(groups, 6)) == 6


@pytest.fixture
def pods(monkeypatch):
    found = {"head": [pod("h")], "worker": [pod("w1")]}
    monkeypatch.setattr(expect.ray, "cluster_pods", lambda api, ns, name, node_type=None: found[node_type])
    return found


def test_the_pods_a_provisioned_sample_runs_match_its_replicas(pods):
    expect.pods_must_match_replicas(None, "ns", cluster([{"replicas": 1}], 1), when="now")


def test_a_worker_not_ready_when_provisioned_is_named(pods):
    pods["worker"] = [pod("w1", ready=False)]
    with pytest.raises(AssertionError, match=r"expected 1 worker Pods .* all Running\+Ready, once provisioned; "
                                             r"observed 1: w1:Running"):
        expect.pods_must_match_replicas(None, "ns", cluster([{"replicas": 1}], 1), when="once provisioned")


def test_a_desired_count_that_differs_from_the_replicas_is_named(pods):
    with pytest.raises(AssertionError, match=r"status.desiredWorkerReplicas: expected 1 .*, observed 2"):
        expect.pods_must_match_replicas(None, "ns", cluster([{"replicas": 1}], 2), when="now")
