"""RayCluster suspension: suspending deletes the cluster's Pods and says so in conditions; resuming restores it."""
from __future__ import annotations

import pytest

from rayconformance.fixtures import ray
from rayconformance.fixtures.waiting import wait_for

from .helpers import create_provisioned, describe_pods, pods


def cond_is(obj, ctype: str, status: str, reason: str | None = None) -> bool:
    c = ray.condition(obj, ctype)
    return c is not None and c["status"] == status and (reason is None or c.get("reason") == reason)


@pytest.mark.feature("RayClusterSuspend")
def test_suspend_and_resume(k8s, namespace, ray_version, timeouts):
    body = ray.sample("raycluster-basic", ray_version)
    name = body["metadata"]["name"]
    rc, _ = create_provisioned(k8s, namespace, body, timeouts.long)

    def observe():
        return f"{ray.describe_conditions(rc.get(name))}; Pods: {describe_pods(pods(k8s, namespace, name))}"

    rc.patch(name, {"spec": {"suspend": True}})
    obj = wait_for(lambda: ((o := rc.get(name)) is not None and cond_is(o, "RayClusterSuspended", "True")
                            and not pods(k8s, namespace, name), o),
                   timeouts.medium, "RayClusterSuspended=True and no Pods left", observe=observe)
    assert cond_is(obj, "RayClusterSuspended", "True", "RayClusterSuspended"), ray.describe_conditions(obj)
    assert cond_is(obj, "RayClusterSuspending", "False"), \
        f"expected RayClusterSuspending=False once suspended, observed {ray.describe_conditions(obj)}"
    assert cond_is(obj, "HeadPodReady", "False", "HeadPodNotFound"), \
        f"expected HeadPodReady=False/HeadPodNotFound while suspended, observed {ray.describe_conditions(obj)}"
    assert cond_is(obj, "RayClusterProvisioned", "False"), \
        f"expected RayClusterProvisioned=False while suspended, observed {ray.describe_conditions(obj)}"
    assert (obj.get("status") or {}).get("state") == "suspended", f"status.state: {(obj.get('status') or {}).get('state')}"

    rc.patch(name, {"spec": {"suspend": False}})
    obj = wait_for(lambda: ((o := rc.get(name)) is not None and cond_is(o, "RayClusterProvisioned", "True")
                            and cond_is(o, "RayClusterSuspended", "False"), o),
                   timeouts.long, "RayClusterProvisioned=True and RayClusterSuspended=False after resume",
                   observe=observe)
    assert cond_is(obj, "HeadPodReady", "True"), ray.describe_conditions(obj)
    assert len(pods(k8s, namespace, name, "head")) == 1 and len(pods(k8s, namespace, name, "worker")) == 1, observe()
