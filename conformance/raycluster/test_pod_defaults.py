"""What the operator fills into the Ray Pods from the group settings and the cluster's Ray version: `ray start`'s
ports, address and sizes (given or defaulted), the health probes, the env vars Ray and the user's code read, the
metrics port and the object store's shared memory; Ray then runs with them."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.head_service import head_service_must_exist
from rayconformance.testing.expect.raycluster_nodes import ray_nodes_must_offer
from rayconformance.testing.expect.raycluster_pod_wiring import (ray_container_env_must_hold,
                                                                  ray_container_ports_must_be,
                                                                  ray_container_probes_must_be, shared_memory_must_be,
                                                                  user_container_parts_must_be_kept)
from rayconformance.testing.expect.raycluster_pods import start_params_must_reach_ray_start
from rayconformance.testing.programs import program

GIB = 1024 ** 3
AGENT_PORT, METRICS_PORT = 52365, 8080  # the operator's defaults for dashboard-agent-listen-port and metrics
POST_START = "/tmp/conformance-post-start"  # what the head's postStart hook writes


@pytest.mark.feature("RayClusterPodDefaults")
@pytest.mark.samples("raycluster-pod-defaults")
@pytest.mark.covers(
    "RayCluster:spec.rayVersion",
    "RayCluster:spec.headGroupSpec.rayStartParams[port]",
    "RayCluster:spec.headGroupSpec.rayStartParams[dashboard-port]",
    "RayCluster:spec.headGroupSpec.rayStartParams[dashboard-host]",
    "RayCluster:spec.headGroupSpec.rayStartParams[dashboard-agent-listen-port]",
    "RayCluster:spec.headGroupSpec.rayStartParams[metrics-export-port]",
    "RayCluster:spec.headGroupSpec.rayStartParams[memory]",
    "RayCluster:spec.headGroupSpec.rayStartParams[plasma-directory]",
    "RayCluster:spec.headGroupSpec.rayStartParams[num-gpus]", "RayCluster:spec.headGroupSpec.rayStartParams[resources]",
    "RayCluster:spec.headGroupSpec.rayStartParams[log-color]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[address]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[dashboard-agent-listen-port]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[metrics-export-port]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[memory]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[plasma-directory]",
    "RayCluster:spec.workerGroupSpecs[].rayStartParams[log-color]",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].env",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].livenessProbe",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].readinessProbe",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].ports",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].resources",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].startupProbe",
    "RayCluster:spec.headGroupSpec.template.spec.containers[].lifecycle",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].startupProbe",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].lifecycle",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].env",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].livenessProbe",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].readinessProbe",
    "RayCluster:spec.workerGroupSpecs[].template.spec.containers[].ports")
def test_operator_completes_ray_pods_from_group_settings(ctx):
    """The operator completes each Ray Pod from its group's settings and the cluster's rayVersion:
    - `ray start` gets the head's GCS port and dashboard port as given, the dashboard open beyond the Pod
      (dashboard-host 0.0.0.0), the metrics and dashboard agent ports (given, else 8080 and 52365), Ray memory as
      given or else the container's memory limit, CPUs from the container's limit, GPUs and custom resources as
      given; a worker gets the head Service's
      address on the GCS port; log-color "false" is passed as such. Ray runs with all of it:
      the worker joins the moved GCS, the dashboard answers on its moved port, and each node offers those sizes.
    - each Ray container gets a liveness and a readiness probe on Ray's health, in the form its Ray version takes
      (one HTTP endpoint from Ray 2.53, a command before), on its own ports; a readiness probe the user wrote stays
      theirs, and so do their startup probes and lifecycle hooks (the head's postStart hook has run);
    - each Ray container keeps the user's env and gets RAY_CLUSTER_NAME and RAY_CLUSTER_NAMESPACE from the Pod,
      RAY_PORT and RAY_ADDRESS for the moved GCS (code run on the head sees the first two and the user's var);
    - a metrics port is added where the container names none; the object store gets a /dev/shm sized as the
      container's memory unless plasma-directory puts it elsewhere."""
    body = ctx.sample("raycluster-pod-defaults")
    head_spec, worker_spec = body["spec"]["headGroupSpec"], body["spec"]["workerGroupSpecs"][0]
    head_params, worker_params = head_spec["rayStartParams"], worker_spec["rayStartParams"]
    gcs_port, dashboard_port = head_params["port"], int(head_params["dashboard-port"])
    worker_agent = int(worker_params["dashboard-agent-listen-port"])
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()
    head, worker = cluster.head_pod(), cluster.pods("worker")[0]
    service = head_service_must_exist(ctx.k8s, ctx.namespace, cluster.name, ctx.timeouts.state).metadata.name
    fqdn_prefix = f"{service}.{ctx.namespace}.svc."

    # step 1: `ray start` on each Pod, the given options kept and the missing ones defaulted
    given_head = {k: v for k, v in head_params.items() if k != "resources"}  # a JSON value: Ray's view checks it
    start_params_must_reach_ray_start(head, {**given_head, "dashboard-host": "0.0.0.0",
                                             "metrics-export-port": str(METRICS_PORT),
                                             "dashboard-agent-listen-port": str(AGENT_PORT)}, group="head")
    start_params_must_reach_ray_start(worker, {**worker_params, "num-cpus": "1", "memory": str(GIB)},
                                      group=worker_spec["groupName"])
    worker_env = {e.name: e.value for e in worker.spec.containers[0].env or []}
    address = worker_env.get("FQ_RAY_IP", "")
    assert address.startswith(fqdn_prefix), \
        (f"a worker must reach the head through its Service's full name ({fqdn_prefix}...); observed FQ_RAY_IP "
         f"{address!r}")
    start_params_must_reach_ray_start(worker, {"address": f"{address}:{gcs_port}"}, group=worker_spec["groupName"])

    # step 2: Ray runs with them: both nodes alive through the moved dashboard, each offering its sizes
    cluster.ray_must_list_alive_nodes(2)
    ray_nodes_must_offer(ctx.k8s, ctx.namespace, service, [
        (head, {"resources": {"CPU": 1, "memory": int(head_params["memory"]), "GPU": 1, "head-slot": 2}}),
        (worker, {"resources": {"CPU": 1, "memory": GIB}}),
    ], ctx.timeouts.pods, why="the head's memory, GPU and head-slot from rayStartParams; the worker's CPU and memory "
                              "from its limits")

    # step 3: the probes, in the form of the cluster's Ray version
    ray_container_probes_must_be(head, ray_version=ctx.ray_version, ports=[AGENT_PORT, dashboard_port])
    worker_container = worker_spec["template"]["spec"]["containers"][0]
    ray_container_probes_must_be(worker, ray_version=ctx.ray_version, ports=[worker_agent],
                                 user_readiness=worker_container["readinessProbe"])
    head_container = head_spec["template"]["spec"]["containers"][0]
    user_container_parts_must_be_kept(head, head_container, ("startupProbe", "lifecycle"))
    user_container_parts_must_be_kept(worker, worker_container, ("startupProbe", "lifecycle"))

    # step 4: the env, the user's kept beside the operator's
    cluster_name = {"RAY_CLUSTER_NAME": "metadata.labels['ray.io/cluster']",
                    "RAY_CLUSTER_NAMESPACE": "metadata.namespace"}
    ray_container_env_must_hold(head, {"CONFORMANCE_NOTE": "head", "RAY_PORT": gcs_port,
                                       "RAY_ADDRESS": f"127.0.0.1:{gcs_port}"}, cluster_name)
    ray_container_env_must_hold(worker, {"CONFORMANCE_NOTE": "worker", "RAY_PORT": gcs_port,
                                         "RAY_ADDRESS": f"{address}:{gcs_port}"}, cluster_name)
    logs = cluster.ray_job_must_succeed(program("pod_env", post_start=POST_START))
    expected = f"ENV {cluster.name} {ctx.namespace} head started"
    assert expected in logs, \
        (f"code run on the head must see {expected!r}: the cluster's name and namespace, the user's env var, and the "
         f"file the postStart hook wrote; its output: {logs[-500:]!r}")

    # step 5: the metrics port and the object store's shared memory
    head_ports = {p["name"]: p["containerPort"] for p in head_spec["template"]["spec"]["containers"][0]["ports"]}
    ray_container_ports_must_be(head, {**head_ports, "metrics": METRICS_PORT},
                                why="the head container names no metrics port: the operator adds 8080")
    ray_container_ports_must_be(worker, {"metrics": int(worker_params["metrics-export-port"])},
                                why="the worker container names its metrics port: nothing added")
    shared_memory_must_be(head, head_spec["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"])
    shared_memory_must_be(worker, None)
