"""src/rayconformance/operator/release_swap.py: the swap to an earlier operator release and back
(RayServiceOperatorUpgrade): when a rollout is complete, which objects go afterwards, and that the session's install is
always put back."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from kubernetes import client

from rayconformance.kube.objects import object_key
from rayconformance.operator import OperatorError
from rayconformance.operator import release_swap as op
from rayconformance.operator.install_section import InstallSection

NEW, OLD = "quay.io/kuberay/operator:v1.6.1", "quay.io/kuberay/operator:v1.5.1"


def pod(name: str, image: str, ready: bool = True, deleting: bool = False) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, deletion_timestamp="2026-01-01T00:00:00Z" if deleting else None),
        spec=client.V1PodSpec(containers=[client.V1Container(name="op", image=image)]),
        status=client.V1PodStatus(phase="Running", conditions=[client.V1PodCondition(
            type="Ready", status="True" if ready else "False")]))


def deployment(image: str = NEW, generation: int = 2, observed: int = 2, updated: int = 1, ready: int = 1,
               available: int = 1, replicas: int | None = 1) -> client.V1Deployment:
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name="kuberay-operator", generation=generation),
        spec=client.V1DeploymentSpec(replicas=replicas, selector=client.V1LabelSelector(match_labels={"a": "b"}),
                                     template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
                                         containers=[client.V1Container(name="op", image=image)]))),
        status=client.V1DeploymentStatus(observed_generation=observed, updated_replicas=updated,
                                         ready_replicas=ready, available_replicas=available))


def test_rollout_is_complete_only_with_every_pod_on_the_new_image_and_ready():
    ok, text = op.rollout_state(deployment(), [pod("new", NEW)], NEW)
    assert ok and "image quay.io/kuberay/operator:v1.6.1" in text and "new (quay.io/kuberay/operator:v1.6.1, Ready)" in text
    assert op.rollout_state(deployment(replicas=None), [pod("new", NEW)], NEW)[0]  # replicas defaults to 1


@pytest.mark.parametrize("dep, pods, why", [
    (deployment(observed=1), [pod("old", NEW)], "the newest generation is not observed yet"),
    (deployment(image=OLD), [pod("old", OLD)], "the Deployment still runs the old image"),
    (deployment(), [pod("old", OLD, deleting=True), pod("new", NEW)], "the old Pod is still terminating"),
    (deployment(), [pod("new", NEW, ready=False)], "the new Pod is not Ready"),
    (deployment(ready=0, available=0), [pod("new", NEW)], "the Deployment counts no ready replica"),
    (deployment(), [], "no Pod"),
])
def test_rollout_is_not_complete(dep, pods, why):
    ok, text = op.rollout_state(dep, pods, NEW)
    assert not ok, why
    assert "generation 2 observed" in text and "Pods:" in text


def obj(kind: str, name: str, ns: str | None = None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})},
            **({"spec": spec} if spec else {})}


def test_leftovers_are_what_the_earlier_release_created_and_the_session_lacks():
    session = [obj("CustomResourceDefinition", "rayclusters.ray.io"), obj("Deployment", "kuberay-operator", "ray-system")]
    created = [obj("ClusterRole", "old-only"), obj("Deployment", "kuberay-operator", "ray-system"),
               obj("ConfigMap", "old-only", "ray-system")]
    assert [object_key(o) for o in op.leftovers(created, session)] == [
        ("ClusterRole", None, "old-only"), ("ConfigMap", "ray-system", "old-only")]


def session_deployment(image: str = NEW) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kuberay-operator",
                                                                           "namespace": "ray-system"},
            "spec": {"template": {"spec": {"containers": [{"name": "op", "image": image}]}}}}


@pytest.fixture
def calls(monkeypatch):
    """The API-facing steps of the swap, recorded instead of run."""
    seen: list = []
    old_objects = [obj("ClusterRole", "old-only"), session_deployment(OLD)]
    monkeypatch.setattr(op, "prepared", lambda spec, profile, provider, base=None: seen.append(("render", spec.image))
                        or old_objects)
    def replace_all(objs, api, scale, created=None):
        seen.append(("replace", [o["metadata"]["name"] for o in objs]))
        made = [old_objects[0]] if objs is old_objects else []
        (created if created is not None else []).extend(made)
        return made
    monkeypatch.setattr(op, "replace_all", replace_all)
    monkeypatch.setattr(op, "delete_all", lambda objs, api, t: seen.append(("delete", [o["metadata"]["name"]
                                                                                       for o in objs])))
    monkeypatch.setattr(op, "wait_rolled_out", lambda api, ns, name, image, t: seen.append(("rolled out", image)))
    monkeypatch.setattr(op, "observe", lambda spec, objs, api: {"image": spec.image})
    return seen


def swap() -> op.ReleaseSwap:
    provider = NS(kubectl=lambda: "kubectl")
    session = [obj("CustomResourceDefinition", "rayservices.ray.io"), session_deployment()]
    return op.ReleaseSwap(None, provider, "local", InstallSection(image=NEW), session)


PREVIOUS = NS(name="kuberay-v1.5.1", install={"local": InstallSection(image=OLD)}, feature_gates={},
              path=Path("/p/x.yaml"))


def test_swap_installs_the_earlier_release_then_upgrades_and_removes_what_only_it_had(calls):
    s = swap()
    assert s.install_previous(PREVIOUS) == {"image": OLD}
    assert s.upgrade() == {"image": NEW}
    s.restore()  # already back: nothing more
    assert calls == [("render", OLD), ("replace", ["old-only", "kuberay-operator"]), ("rolled out", OLD),
                     ("replace", ["rayservices.ray.io", "kuberay-operator"]), ("delete", ["old-only"]),
                     ("rolled out", NEW)]


def test_restore_puts_the_session_install_back_when_the_test_stopped_midway(calls):
    s = swap()
    s.install_previous(PREVIOUS)
    calls.clear()
    s.restore()
    assert calls == [("replace", ["rayservices.ray.io", "kuberay-operator"]), ("delete", ["old-only"]),
                     ("rolled out", NEW)]
    calls.clear()
    swap().restore()  # never swapped: nothing to do
    assert calls == []


def test_an_earlier_release_without_an_install_for_the_provider_is_one_line(calls):
    with pytest.raises(OperatorError, match="profile kuberay-v1.5.1 has no install.local"):
        swap().install_previous(NS(name="kuberay-v1.5.1", install={"kind": InstallSection()}, feature_gates={},
                                   path=None))
