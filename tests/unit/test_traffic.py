"""The load generator's handle (testing.traffic) and what must hold of it (testing.expect.traffic), against a
fake Pod API: stopping it reads its final line after a graceful deletion, its statistics are recorded, and traffic
outlasts an old RayCluster's Pods by the window."""
from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.testing import ray, traffic
from rayconformance.testing.expect import traffic as expect

LINE = {"elapsed": 3.0, "clock_epoch": 1000.0, "rate": 20, "requests": 60, "ok": 60, "failures": 0,
        "failure_kinds": {}, "errors": {}, "warmup_failures": 0, "warmup_errors": {}, "answers": {"v1 from a": 60},
        "p50_ms": 2.0, "p95_ms": 3.0, "p99_ms": 4.0, "max_ms": 5.0, "failure_log": [], "slow_log": [],
        "dropped": 0, "clients_peak": 4, "done": False}


class FakePods:
    """The generator's Pod: its log, and what a graceful deletion makes a generator print (`on_term`)."""

    def __init__(self, lines: list[dict], on_term: dict | None):
        self.lines, self.on_term, self.deletes, self.gone = list(lines), on_term, [], False

    def read_namespaced_pod_log(self, name, namespace, tail_lines):
        if self.gone:
            raise ApiException(status=404)
        return "".join(json.dumps(line) + "\n" for line in self.lines[-tail_lines:])

    def delete_namespaced_pod(self, name, namespace, grace_period_seconds):
        self.deletes.append(grace_period_seconds)
        if grace_period_seconds == 0:
            self.gone = True
        elif self.on_term is not None:
            self.lines.append(self.on_term)


def generator(pods: FakePods) -> traffic.LoadGenerator:
    gen = object.__new__(traffic.LoadGenerator)
    gen.api, gen.ns, gen.name, gen.url, gen.core = None, "ns", "loadgen", "http://svc:8000/", pods
    return gen


FINAL = {**LINE, "elapsed": 4.2, "requests": 84, "ok": 84, "done": True, "stopped_by": "SIGTERM",
         "per_second": [[20, 0], [20, 0], [20, 0], [20, 0], [4, 0]]}


def test_stop_reads_the_final_line_after_a_graceful_deletion():
    pods = FakePods([LINE], on_term=FINAL)
    assert generator(pods).stop() == FINAL
    assert pods.deletes == [traffic.STOP_GRACE_S, 0], "SIGTERM through the grace period, then removed at once"


def test_stop_of_a_generator_that_already_finished_only_removes_it():
    pods = FakePods([LINE, {**FINAL, "stopped_by": "MAX_SECONDS"}], on_term=None)
    assert generator(pods).stop()["stopped_by"] == "MAX_SECONDS" and pods.deletes == [0]


def test_without_a_final_line_the_statistics_are_refused(monkeypatch):
    monkeypatch.setattr(traffic, "STOP_GRACE_S", 0.3)
    pods, measured = FakePods([LINE], on_term=None), {}
    with pytest.raises(AssertionError, match="printed no final statistics when stopped"):
        expect.load_generator_must_have_sent_requests(generator(pods), measured.__setitem__)
    assert measured["traffic.requests"] == 60 and "traffic.per_second" not in measured


def test_the_final_statistics_are_recorded_with_the_series():
    measured = {}
    stats = expect.load_generator_must_have_sent_requests(generator(FakePods([LINE], FINAL)), measured.__setitem__)
    assert stats == FINAL and measured["traffic.per_second"] == "20/0 20/0 20/0 20/0 4/0"
    assert {f"traffic.{k}" for k in expect.TRAFFIC_MEASUREMENTS} <= set(measured)
    assert measured["traffic.stopped_by"] == "SIGTERM" and measured["traffic.failures"] == 0


class Clock:
    """A generator whose clock moves 20 s between two reads."""

    def __init__(self):
        self.at = 0.0

    def stats(self):
        self.at += 20
        return {**LINE, "elapsed": self.at}

    def elapsed(self):
        return self.stats()["elapsed"]


def test_traffic_outlasts_the_old_pods_by_the_window(monkeypatch):
    left = [["old-head"], []]
    monkeypatch.setattr(ray, "cluster_pods", lambda api, ns, cluster: left.pop(0) if len(left) > 1 else left[0])
    gen, measured = Clock(), {}
    gone_at = expect.traffic_must_outlast_old_pods(None, "ns", "old", gen, 5, measured.__setitem__)
    assert measured == {"upgrade.old_pods_deleted_at_s": gone_at} and gone_at == 20
    assert gen.at >= gone_at + expect.TRAFFIC_AFTER_OLD_PODS_S, "the traffic ran the window past the old Pods"


def test_clock_at_places_a_status_time_on_the_generators_clock():
    gen = generator(FakePods([{**LINE, "clock_epoch": 1_700_000_000.0}], None))
    assert gen.clock_at(["2023-11-14T22:13:30Z", "2023-11-14T22:14:00Z"]) == [10.0, 40.0]
    assert generator(FakePods([], None)).clock_at(["2023-11-14T22:13:30Z"]) == [None]
