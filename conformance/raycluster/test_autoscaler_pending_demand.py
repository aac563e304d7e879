"""Autoscaler v1 and v2 and an idle worker that pending demand needs: it is kept past its idle timeout while the
autoscaler brings up the other worker the demand needs, rather than removed and started again."""
from __future__ import annotations

import json
import re

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.programs import program

IDLE_TIMEOUT = 6  # seconds: shorter than a worker takes to start
START_DELAY = 15  # seconds an init container holds each worker before Ray starts


def printed(logs: str, key: str):
    m = re.search(rf"^{key} (.*)$", logs, re.M)
    assert m, f"the Ray job printed no {key} line; logs:\n{logs[-2000:]}"
    return json.loads(m.group(1))


@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
@pytest.mark.feature("RayClusterAutoscalerPlacementGroups")
@pytest.mark.samples("raycluster-autoscaler")
def test_idle_worker_needed_by_pending_placement_group_is_kept(ctx, version):
    """With autoscaler v1 or v2 (idleTimeoutSeconds 6) and workers that take over 15 s to start: a worker left idle when
    its placement group is removed, but needed by a new pending placement group of two bundles on different nodes,
    is not removed while the second worker starts, however long past the idle timeout that takes; the new placement
    group is placed on it and the new worker (the head, then 2 workers alive, the first one among them). The autoscaler
    that did it is the one asked for."""
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"].update(version=version, idleTimeoutSeconds=IDLE_TIMEOUT)
    group = body["spec"]["workerGroupSpecs"][0]
    image = group["template"]["spec"]["containers"][0]["image"]
    group["template"]["spec"]["initContainers"] = [
        {"name": "start-late", "image": image, "command": ["bash", "-c", f"sleep {START_DELAY}"]}]
    wait = int(ctx.timeouts.medium)
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    with cluster.watch_pods() as pods:
        # step 1: the first placement group brings up a worker; removed, it leaves the worker idle; the second one
        # needs that worker and another
        logs = cluster.ray_job_must_succeed(program("pending_placement_groups", wait=wait),
                                            2 * wait + ctx.timeouts.medium)
    pods.must_not_have_failed()
    assert printed(logs, "PG1_READY") is True, \
        f"a placement group of one 1-CPU bundle must bring up a worker and be placed within {wait}s: {pods.summary()}"
    first = printed(logs, "NODES1")
    assert len(first) == 2 and pods.created, \
        f"the first placement group must have brought up exactly 1 worker (Ray nodes alive: {first}); {pods.summary()}"

    # step 2: the idle worker was kept while the second one started
    kept = pods.created[0]
    assert kept not in pods.deleted, \
        (f"the first worker {pods.names[kept]}, idle once its placement group was removed but needed by the pending "
         f"one, must be kept while the second worker starts (idleTimeoutSeconds={IDLE_TIMEOUT}, workers take over "
         f"{START_DELAY}s to start); observed {pods.summary()}")

    # step 3: the new placement group is placed on it and on one new worker
    placed, after = printed(logs, "PG2_READY"), printed(logs, "NODES2")
    assert placed is True and len(after) == 3 and all(n in after for n in first), \
        (f"the placement group of two STRICT_SPREAD bundles must be placed within {wait}s on the kept worker and one "
         f"new one (Ray nodes alive before {first}, after {after}, placed {placed}); {pods.summary()}")
    assert pods.peak == 2, f"the two placement groups need 2 workers at most; observed {pods.summary()}"
    cluster.autoscaler_must_be(version)  # read once the pod watch is over: the extra job outlasts the idle timeout
