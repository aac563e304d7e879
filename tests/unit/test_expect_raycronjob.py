"""testing.expect.raycronjob: a RayCronJob's ticks, the shape of the RayJob a tick creates, and the jobTemplate it
must carry, with the failure messages naming what was expected and what was observed."""
from __future__ import annotations

import copy

import pytest

from rayconformance.testing.expect import raycronjob as x

TICK = 29_904_481 * 60
CRON = {"metadata": {"name": "hello-cron", "uid": "u1"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {
            "entrypoint": "echo hi", "metadata": {}, "rayClusterSpec": {"headGroupSpec": {
                "rayStartParams": {"num-cpus": "1"}, "template": {"spec": {"containers": [{"name": "ray-head"}]}}}}}}}


def rayjob(**changes) -> dict:
    job = {"metadata": {"name": f"hello-cron-{TICK // 60}", "labels": {x.CRON_LABEL: "hello-cron"},
                        "annotations": {x.TICK_ANNOTATION: x.iso(TICK)}, "creationTimestamp": x.iso(TICK + 1),
                        "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCronJob", "name": "hello-cron",
                                             "uid": "u1", "controller": True, "blockOwnerDeletion": True}]},
           "spec": copy.deepcopy(CRON["spec"]["jobTemplate"])}
    job["metadata"].update(changes)
    return job


def test_ticks_are_whole_minutes_strictly_after():
    assert x.next_tick(TICK) == TICK + 60 and x.next_tick(TICK - 0.5) == TICK
    assert x.tick_of(rayjob()) == TICK and x.tick_of({"metadata": {"name": "hello-cron-abcde"}}) is None
    assert x.epoch(x.iso(TICK)) == TICK


def test_the_rayjob_of_a_tick_is_named_labelled_owned_and_on_time():
    x.rayjob_must_be_the_cronjobs(CRON, rayjob())
    with pytest.raises(AssertionError, match=r"it is controlled by nothing, not by the RayCronJob \(UID u1\)$"):
        x.rayjob_must_be_the_cronjobs(CRON, rayjob(ownerReferences=[]))
    with pytest.raises(AssertionError, match=r"named 'hello-cron-x1', not hello-cron-<minutes"):
        x.rayjob_must_be_the_cronjobs(CRON, rayjob(name="hello-cron-x1"))
    late = rayjob(creationTimestamp=x.iso(TICK + x.TICK_MARGIN_S + 5))
    with pytest.raises(AssertionError, match=r"created at .*, not within 30s from its tick"):
        x.rayjob_must_be_the_cronjobs(CRON, late)


def test_the_rayjob_carries_the_template_with_what_the_operator_adds():
    job = rayjob()
    job["spec"]["submissionMode"] = "K8sJobMode"  # a default beside the template's values
    del job["spec"]["metadata"]  # an empty map left out, as the operator's Go types write it
    x.rayjob_must_carry_the_template(CRON, job, ["entrypoint", "rayClusterSpec.headGroupSpec.rayStartParams[num-cpus]"])
    job["spec"]["entrypoint"] = "echo other"
    with pytest.raises(AssertionError, match=r"differs at spec.entrypoint: 'echo other', not the template's 'echo hi'"):
        x.rayjob_must_carry_the_template(CRON, job)
    with pytest.raises(AssertionError, match=r"that its template does not set: \['jobId'\]"):
        x.rayjob_must_carry_the_template(CRON, rayjob(), ["jobId"])


def test_a_missing_object_or_list_of_the_template_is_named_with_its_value():
    job = rayjob()
    del job["spec"]["rayClusterSpec"]
    with pytest.raises(AssertionError, match=r"differs at spec.rayClusterSpec: None, not the template's "
                                             r"\{'headGroupSpec': \{'rayStartParams': \{'num-cpus': '1'\}, 'templ"):
        x.rayjob_must_carry_the_template(CRON, job)
    job = rayjob()
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"] = []
    with pytest.raises(AssertionError, match=r"containers: \[\], not the template's \[\{'name': 'ray-head'\}\]$"):
        x.rayjob_must_carry_the_template(CRON, job)
