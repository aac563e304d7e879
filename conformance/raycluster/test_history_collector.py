"""The history server's collector (spec.historyServerOptions: KubeRay 1.7, alpha, its RayClusterHistoryServer gate
on): the container the operator adds to each Ray Pod from collectorOptions. What the collector then does (shipping
Ray's logs and events to object storage for the history server) needs a storage backend and the collector's image,
neither of which the suite's clusters have: the containers are what is looked at, not what they ship."""
from __future__ import annotations

import pytest

from rayconformance.testing.expect.raycluster_sidecars import pods_must_carry_container

SAMPLE = "raycluster-history-collector"


@pytest.mark.feature("RayClusterHistoryCollector")
@pytest.mark.samples(SAMPLE)
@pytest.mark.covers("RayCluster:spec.historyServerOptions")
def test_collector_beside_every_ray_container(ctx):
    """With historyServerOptions.collectorOptions, the head Pod and the worker Pod each get, beside the Ray
    container, a collector container of the given image, image pull policy and resources, with the given env
    entries."""
    body = ctx.sample(SAMPLE)
    options = body["spec"]["historyServerOptions"]["collectorOptions"]
    cluster = ctx.create_raycluster(body)
    pods_must_carry_container(ctx.k8s, ctx.namespace, cluster.name, options, ctx.timeouts.pods, count=2,
                              what="a collector container (historyServerOptions.collectorOptions)")
