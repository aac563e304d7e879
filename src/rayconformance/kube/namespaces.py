"""Per-test namespaces: named `rc-<test short name>-<random>`, labelled with the run id and the test, deleted
after the test (waiting until they are gone), and swept by run id at the end of the session. The sweep releases
what would otherwise stay forever: ray.io objects whose finalizers the operator did not remove."""
from __future__ import annotations

import re
import secrets
import string

from kubernetes import client
from kubernetes.client.rest import ApiException

from rayconformance.testing.waiting import wait_for

RUN_LABEL = "rayconformance.io/run"
TEST_LABEL = "rayconformance.io/test"
SUFFIX_LEN = 5


def dns_label(text: str, max_len: int = 63) -> str:
    """Lower-case `text` into a Kubernetes DNS-1123 label (also a valid label value and directory name)."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return label[:max_len].rstrip("-") or "x"


def namespace_name(short_name: str) -> str:
    suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(SUFFIX_LEN))
    return f"rc-{dns_label(short_name, 63 - len('rc-') - 1 - SUFFIX_LEN)}-{suffix}"


def create(core: client.CoreV1Api, short_name: str, run_id: str) -> str:
    name = namespace_name(short_name)
    labels = {RUN_LABEL: run_id, TEST_LABEL: dns_label(short_name)}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels)))
    return name


def _state(core: client.CoreV1Api, name: str) -> dict | None:
    try:
        ns = core.read_namespace(name)
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    return {"phase": ns.status.phase,
            "conditions": [f"{c.type}: {c.message}" for c in ns.status.conditions or [] if c.status == "True"]}


def delete(core: client.CoreV1Api, name: str, timeout: float, interval: float = 1.0) -> None:
    """Delete a namespace and wait until it is gone; AssertionError (with what is still there) after `timeout`."""
    try:
        core.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise
    wait_for(lambda: ((s := _state(core, name)) is None, s), timeout, f"namespace {name} to be deleted",
             interval=interval)


def sweep(core: client.CoreV1Api, run_id: str, timeout: float, interval: float = 1.0) -> None:
    """Delete every namespace labelled with this run and wait until they are gone."""
    selector = f"{RUN_LABEL}={run_id}"

    def left() -> list[str]:
        return [ns.metadata.name for ns in core.list_namespace(label_selector=selector).items]

    for name in left():
        try:
            core.delete_namespace(name)
        except ApiException as e:
            if e.status != 404:
                raise
    wait_for(lambda: (not (names := left()), names), timeout, f"namespaces labelled {selector} to be deleted",
             interval=interval)


RAY_PLURALS = ("rayjobs", "rayservices", "rayclusters")


def release_finalizers(api: client.ApiClient, run_id: str) -> list[str]:
    """Remove the finalizers of ray.io objects left in this run's namespaces; returns what was released."""
    core, co = client.CoreV1Api(api), client.CustomObjectsApi(api)
    released = []
    for ns in core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}").items:
        for plural in RAY_PLURALS:
            try:
                items = co.list_namespaced_custom_object("ray.io", "v1", ns.metadata.name, plural)["items"]
            except ApiException:  # the kind is not served (any more)
                continue
            for o in items:
                meta = o["metadata"]
                if not meta.get("finalizers"):
                    continue
                try:
                    co.patch_namespaced_custom_object("ray.io", "v1", meta["namespace"], plural, meta["name"],
                                                      {"metadata": {"finalizers": None}})
                except ApiException as e:
                    if e.status in (404, 409):  # finalized and gone meanwhile, or changed: the next sweep sees it
                        continue
                    raise
                released.append(f"{o['kind']} {meta['namespace']}/{meta['name']} ({', '.join(meta['finalizers'])})")
    return released


RELEASED_SWEEP_SECONDS = 60.0  # the namespace controller retries a namespace blocked by finalizers every ~8 s


def sweep_releasing(api: client.ApiClient, run_id: str, timeout: float) -> list[str]:
    """`sweep`; if namespaces are still there after `timeout`, release their ray.io finalizers and sweep again.
    Returns what had to be released (for a warning: the operator left those finalizers)."""
    core = client.CoreV1Api(api)
    try:
        sweep(core, run_id, timeout)
        return []
    except AssertionError:
        released = release_finalizers(api, run_id)
        if not released:
            raise
        try:
            sweep(core, run_id, max(timeout, RELEASED_SWEEP_SECONDS))
        except AssertionError as e:
            raise AssertionError(f"{e} (after removing the finalizers of {'; '.join(released)})") from None
        return released
