"""The head and worker group settings of a RayCluster a RayJob or a RayService makes (its rayClusterSpec, its
rayClusterConfig): they act as on a user's RayCluster -- group labels and resources in the Pods and in Ray, the
head's Ingress, the injected probes and env beside the user's."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.head_service import head_ingress_must_route, head_service_must_exist
from rayconformance.testing.expect.raycluster_groups import pods_must_carry_labels
from rayconformance.testing.expect.raycluster_nodes import ray_nodes_must_offer
from rayconformance.testing.expect.raycluster_pod_wiring import (ray_container_env_must_hold,
                                                                  ray_container_probes_must_be)
from rayconformance.testing.axes import OWNER_SAMPLES, OWNERS, owned_cluster

CLUSTER_SPEC = {"RayJob": "spec.rayClusterSpec", "RayService": "spec.rayClusterConfig"}
AGENT_PORT, DASHBOARD_PORT = 52365, 8265  # the operator's default agent port; both owners' dashboard port
RAY_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")  # refused beside a group's resources
CLUSTER_NAME_REF = {"RAY_CLUSTER_NAME": "metadata.labels['ray.io/cluster']"}


def add_env(container: dict, name: str, value: str) -> None:
    container["env"] = [*container.get("env", []), {"name": name, "value": value}]


def group_settings(spec: dict) -> None:
    """Labels for both groups and the Ingress on the head; the worker's Ray resources from its group's resources
    (1 CPU, 1 "worker-slot") instead of rayStartParams; one env var of the user's in each Ray container."""
    head, worker = spec["headGroupSpec"], spec["workerGroupSpecs"][0]
    head["labels"], head["enableIngress"] = {"conformance-tier": "head"}, True
    worker["labels"], worker["resources"] = {"conformance-tier": "worker"}, {"CPU": "1", "worker-slot": "1"}
    for key in RAY_RESOURCE_PARAMS:
        worker["rayStartParams"].pop(key, None)
    add_env(head["template"]["spec"]["containers"][0], "CONFORMANCE_NOTE", "head")
    add_env(worker["template"]["spec"]["containers"][0], "CONFORMANCE_NOTE", "worker")


@pytest.mark.feature("RayClusterGroupLabelsAndResources", "RayClusterHeadIngress", "RayClusterPodDefaults")
@pytest.mark.parametrize("owner", OWNERS[1:])
@pytest.mark.samples(*OWNER_SAMPLES)
def test_group_settings_act_in_an_owned_cluster(ctx, owner):
    """In the RayCluster of a RayJob (its job running) or of a RayService (Ready), the cluster spec's group settings
    act as on a user's RayCluster: each group's labels are on its Pods and its Ray node, the worker's Ray node offers
    its group's resources, enableIngress gives the cluster an Ingress to its head Service's dashboard, and each Ray
    container gets its liveness probe in the form of the cluster's rayVersion
    (the head, and a RayJob's worker, its readiness probe too) and RAY_CLUSTER_NAME beside the user's env var."""
    owned = owned_cluster(ctx, owner, shape=group_settings)
    cluster, at = owned.cluster, f"{owner}:{CLUSTER_SPEC[owner]}"
    head, workers = cluster.head_pod(), cluster.pods("worker")
    assert len(workers) == 1, f"{owned.describe()} must have its one worker; observed {len(workers)} worker Pods"
    worker = workers[0]

    # step 1: the groups' labels and resources, on the Pods and in Ray
    pods_must_carry_labels([head], {"conformance-tier": "head"}, why=f"{owned.describe()}: headGroupSpec.labels")
    pods_must_carry_labels([worker], {"conformance-tier": "worker"},
                           why=f"{owned.describe()}: workerGroupSpecs[].labels")
    service = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state).metadata.name
    ray_nodes_must_offer(ctx.k8s, ctx.namespace, service, [
        (head, {"labels": {"conformance-tier": "head"}}),
        (worker, {"resources": {"CPU": 1, "worker-slot": 1}, "labels": {"conformance-tier": "worker"}}),
    ], ctx.timeouts.pods, why=f"{owned.describe()}: the groups' resources and labels")
    ctx.covers(f"{at}.headGroupSpec.labels", f"{at}.workerGroupSpecs[].labels", f"{at}.workerGroupSpecs[].resources")

    # step 2: the head's Ingress
    head_ingress_must_route(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state, service=service,
                            port=DASHBOARD_PORT, what=f"enableIngress in the cluster spec of {owned.describe()}")
    ctx.covers(f"{at}.headGroupSpec.enableIngress")

    # step 3: the probes and env the operator adds, beside the user's env
    ray_container_probes_must_be(head, ray_version=ctx.ray_version, ports=[AGENT_PORT, DASHBOARD_PORT])
    # (a RayService's workers get a readiness probe of their own, asking Serve's proxy too)
    ray_container_probes_must_be(worker, ray_version=ctx.ray_version, ports=[AGENT_PORT],
                                 liveness_only=owner == "RayService")
    ray_container_env_must_hold(head, {"CONFORMANCE_NOTE": "head"}, CLUSTER_NAME_REF)
    ray_container_env_must_hold(worker, {"CONFORMANCE_NOTE": "worker"}, CLUSTER_NAME_REF)
    ctx.covers(f"{at}.rayVersion", f"{at}.headGroupSpec.template.spec.containers[].livenessProbe",
               f"{at}.headGroupSpec.template.spec.containers[].readinessProbe",
               f"{at}.workerGroupSpecs[].template.spec.containers[].livenessProbe",
               f"{at}.headGroupSpec.template.spec.containers[].env",
               f"{at}.workerGroupSpecs[].template.spec.containers[].env")
