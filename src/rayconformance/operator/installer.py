"""Installing the profile's operator on the run's cluster, waiting until it is ready, observing what runs, and
uninstalling it. What was installed is written to the run directory (`INSTALLED_FILE`), where the uninstall and
the release swap read it back."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.testing.waiting import wait_until
from rayconformance.kube.client import api_client
from rayconformance.kube.objects import DELETE_TIMEOUT, create_all, delete_all

from . import OperatorError, helm, operator_errors, source_tree
from .install_section import InstallSection, built_image
from .render import render

INSTALLED_FILE = "operator-install.yaml"
KEPT_CRDS_FILE = "operator-kept-crds.yaml"  # CRDs the cluster had before the install: the uninstall leaves them


def install(profile, cluster, run_dir: Path, provider, scale: float = 1.0, tree: str | None = None,
            tree_key=None) -> dict:
    """Install the profile's operator on the cluster (its manifests, or its Helm chart with `helm`), wait until it
    is ready, return what is observed running. The provider renders kustomize directories (its kubectl) and
    prepares the operator's images; a tree source is built from `tree` (--operator-tree). Every wait is
    multiplied by `scale` (--timeout-scale). The section's `submitterImage` (KubeRay's light-weight RayJob
    submitter of the same build) is prepared too, and observed as `submitterImage` (under the build's tag).
    `tree_key` (source_tree.TreeKey), when given, is the tree as the run read it at start: a tree changed since is
    refused, so the run reports the operator it built."""
    spec, base, facts = section(profile, cluster.provider, tree, tree_key)
    api = api_client(cluster.kubeconfig)
    run_dir.mkdir(parents=True, exist_ok=True)
    if spec.helm:
        with operator_errors():
            extra = (render(InstallSection(manifests=spec.manifests, namespace=spec.namespace), {}, base,
                            provider.kubectl()) if spec.manifests else [])
            objects = helm.install_release(spec, dict(profile.feature_gates), base, cluster.kubeconfig, run_dir, api,
                                           extra, scale, f"install.{cluster.provider}",
                                           load_images=provider.prepare_images)
        (run_dir / INSTALLED_FILE).write_text(yaml.safe_dump_all(objects, sort_keys=False))  # the release swap's
    else:
        objects = prepared(spec, profile, provider, base)
        (run_dir / INSTALLED_FILE).write_text(yaml.safe_dump_all(objects, sort_keys=False))
        with operator_errors():
            (run_dir / KEPT_CRDS_FILE).write_text(yaml.safe_dump(present_crds(objects, api)))
            create_all(objects, api, scale)
    if submitter := built_image(spec, spec.submitter_image, profile.path.parent, cluster.provider):
        with operator_errors():
            provider.prepare_images([{"kind": "Pod", "spec": {"containers": [{"image": submitter}]}}])
        facts["submitterImage"] = submitter
    wait_ready(spec, objects, api, scale)
    return {**observe(spec, objects, api), **facts}


def section(profile, provider: str, tree: str | None = None, expected_key=None) -> tuple[InstallSection, Path, dict]:
    """The profile's install section for `provider` (typed and checked when the profile loaded), with a source
    tree's build resolved; the directory its manifests or chart are relative to (the profile's own, or the tree's
    build: source_tree.py); and what the report says of the operator's source and install method."""
    spec = profile.install[provider]
    facts = {"installMethod": "helm" if spec.helm else "manifests"}
    with operator_errors():
        resolved = source_tree.resolve_install(spec, provider, profile.name, tree)
    if resolved is None:
        return spec, profile.path.parent, facts
    base, spec, key = resolved
    if expected_key is not None and (key.commit, key.dirty) != (expected_key.commit, expected_key.dirty):
        raise OperatorError(f"operator tree {key.tree} changed after the run started (build {expected_key.tag} "
                            f"then, {key.tag} now): leave the tree alone during a run, or start the run again")
    facts["source"] = {"repository": spec.source.repository, "ref": spec.source.ref, "commit": key.commit,
                       "build": key.tag, "modified": key.dirty is not None}
    return replace(spec, source=None), base, facts


def prepared(spec: InstallSection, profile, provider, base: Path | None = None) -> list[dict]:
    """The objects of `spec` (an install section of `profile`), rendered with the provider's kubectl, their
    images prepared on the cluster by the provider."""
    with operator_errors():
        objects = render(spec, dict(profile.feature_gates), base or profile.path.parent, provider.kubectl())
        provider.prepare_images(objects)
    return objects


def installed_objects(run_dir: Path) -> list[dict] | None:
    """The objects `install` created, read back from the run directory; None when it installed nothing."""
    path = run_dir / INSTALLED_FILE
    return [d for d in yaml.safe_load_all(path.read_text()) if d] if path.is_file() else None


def uninstall(profile, cluster, run_dir: Path, scale: float = 1.0) -> None:
    """Delete what `install` created (read back from the run directory; a Helm release through Helm)."""
    if cluster is None:
        return
    with operator_errors():
        helm.uninstall_release(run_dir, api_client(cluster.kubeconfig), DELETE_TIMEOUT * scale)
    objects = installed_objects(run_dir)
    if objects is None:
        return
    kept_file = run_dir / KEPT_CRDS_FILE
    kept = set(yaml.safe_load(kept_file.read_text()) or []) if kept_file.is_file() else set()
    objects = [o for o in objects if not (o["kind"] == "CustomResourceDefinition" and o["metadata"]["name"] in kept)]
    with operator_errors():
        delete_all(objects, api_client(cluster.kubeconfig), DELETE_TIMEOUT * scale)


def present_crds(objects: list[dict], api: client.ApiClient) -> list[str]:
    """The names of the CRDs among `objects` that the cluster already serves (e.g. the Gateway API's on an
    existing cluster): the install replaces them, the uninstall must not take them from their owner."""
    names = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    if not names:
        return []
    served = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    return sorted(c.metadata.name for c in served if c.metadata.name in names and not c.metadata.deletion_timestamp)


def deployment_of(spec: InstallSection, objects: list[dict]) -> dict:
    """The operator's Deployment among the install's objects: the one `spec` names, else the first."""
    deps = [o for o in objects if o["kind"] == "Deployment"]
    if not deps:
        raise OperatorError("the operator's manifests contain no Deployment; set `install.<provider>.deployment`")
    return next((d for d in deps if d["metadata"]["name"] == spec.deployment), deps[0])


def ready_timeout(spec: InstallSection, scale: float) -> float:
    """How long the operator of an install section may take to become ready, in seconds."""
    return spec.ready_timeout_seconds * scale


def wait_ready(spec: InstallSection, objects: list[dict], api: client.ApiClient, scale: float = 1.0) -> None:
    """Wait until the operator's Deployment is Available with a ready replica; OperatorError naming its state."""
    dep = deployment_of(spec, objects)
    ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
    apps = client.AppsV1Api(api)
    timeout = ready_timeout(spec, scale)
    last = [(False, "not found")]

    def get() -> tuple[bool, str]:
        last[0] = _availability(apps, ns, name)
        return last[0]

    try:
        wait_until(get, lambda state: state[0], f"operator Deployment {ns}/{name} to be Available", timeout)
    except AssertionError:
        raise OperatorError(f"operator Deployment {ns}/{name} not Available after {timeout:.0f}s ({last[0][1]}); "
                            f"see the operator Pod's log in the report's diagnostics") from None


def _availability(apps: client.AppsV1Api, ns: str, name: str) -> tuple[bool, str]:
    """Whether the Deployment is Available with a ready replica, and what was observed, in short."""
    try:
        d = apps.read_namespaced_deployment(name, ns)
    except ApiException as e:
        return False, f"HTTP {e.status}"
    avail = {c.type: c for c in d.status.conditions or []}.get("Available")
    ready = d.status.ready_replicas or 0
    return (avail is not None and avail.status == "True" and ready >= 1,
            f"Available={avail.status if avail else 'unset'}, readyReplicas={ready}")


def observe(spec: InstallSection, objects: list[dict], api: client.ApiClient) -> dict:
    """What runs in the cluster: the Deployment's image, args and feature gates as read back from the API."""
    dep = deployment_of(spec, objects)
    d = client.AppsV1Api(api).read_namespaced_deployment(dep["metadata"]["name"], dep["metadata"]["namespace"])
    c = d.spec.template.spec.containers[0]
    gates: dict[str, bool] = {}
    for a in c.args or []:
        if a.startswith("--feature-gates="):
            for kv in a.split("=", 1)[1].split(","):
                k, _, v = kv.partition("=")
                gates[k] = v.lower() == "true"
    image = c.image
    return {"namespace": d.metadata.namespace, "deployment": d.metadata.name, "image": image,
            "version": image.rsplit(":", 1)[-1] if ":" in image else "", "args": list(c.args or []),
            "featureGates": gates}
