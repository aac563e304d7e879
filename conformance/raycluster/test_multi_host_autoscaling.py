"""Ray's autoscaler (v1 and v2) scaling a multi-host worker group of fake TPU hosts by whole slices, with one host
and with four, as KubeRay v1.7.0's e2e TestRayClusterAutoscalerWithFakeTPU does: one replica of demand brings one
whole slice, and maxReplicas set to 0 takes the whole slice away while the demand is still there."""
from __future__ import annotations

import json
import re

import pytest

from rayconformance.testing.axes import AUTOSCALER_VERSIONS
from rayconformance.testing.expect.raycluster_slices import describe_slices, slices_must_be_whole
from rayconformance.testing.programs import program

from .test_multi_host import AUTOSCALER_SAMPLE

# the group's maxReplicas per (autoscaler, numOfHosts), as KubeRay's e2e sets them (3 for one host, 4 for four): room
# for more slices than the demand needs, so any slice too many would show. Except autoscaler v1 with four hosts: Ray's
# autoscaler v1 asks KubeRay for as many replicas as the nodes it wants (its KubeRay node provider writes its desired
# workers into replicas, no division by numOfHosts: Ray 2.60 autoscaler/_private/kuberay/node_provider.py), so 4
# hosts' demand asks for 4 replicas of 4 hosts whatever the operator does; capped at 1 there. (KubeRay's own "v1"
# case sets no version, so with Ray 2.60 it runs Ray's default, v2.)
MAX_REPLICAS = {("v1", 1): 3, ("v1", 4): 1, ("v2", 1): 3, ("v2", 4): 4}


@pytest.mark.feature("RayClusterMultiHost", "RayClusterMultiHostAutoscaling")
@pytest.mark.samples(AUTOSCALER_SAMPLE)
@pytest.mark.parametrize("hosts", [1, 4])
@pytest.mark.parametrize("version", AUTOSCALER_VERSIONS)
def test_slices_follow_demand_and_max_replicas(ctx, version, hosts):
    """With autoscaler v1 or v2 and a multi-host group of fake TPU hosts (numOfHosts 1 or 4, each host offering Ray TPU
    4 through rayStartParams, 0 to 3 or 4 replicas, or 1 for v1 with four hosts), demand for one slice's worth of
    TPU (one actor per host) brings up exactly one whole slice, one actor on each host, by the autoscaler asked for;
    setting the group's maxReplicas to 0 while that demand lasts removes the whole slice (no Pod of the group left),
    and no Pod beyond the one slice is ever created."""
    body = ctx.sample(AUTOSCALER_SAMPLE)
    body["spec"]["autoscalerOptions"]["version"] = version
    group = body["spec"]["workerGroupSpecs"][0]
    group["numOfHosts"], group["maxReplicas"] = hosts, MAX_REPLICAS[version, hosts]
    name = group["groupName"]
    chips = json.loads(group["rayStartParams"]["resources"].strip("'"))["TPU"]
    cluster = ctx.raycluster(body["metadata"]["name"])

    with cluster.watch_pods(group=name) as pods:
        # step 1: the cluster comes up without the slice
        ctx.create_raycluster(body)
        cluster.must_be_provisioned()

        # step 2: one replica of demand brings up one whole slice, each host running one actor
        logs = cluster.ray_job_must_succeed(program("tpu_demand", chips=chips, hosts=hosts,
                                                    wait=int(ctx.timeouts.medium)))
        m = re.search(r"^TPU_ACTORS (.*)$", logs, re.M)
        assert m, f"the Ray job printed no TPU_ACTORS line; logs:\n{logs[-2000:]}"
        workers = cluster.group_workers_must_be_running_and_ready(
            name, hosts, ctx.timeouts.short, what=f"{hosts} actors needing TPU {chips} each (one replica of demand) to "
                                                  f"bring up one slice of {hosts} hosts")
        # a one-host slice is a plain replica: KubeRay labels slices (replica name, host index) from numOfHosts 2 on
        slice_pods = workers if hosts == 1 else slices_must_be_whole(workers, hosts, [0],
                                                                   when="after one replica of demand")[0]
        assert sorted(json.loads(m.group(1))) == sorted(p.status.pod_ip for p in slice_pods), \
            (f"the {hosts} actors (TPU {chips} each) must run one on each host of the slice; observed them on "
             f"{m.group(1)}; hosts {describe_slices(slice_pods)}")
        cluster.autoscaler_must_be(version)

        # step 3: maxReplicas 0 takes the whole slice away, the demand notwithstanding
        groups = cluster.get()["spec"]["workerGroupSpecs"]
        groups[0]["maxReplicas"] = 0
        cluster.patch({"spec": {"workerGroupSpecs": groups}})
        cluster.group_workers_must_be_running_and_ready(name, 0, what="maxReplicas 0 to remove the whole slice")
    pods.must_not_have_failed()
    assert len(pods.created) == hosts and pods.peak == hosts, \
        f"one replica of demand must bring up exactly one slice of {hosts} Pods, and no other; {pods.summary()}"
