"""Failure diagnostics: what a failed test's namespace looked like, saved before the namespace is deleted.

`collect()` writes into `reports/<run>/diagnostics/<test>/`: the ray.io/v1 objects, Pods, Services, Jobs and
Events as YAML, every container's log (and the previous one after a restart), and the operator's log. No
Secret value is ever written: objects go through `redact()`, and every text written goes through `scrub()`,
which replaces the values of the namespace's Secrets wherever they appear (e.g. echoed in a log).
"""
from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Callable

import yaml

REDACTED = "<redacted>"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MIN_SCRUBBED_LEN = 4  # shorter secret values would redact ordinary words


def redact(obj):
    """A copy of `obj` (an API object as a dict, or any nesting of them) without Secret values: a Secret's
    data/stringData values and last-applied annotation, and the value of any env var taken from a Secret."""
    obj = copy.deepcopy(obj)
    _redact_in_place(obj)
    return obj


def _redact_in_place(obj) -> None:
    if isinstance(obj, list):
        for x in obj:
            _redact_in_place(x)
        return
    if not isinstance(obj, dict):
        return
    if obj.get("kind") == "Secret":
        for key in ("data", "stringData"):
            if isinstance(obj.get(key), dict):
                obj[key] = {k: REDACTED for k in obj[key]}
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if LAST_APPLIED in annotations:
            annotations[LAST_APPLIED] = REDACTED
    if "secretKeyRef" in (obj.get("valueFrom") or {}) and obj.get("value") is not None:
        obj["value"] = REDACTED
    for v in obj.values():
        _redact_in_place(v)


def secret_values(secrets: list[dict]) -> set[str]:
    """The (decoded) values of these Secrets that are long enough to scrub from text."""
    values = set()
    for s in secrets:
        for v in (s.get("data") or {}).values():
            values.add(base64.b64decode(v).decode("utf-8", "replace"))
        values.update((s.get("stringData") or {}).values())
    return {v.strip() for v in values if len(v.strip()) >= MIN_SCRUBBED_LEN}  # `echo pw | base64` adds a newline


def scrub(text: str, values: set[str]) -> str:
    for v in sorted(values, key=len, reverse=True):
        text = text.replace(v, REDACTED)
    return text


def to_yaml(kind: str, items: list[dict]) -> str:
    """Objects of one kind as a readable multi-document YAML (list items carry no `kind`, so it is set)."""
    docs = [redact({"kind": kind, **item}) for item in items]
    return yaml.safe_dump_all(docs, sort_keys=False) if docs else ""


GATEWAY_API = ("gateway.networking.k8s.io", "v1", ("Gateway", "HTTPRoute"))


def collect(api, namespace: str, out_dir: Path, *, operator=None, since_seconds: int | None = None,
            also_logs: tuple = (), logs: bool = True) -> list[str]:
    """Save the diagnostics of `namespace` under `out_dir`; `operator` is (namespace, Deployment name) of the
    operator, whose logs since `since_seconds` ago are saved too, and so are the logs of the Pods of each
    (namespace, label selector, directory) of `also_logs` (e.g. the Gateway implementation the test used). Without
    `logs`, the objects and events alone. Returns what could not be collected (also written to errors.txt)."""
    from kubernetes import client

    from rayconformance.kube import client as kube

    core, batch, apps = kube.core(api), client.BatchV1Api(api), client.AppsV1Api(api)
    errors: list[str] = []
    secrets: set[str] = set()

    def step(what: str, produce: Callable[[], dict[str, str]]) -> None:
        """Run one collection step; `produce` returns file name -> text, written scrubbed."""
        try:
            for name, text in produce().items():
                path = out_dir / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(scrub(text, secrets))
        except Exception as e:  # noqa: BLE001 - one missing piece must not lose the rest
            errors.append(f"{what}: {type(e).__name__}: {' '.join(str(e).split())[:300]}")

    def remember_secrets() -> dict:
        secrets.update(secret_values([kube.to_dict(api, s) for s in core.list_namespaced_secret(namespace).items]))
        return {}

    def listing(kind: str, list_fn) -> Callable[[], dict[str, str]]:
        return lambda: {f"{kind.lower()}s.yaml": to_yaml(kind, [kube.to_dict(api, o)
                                                                 for o in list_fn(namespace).items])}

    def pod_logs(pods, directory: str, since: int | None = None) -> None:
        for pod in pods:
            ns, name = pod.metadata.namespace, pod.metadata.name
            for cs in (pod.status.init_container_statuses or []) + (pod.status.container_statuses or []):
                base = f"{directory}/{name}.{cs.name}"
                step(f"log of {base}", lambda: {
                    f"{base}.log": core.read_namespaced_pod_log(name, ns, container=cs.name, since_seconds=since)})
                if cs.restart_count:
                    step(f"previous log of {base}", lambda: {
                        f"{base}.previous.log": core.read_namespaced_pod_log(name, ns, container=cs.name,
                                                                             previous=True)})

    step("secrets (to scrub their values)", remember_secrets)
    can_save_logs = not errors  # logs are saved only when they can be scrubbed
    step("ray.io objects", lambda: {f"{kube.RAY_PLURALS[kind]}.yaml": to_yaml(kind, items)
                                    for kind, items in kube.ray_objects(api, namespace).items()})
    step("pods", listing("Pod", core.list_namespaced_pod))
    step("services", listing("Service", core.list_namespaced_service))
    step("jobs", listing("Job", batch.list_namespaced_job))
    step("events", listing("Event", core.list_namespaced_event))
    step("endpointslices", listing("EndpointSlice", client.DiscoveryV1Api(api).list_namespaced_endpoint_slice))

    def gateway_objects() -> dict[str, str]:  # Gateways and HTTPRoutes (the incremental upgrade's), if served
        group, version, kinds = GATEWAY_API
        found = {}
        for kind in kinds:
            try:
                items = client.CustomObjectsApi(api).list_namespaced_custom_object(
                    group, version, namespace, kind.lower() + "s")["items"]
            except client.ApiException as e:
                if e.status == 404:  # no Gateway API in this cluster
                    continue
                raise
            if items:
                found[f"{kind.lower()}s.yaml"] = to_yaml(kind, items)
        return found
    step("gateway api objects", gateway_objects)
    if not logs:
        operator, also_logs = None, ()
    elif not can_save_logs:
        errors.append("logs: not saved, because the namespace's Secrets could not be read to scrub them")
    else:
        step("pod logs", lambda: pod_logs(core.list_namespaced_pod(namespace).items, "logs") or {})
    if operator is not None and can_save_logs:
        def operator_logs() -> dict:
            op_namespace, deployment = operator
            selector = apps.read_namespaced_deployment(deployment, op_namespace).spec.selector
            labels = ",".join(f"{k}={v}" for k, v in (selector.match_labels or {}).items())
            pod_logs(core.list_namespaced_pod(op_namespace, label_selector=labels).items, "operator",
                     since_seconds)
            return {}
        step("operator logs", operator_logs)
    for other_namespace, selector, directory in also_logs if can_save_logs else ():
        step(f"logs of {selector} in {other_namespace}", lambda: pod_logs(
            core.list_namespaced_pod(other_namespace, label_selector=selector).items, directory, since_seconds) or {})
    if errors:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "errors.txt").write_text(scrub("\n".join(errors) + "\n", secrets))
    return errors
