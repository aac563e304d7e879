"""Thin helpers around the official `kubernetes` client: an ApiClient from a kubeconfig, the API
accessors the suite uses, the ray.io/v1 objects of a namespace, the cluster facts for the report, and whether a
Pod is Running and Ready."""
from __future__ import annotations

from pathlib import Path

from kubernetes import client, config
from kubernetes.client.rest import ApiException

RAY_GROUP, RAY_VERSION = "ray.io", "v1"
RAY_PLURALS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices",
               "RayCronJob": "raycronjobs"}
GPU_RESOURCE = "nvidia.com/gpu"


def api_client(kubeconfig: Path | str, *, retries: int | None = None) -> client.ApiClient:
    """An ApiClient for the current context of `kubeconfig`; `retries=0` makes a failed connection fail at once."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    if retries is not None:
        configuration.retries = retries
    return client.ApiClient(configuration)


def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def to_dict(api: client.ApiClient, obj) -> dict:
    """A typed API object as the plain dict the API server would return."""
    return api.sanitize_for_serialization(obj)


def ray_objects(api: client.ApiClient, namespace: str) -> dict[str, list[dict]]:
    """Kind -> the ray.io/v1 objects of that kind in `namespace`; kinds whose CRD is not installed are left out."""
    found = {}
    for kind, plural in RAY_PLURALS.items():
        try:
            found[kind] = custom(api).list_namespaced_custom_object(RAY_GROUP, RAY_VERSION, namespace, plural)["items"]
        except ApiException as e:
            if e.status != 404:
                raise
    return found


def running_and_ready(pod) -> bool:
    """Running, Ready=True and not being deleted."""
    if pod.status.phase != "Running" or pod.metadata.deletion_timestamp:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def describe_cluster(api: client.ApiClient, timeout: float = 10) -> dict:
    """The facts about a cluster that go into the report: Kubernetes version, node count, GPUs."""
    version = client.VersionApi(api).get_code(_request_timeout=timeout).git_version
    nodes = core(api).list_node(_request_timeout=timeout).items
    gpus = sum(int((n.status.allocatable or {}).get(GPU_RESOURCE, 0)) for n in nodes)
    return {"kubernetesVersion": version, "nodes": len(nodes), "gpus": gpus}
