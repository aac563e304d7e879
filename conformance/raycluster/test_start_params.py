"""rayStartParams as `ray start` options: every key of every group reaches the Ray container's command with its
value, Ray's boolean options set to false included."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.raycluster_pods import start_params_must_reach_ray_start


@pytest.mark.feature("RayClusterStartParams")
@pytest.mark.samples("raycluster-start-params")
def test_start_params_reach_ray_start_with_their_values(ctx):
    """Whatever a group's rayStartParams say reaches `ray start` on that group's Pods as --key=value:
    include-log-monitor "false" is passed as --include-log-monitor=false on every node (so Ray starts no log
    monitor) instead of being dropped (which leaves it running), include-dashboard "true" is kept, and the sizes
    (num-cpus, object-store-memory) are passed as given. The cluster provisions and Ray lists both nodes alive."""
    body = ctx.sample("raycluster-start-params")
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    # step 1: each Pod's `ray start` carries its group's parameters, with their values
    params = {"head": body["spec"]["headGroupSpec"]["rayStartParams"],
              **{g["groupName"]: g["rayStartParams"] for g in body["spec"]["workerGroupSpecs"]}}
    pods = cluster.pods()
    assert len(pods) == 2, f"expected the head and one worker Pod, observed {[p.metadata.name for p in pods]}"
    for pod in pods:
        labels = pod.metadata.labels or {}
        group = "head" if labels.get("ray.io/node-type") == "head" else labels.get("ray.io/group")
        assert group in params, f"Pod {pod.metadata.name}: expected the label ray.io/group naming one of {sorted(params)}, " \
            f"observed labels {labels}"
        start_params_must_reach_ray_start(pod, params[group], group=group)

    # step 2: Ray started with them on every node
    cluster.ray_must_list_alive_nodes(2)
