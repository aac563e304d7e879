"""A RayCronJob's schedule: each tick creates one RayJob from the jobTemplate, named, labelled and owned by the
RayCronJob, status.lastScheduleTime following the ticks; the RayJob runs; a changed jobTemplate reaches the next
RayJob only; deleting the RayCronJob deletes its RayJobs."""
from __future__ import annotations

import copy

import pytest

from rayconformance.testing.expect.raycronjob import MINUTE, iso, next_tick, tick_of
from rayconformance.testing.expect.rayjob import rayjob_must_be_gone

from .helpers import SAMPLE, schedule_only

CHANGED_ENTRYPOINT = "python -c \"print('rayconformance, the changed template')\""
# what the first test's jobTemplate sets besides the sample's: its RayJobs are suspended, so the values are only
# carried (each RayJob field's effect is other tests' to assert)
MORE_TEMPLATE = {
    "runtimeEnvYAML": "env_vars:\n  GREETING: hello\n",
    "metadata": {"team": "rayconformance"},
    "ttlSecondsAfterFinished": 60,
    "activeDeadlineSeconds": 900,
    "preRunningDeadlineSeconds": 600,
    "backoffLimit": 1,
    "entrypointNumCpus": 0.5,
    "entrypointResources": '{"R1": 1}',
    "submitterConfig": {"backoffLimit": 1},
}
MORE_CLUSTER = {"enableInTreeAutoscaling": True,
                "autoscalerOptions": {"version": "v2", "idleTimeoutSeconds": 60, "upscalingMode": "Default",
                                      "imagePullPolicy": "IfNotPresent", "env": [{"name": "GREETING", "value": "hi"}],
                                      "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}},
                "headServiceAnnotations": {"rayconformance.io/copied": "yes"},
                "headGroupSpec": {"serviceType": "ClusterIP"},
                "workerGroupSpecs": [{"groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
                                      "idleTimeoutSeconds": 30, "rayStartParams": {"num-cpus": "1"}}]}
# the head container's too
MORE_HEAD_CONTAINER = {"env": [{"name": "GREETING", "value": "hello"}],
                       "ports": [{"name": "dashboard", "containerPort": 8265}]}
# the jobTemplate paths the first test's RayJobs must carry unchanged (relative to spec.jobTemplate): the sample's,
# its suspend, and the above
TEMPLATE_PATHS = [
    "submissionMode", "entrypoint", "shutdownAfterJobFinishes", "suspend", "runtimeEnvYAML", "metadata",
    "ttlSecondsAfterFinished", "activeDeadlineSeconds", "preRunningDeadlineSeconds", "backoffLimit",
    "entrypointNumCpus", "entrypointResources", "submitterConfig.backoffLimit",
    "rayClusterSpec.rayVersion", "rayClusterSpec.enableInTreeAutoscaling",
    "rayClusterSpec.autoscalerOptions.version", "rayClusterSpec.autoscalerOptions.idleTimeoutSeconds",
    "rayClusterSpec.autoscalerOptions.upscalingMode", "rayClusterSpec.autoscalerOptions.imagePullPolicy",
    "rayClusterSpec.autoscalerOptions.env", "rayClusterSpec.autoscalerOptions.resources",
    "rayClusterSpec.headServiceAnnotations", "rayClusterSpec.headGroupSpec.serviceType",
    "rayClusterSpec.headGroupSpec.rayStartParams[num-cpus]",
    "rayClusterSpec.headGroupSpec.rayStartParams[object-store-memory]",
    "rayClusterSpec.headGroupSpec.template.spec.containers[].image",
    "rayClusterSpec.headGroupSpec.template.spec.containers[].resources",
    "rayClusterSpec.headGroupSpec.template.spec.containers[].env",
    "rayClusterSpec.headGroupSpec.template.spec.containers[].ports",
    "rayClusterSpec.workerGroupSpecs[].groupName", "rayClusterSpec.workerGroupSpecs[].idleTimeoutSeconds", "rayClusterSpec.workerGroupSpecs[].replicas",
    "rayClusterSpec.workerGroupSpecs[].minReplicas", "rayClusterSpec.workerGroupSpecs[].maxReplicas",
    "rayClusterSpec.workerGroupSpecs[].rayStartParams[num-cpus]",
    "rayClusterSpec.workerGroupSpecs[].template.spec.containers[].image",
    "rayClusterSpec.workerGroupSpecs[].template.spec.containers[].resources",
]
# what the template change sets
CHANGED_PATHS = ["entrypoint", "metadata"]


def rich_template(body: dict) -> dict:
    """The schedule-only RayCronJob with MORE_TEMPLATE, MORE_CLUSTER and MORE_HEAD_CONTAINER in its jobTemplate (the
    worker group's Pod template a copy of the head's before, its container renamed)."""
    body = schedule_only(body)
    template = body["spec"]["jobTemplate"]
    template.update(copy.deepcopy(MORE_TEMPLATE))
    cluster, more = template["rayClusterSpec"], copy.deepcopy(MORE_CLUSTER)
    head = more.pop("headGroupSpec")
    worker = more.pop("workerGroupSpecs")[0]
    cluster.update(more)
    cluster["headGroupSpec"].update(head)
    worker["template"] = copy.deepcopy(cluster["headGroupSpec"]["template"])
    worker["template"]["spec"]["containers"][0]["name"] = "ray-worker"
    cluster["workerGroupSpecs"] = [worker]
    cluster["headGroupSpec"]["template"]["spec"]["containers"][0].update(copy.deepcopy(MORE_HEAD_CONTAINER))
    return body


def added_rayjobs(watch) -> list[str]:
    """The RayJobs a watch on the namespace's RayJobs saw created, in order, once each."""
    return list(dict.fromkeys(v.name for v in watch.snapshot() if v.type == "ADDED"))


@pytest.mark.feature("RayCronJobSchedule")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCronJob:spec.schedule")
def test_each_tick_creates_one_rayjob_it_owns(ctx):
    """A RayCronJob scheduled every minute creates, at the first minute after its creation and at the next one,
    one RayJob each and no other: named <name>-<minutes since the epoch of the tick>, labelled
    ray.io/cronjob-name, controlled by the RayCronJob, its spec the jobTemplate unchanged. Its
    status.lastScheduleTime moves to each tick."""
    with ctx.watch("RayJob") as rayjobs:
        cron = ctx.create_raycronjob(rich_template(ctx.sample(SAMPLE)))
        created = cron.created()
        first = cron.must_schedule(tick_after=next_tick(created))
        second = cron.must_schedule(tick_after=tick_of(first) + 1)
        cron.suspend()
        seen = added_rayjobs(rayjobs)
    assert tick_of(first) == next_tick(created), \
        (f"expected the first RayJob of RayCronJob {cron.name} (created {iso(created)}) at the first tick after "
         f"its creation, {iso(next_tick(created))}; observed {first['metadata']['name']} for {iso(tick_of(first))}")
    assert tick_of(second) == tick_of(first) + MINUTE, \
        (f"expected the RayJob of the tick after {iso(tick_of(first))} to be for {iso(tick_of(first) + MINUTE)}; "
         f"observed {second['metadata']['name']} for {iso(tick_of(second))}")
    for job in (first, second):
        cron.rayjob_must_be_its_own(job)
        cron.rayjob_must_carry_its_template(job, TEMPLATE_PATHS)
    ctx.covers_copied("RayCronJob:spec.jobTemplate", "RayJob:spec", TEMPLATE_PATHS)
    wanted = [first["metadata"]["name"], second["metadata"]["name"]]
    assert seen == wanted, (f"expected one RayJob per tick through two ticks of RayCronJob {cron.name}, {wanted}; "
                            f"the watch on its namespace saw created {seen}")


@pytest.mark.feature("RayCronJobSchedule")
@pytest.mark.samples(SAMPLE)
def test_scheduled_rayjob_runs_to_completion(ctx):
    """The RayJob a RayCronJob's tick creates is a RayJob like any other: it brings up its RayCluster, runs its
    entrypoint to jobStatus SUCCEEDED and ends Complete (the RayCronJob is suspended after that one tick)."""
    cron = ctx.create_raycronjob(ctx.sample(SAMPLE))
    scheduled = cron.must_schedule(tick_after=next_tick(cron.created()))
    cron.suspend()
    cron.rayjob_must_be_its_own(scheduled)
    ctx.rayjob(scheduled["metadata"]["name"]).must_succeed(when=f"scheduled by RayCronJob {cron.name}")


@pytest.mark.feature("RayCronJobSchedule")
@pytest.mark.samples(SAMPLE)
def test_changed_template_reaches_the_next_rayjob(ctx):
    """A jobTemplate changed on a running RayCronJob (entrypoint, metadata) is what the next tick's RayJob carries;
    the RayJob created before the change keeps the template it was made from."""
    cron = ctx.create_raycronjob(schedule_only(ctx.sample(SAMPLE)))
    first = cron.must_schedule(tick_after=next_tick(cron.created()))
    before = cron.get()
    cron.patch({"spec": {"jobTemplate": {"entrypoint": CHANGED_ENTRYPOINT, "metadata": {"template": "changed"}}}})
    after = cron.get()
    second = cron.must_schedule(tick_after=tick_of(first) + 1)
    cron.suspend()
    cron.rayjob_must_carry_its_template(second, CHANGED_PATHS, as_of=after)
    earlier = ctx.rayjob(first["metadata"]["name"]).get()
    assert earlier is not None, f"expected RayJob {first['metadata']['name']} to stay after its template changed"
    cron.rayjob_must_carry_its_template(earlier, as_of=before)
    ctx.covers_copied("RayCronJob:spec.jobTemplate", "RayJob:spec", CHANGED_PATHS)


@pytest.mark.feature("RayCronJobSchedule")
@pytest.mark.samples(SAMPLE)
def test_deleting_the_raycronjob_deletes_its_rayjobs(ctx):
    """Deleting a RayCronJob deletes the RayJobs it created: they are its dependents."""
    cron = ctx.create_raycronjob(schedule_only(ctx.sample(SAMPLE)))
    scheduled = cron.must_schedule(tick_after=next_tick(cron.created()))["metadata"]["name"]
    cron.delete()
    rayjob_must_be_gone(ctx.k8s, ctx.namespace, scheduled, ctx.timeouts.gone,
                        after=f"its RayCronJob {cron.name} was deleted")
