"""Autoscaler v1 and v2 and placement groups of each strategy: a placement group of two 1-CPU bundles brings up the
workers its strategy needs (packed on one 2-CPU worker, or spread over two), and when those workers are deleted, as many
new ones come up and the placement group is placed again."""
from __future__ import annotations

import pytest

from rayconformance.fixtures.expect.raycluster_pods import replacement_workers_must_be_running_and_ready

VERSIONS = [pytest.param("v1", marks=pytest.mark.feature("RayClusterAutoscalerV1")),
            pytest.param("v2", marks=pytest.mark.feature("RayClusterAutoscalerV2"))]

# A detached placement group named 'pg' of two 1-CPU bundles, not waited for (single quotes only: runs as python -c).
PLACE = """
import ray
from ray.util.placement_group import placement_group
ray.init(namespace='rayconformance')
pg = placement_group([{{'CPU': 1}}] * 2, strategy='{strategy}', name='pg', lifetime='detached')
print('PG_CREATED', pg.id.hex())
"""
# Whether it is placed within {wait} s with every bundle on a live Ray node (after a node is lost, the table may name
# it until the group is placed again), and the IPs of the Ray nodes its bundles are on.
PG_READY = """
import time
import ray
from ray.util.placement_group import get_placement_group, placement_group_table
ray.init(namespace='rayconformance')
pg = get_placement_group('pg')
deadline = time.time() + {wait}
while True:
    alive = {{n['NodeID']: n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']}}
    table = placement_group_table(pg)
    on = list(table['bundles_to_node_id'].values())
    ok = table['state'] == 'CREATED' and len(on) == 2 and all(n in alive for n in on)
    if ok or time.time() > deadline:
        break
    time.sleep(1)
print('PG_READY', ok, sorted(set(alive.get(n, 'lost') for n in on)))
"""

# strategy -> (the group's CPUs per worker, the workers it must bring up for two 1-CPU bundles)
STRATEGIES = {
    "STRICT_PACK": ("2", 1),  # both bundles on one node: one 2-CPU worker
    "PACK": ("2", 1),  # packed where they fit: one 2-CPU worker
    "STRICT_SPREAD": ("2", 2),  # one bundle a node, though one 2-CPU worker would have the CPUs for both
    "SPREAD": ("1", 2),  # 1-CPU workers: one each
}


def pg_must_be_placed(cluster, workers: list, wait: int, *, when: str) -> None:
    """The placement group is placed (within `wait` s) on exactly the Ray nodes of `workers`."""
    __tracebackhide__ = True
    logs = cluster.ray_job_must_succeed(PG_READY.format(wait=wait), wait + cluster.timeouts.medium)
    line = next((ln for ln in logs.splitlines() if ln.startswith("PG_READY ")), "")
    ips = sorted(p.status.pod_ip for p in workers)
    assert line.startswith("PG_READY True") and line.endswith(repr(ips)), \
        (f"{when}, the placement group must be placed on the workers {[p.metadata.name for p in workers]} (Ray "
         f"nodes {ips}); observed {line or logs[-500:]!r}; {cluster.describe_worker_groups()}")


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.feature("RayClusterAutoscalerPlacementGroups")
@pytest.mark.samples("raycluster-autoscaler")
def test_placement_group_strategy_gets_its_workers(ctx, version, strategy):
    """With autoscaler v1 or v2 and a worker group at zero, a placement group of two 1-CPU bundles brings up exactly the
    workers its strategy needs: STRICT_PACK and PACK one 2-CPU worker holding both bundles, STRICT_SPREAD two 2-CPU
    workers (one bundle each, though one would fit both), SPREAD two 1-CPU workers. When those workers are deleted, the
    same number of new workers comes up and the placement group is placed on them again."""
    cpus, count = STRATEGIES[strategy]
    body = ctx.sample("raycluster-autoscaler")
    body["spec"]["autoscalerOptions"]["version"] = version
    group = body["spec"]["workerGroupSpecs"][0]
    group["rayStartParams"]["num-cpus"] = cpus
    gname, wait = group["groupName"], int(ctx.timeouts.medium)
    cluster = ctx.create_raycluster(body)
    cluster.must_be_provisioned()

    # step 1: the placement group brings up the workers its strategy needs, and is placed on them
    with cluster.watch_pods() as pods:
        cluster.ray_job_must_succeed(PLACE.format(strategy=strategy), ctx.timeouts.medium)
        workers = cluster.workers_must_be_running_and_ready(
            count, ctx.timeouts.upgrade, what=f"a {strategy} placement group of two 1-CPU bundles to bring up "
                                              f"{count} worker(s) of {cpus} CPUs")
        pg_must_be_placed(cluster, workers, wait, when=f"with {count} worker(s) up")
    pods.must_not_have_failed()
    assert pods.peak == count, \
        (f"a {strategy} placement group of two 1-CPU bundles on {cpus}-CPU workers needs exactly {count} "
         f"worker(s); observed {pods.summary()}")

    # step 2: its workers are deleted; as many new ones come up and the placement group is placed again
    old = {p.metadata.uid for p in workers}
    for pod in workers:
        cluster.delete_pod(pod)
    new = replacement_workers_must_be_running_and_ready(
        ctx.k8s, ctx.namespace, cluster.name, old, count, ctx.timeouts.upgrade,
        what=f"the deleted workers of the {strategy} placement group to be replaced")
    pg_must_be_placed(cluster, new, wait, when="once its deleted workers are replaced")
