"""RayCluster Pod accounting: scaleStrategy.workersToDelete deletes exactly the named workers."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.expect.raycluster import worker_pods_must_be, workers_must_be_running_and_ready

from .helpers import PodWatch, create_provisioned

@pytest.mark.feature("RayClusterWorkersToDelete")
def test_workers_to_delete_removes_exactly_the_named_pod(k8s, namespace, ray_version, timeouts):
    """Lowering a worker group's replicas from 3 to 2 while naming one of its Pods in
    scaleStrategy.workersToDelete (as the autoscaler does) deletes that Pod and no other: the two remaining
    workers are the same Pods as before, and no Pod is created in its place."""
    body = ray.sample("raycluster-basic", ray_version)
    body["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    name = body["metadata"]["name"]
    with PodWatch(k8s, namespace, name) as pods:
        rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)
        workers = workers_must_be_running_and_ready(k8s, namespace, name, 3, timeouts.long, what="3 workers")
        names = sorted(p.metadata.name for p in workers)
        victim, keep = names[1], [names[0], names[2]]
        before = list(pods.created)

        group = {**body["spec"]["workerGroupSpecs"][0], "replicas": 2, "scaleStrategy": {"workersToDelete": [victim]}}
        rc.patch(name, {"spec": {"workerGroupSpecs": [group]}})
        worker_pods_must_be(k8s, namespace, name, keep, timeouts.medium, consecutive=5,
                            what=f"workersToDelete=[{victim}] with replicas 2 to delete exactly {victim}")
    pods.must_not_have_failed()
    deleted = [pods.names[u] for u in pods.deleted]
    assert deleted == [victim], f"expected only {victim} deleted, observed deletions of {deleted}; {pods.summary()}"
    assert pods.created == before, \
        f"no worker Pod may be created in place of {victim}; {pods.summary()}"
