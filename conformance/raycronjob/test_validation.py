"""What the operator refuses in a RayCronJob: a schedule it cannot parse, an unknown time zone, a time zone written
into the schedule, a name too long for its RayJobs' names, a jobTemplate that is a RayJob it would refuse (each a
Warning event, and no RayJob); and what the API server refuses: an empty timeZone."""
from __future__ import annotations

import copy

import pytest
from kubernetes.client.rest import ApiException

from rayconformance.testing.expect.raycronjob import no_rayjob_must_be_scheduled

from .helpers import SAMPLE, schedule_only

# RayCronJob name -> (its spec's changes, what the operator's Warning event says); each would otherwise schedule
# every minute. KubeRay keeps a RayCronJob's name to 36 characters, so that <name>-<minutes> names a valid RayJob.
REFUSED = {
    "bad-schedule": ({"schedule": "61 * * * *"}, "invalid cron schedule"),
    "unknown-zone": ({"timeZone": "Mars/Olympus_Mons"}, "invalid time zone"),
    "zone-in-schedule": ({"schedule": "CRON_TZ=UTC * * * * *"}, "use timeZone field instead"),
    "n" * 37: ({}, "no more than 36 characters"),
}


LABELS = "RayClusterGroupLabelsAndResources"  # KubeRay 1.5+ refuses labels and a Redis user in rayStartParams


def k8s_token_auth(spec: dict) -> None:
    spec["authOptions"] = {"mode": "token", "enableK8sTokenAuth": True}


def head_labels_in_start_params(spec: dict) -> None:
    spec["headGroupSpec"]["rayStartParams"]["labels"] = "conformance-tier=head"


def worker_labels_in_start_params(spec: dict) -> None:
    template = copy.deepcopy(spec["headGroupSpec"]["template"])
    template["spec"]["containers"][0]["name"] = "ray-worker"
    spec["workerGroupSpecs"] = [{"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                                 "rayStartParams": {"labels": "conformance-tier=worker"}, "template": template}]


def head_redis_username(spec: dict) -> None:
    spec["headGroupSpec"]["rayStartParams"]["redis-username"] = "conformance"


# what a RayJob's cluster may not have, set in the jobTemplate's rayClusterSpec (KubeRay's ValidateRayCronJobSpec
# applies the RayJob checks to the template): the edit, what the Warning event names (lower case), the features
TEMPLATE = "RayCronJob:spec.jobTemplate.rayClusterSpec"
TEMPLATE_REFUSED = [
    pytest.param(k8s_token_auth, "token auth", id="k8s-token-auth", marks=[
        pytest.mark.feature("RayClusterK8sTokenAuth"),
        pytest.mark.covers(f"{TEMPLATE}.authOptions.enableK8sTokenAuth")]),
    pytest.param(head_labels_in_start_params, "labels", id="head-labels-in-start-params", marks=[
        pytest.mark.feature(LABELS), pytest.mark.covers(f"{TEMPLATE}.headGroupSpec.rayStartParams[labels]")]),
    pytest.param(worker_labels_in_start_params, "labels", id="worker-labels-in-start-params", marks=[
        pytest.mark.feature(LABELS), pytest.mark.covers(f"{TEMPLATE}.workerGroupSpecs[].rayStartParams[labels]")]),
    pytest.param(head_redis_username, "redis username", id="head-redis-username", marks=[
        pytest.mark.feature(LABELS), pytest.mark.covers(f"{TEMPLATE}.headGroupSpec.rayStartParams[redis-username]")]),
]


def refused_body(ctx, name: str, changes: dict) -> dict:
    body = schedule_only(ctx.sample(SAMPLE))
    body["metadata"]["name"] = name
    body["spec"].update(changes)
    return body


@pytest.mark.feature("RayCronJobValidation")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCronJob:spec.schedule", "RayCronJob:spec.timeZone")
def test_invalid_raycronjob_is_refused_and_schedules_nothing(ctx):
    """RayCronJobs with an unparsable schedule, an unknown time zone, CRON_TZ= in the schedule or a 37-character
    name each get a Warning event InvalidRayCronJobSpec saying what is wrong, and none creates a RayJob through a
    tick; a RayCronJob with an empty timeZone is refused when created."""
    try:
        ctx.create_raycronjob(refused_body(ctx, "empty-zone", {"timeZone": ""}))
        refused = "created"
    except ApiException as e:
        refused = f"{e.status}: {e.body}"
    assert refused.startswith("422") and "spec.timeZone" in refused, \
        f"expected the API server to refuse an empty spec.timeZone (422 naming spec.timeZone); observed {refused}"

    crons = {name: ctx.create_raycronjob(refused_body(ctx, name, changes)) for name, (changes, _) in REFUSED.items()}
    for name, (_, says) in REFUSED.items():
        crons[name].must_be_refused(says=says)
    no_rayjob_must_be_scheduled(ctx.k8s, ctx.namespace, why=f"the RayCronJobs {', '.join(crons)} are invalid")


@pytest.mark.feature("RayCronJobValidation")
@pytest.mark.samples(SAMPLE)
@pytest.mark.parametrize("edit,names", TEMPLATE_REFUSED)
def test_rayjob_template_the_operator_refuses_is_refused_and_schedules_nothing(ctx, edit, names):
    """A RayCronJob whose jobTemplate is a RayJob the operator would refuse (its rayClusterSpec with Kubernetes token
    authentication, which a RayJob's cluster may not have, or node labels in a group's rayStartParams, or a Redis
    user name in the head's) gets a Warning event InvalidRayCronJobSpec saying its RayJob template is invalid and
    why, and creates no RayJob through the next tick."""
    body = schedule_only(ctx.sample(SAMPLE))
    edit(body["spec"]["jobTemplate"]["rayClusterSpec"])
    cron = ctx.create_raycronjob(body)
    event = cron.must_be_refused(says="RayJob template")
    assert names in event.message.lower(), \
        f"expected RayCronJob {cron.name}'s Warning event to name the template's {names}; observed {event}"
    no_rayjob_must_be_scheduled(ctx.k8s, ctx.namespace, why=f"RayCronJob {cron.name}'s RayJob template is invalid")
