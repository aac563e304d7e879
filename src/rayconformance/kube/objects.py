"""Creating, replacing and deleting sets of plain objects (manifests as dicts) with the Kubernetes API.

`create_all` creates namespaces and CRDs first and waits for the CRDs to be Established before the rest;
`replace_all` does the same over what is there, as `kubectl replace` would, and says what it created;
`delete_all` deletes CRDs last and waits for namespaces and CRDs to go. `create`, never client-side apply:
Ray CRDs exceed the last-applied annotation limit. Failures are an ObjectsError, one line.
"""
from __future__ import annotations

import time

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.utils import create_from_dict

from rayconformance.errors import one_line
from rayconformance.testing.waiting import wait_until

CRD_TIMEOUT = 60.0  # seconds, before --timeout-scale, as is the one below
DELETE_TIMEOUT = 120.0
INTERVAL = 0.5  # seconds between two looks while waiting for CRDs and namespaces


class ObjectsError(RuntimeError):
    """Objects could not be created, replaced or deleted, or never got where they should; one line for the user."""


def object_key(obj: dict) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of a manifest."""
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def _wait(get, holds, description: str, timeout: float, **kw) -> None:
    """`wait_until`, failing with an ObjectsError (a one-line error for the user) instead of an AssertionError."""
    try:
        wait_until(get, holds, description, timeout, interval=INTERVAL, **kw)
    except AssertionError as e:
        raise ObjectsError(one_line(e)) from None


def _read_or_none(read, name: str):
    """`read(name)`, or None when there is no such object (404); any other API error propagates."""
    try:
        return read(name)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _read_crd(ext: client.ApiextensionsV1Api, name: str):
    return _read_or_none(ext.read_custom_resource_definition, name)


def _established(crd) -> bool:
    conds = (crd.status.conditions or []) if crd is not None and crd.status is not None else []
    return any(c.type == "Established" and c.status == "True" for c in conds)


def _wait_established(ext: client.ApiextensionsV1Api, names: list[str], timeout: float) -> None:
    _wait(lambda: [n for n in names if not _established(_read_crd(ext, n))], lambda waiting: not waiting,
          f"CRD(s) {', '.join(names)} to be Established", timeout)


def _create_or_replace_crd_once(ext: client.ApiextensionsV1Api, obj: dict) -> bool:
    """Create the CRD, or replace the one there; False (nothing done) while the one there is being deleted."""
    name = obj["metadata"]["name"]
    try:
        ext.create_custom_resource_definition(obj)
        return True
    except ApiException as e:
        if e.status != 409:
            raise
    cur = _read_crd(ext, name)
    if cur is None or cur.metadata.deletion_timestamp is not None:  # being deleted (or just gone): look again
        return False
    obj["metadata"]["resourceVersion"] = cur.metadata.resource_version
    try:
        ext.replace_custom_resource_definition(name, obj)
    finally:
        obj["metadata"].pop("resourceVersion")
    return True


def _create_or_replace_crd(ext: client.ApiextensionsV1Api, obj: dict, timeout: float) -> None:
    """Create (or replace) a CRD. A CRD still being deleted (e.g. by an earlier uninstall) is waited out first:
    replacing it would be lost when its deletion completes. Any other API error ends the wait at once."""
    name = obj["metadata"]["name"]

    def attempt() -> bool | ApiException:
        try:
            return _create_or_replace_crd_once(ext, obj)
        except ApiException as e:
            return e

    try:
        outcome = wait_until(attempt, lambda done: done is not False, f"CRD {name} to be created", timeout)
    except AssertionError:
        raise ObjectsError(f"CRD {name} is still being deleted after {timeout:.0f}s (custom resources "
                           f"with finalizers left by an earlier run?); delete them and retry") from None
    if isinstance(outcome, ApiException):
        raise outcome


def _create_or_replace(api: client.ApiClient, obj: dict, crd_timeout: float) -> None:
    if obj["kind"] == "CustomResourceDefinition":
        _create_or_replace_crd(client.ApiextensionsV1Api(api), obj, crd_timeout)
        return
    try:
        create_from_dict(api, obj)
    except Exception as e:  # FailToCreateError wraps the ApiExceptions
        excs = getattr(e, "api_exceptions", [e])
        if not all(getattr(x, "status", None) == 409 for x in excs):
            raise


def _create(api: client.ApiClient, obj: dict, crd_timeout: float) -> None:
    try:
        _create_or_replace(api, obj, crd_timeout)
    except Exception as e:
        raise ObjectsError(f"creating {obj['kind']} {obj['metadata'].get('name')} failed: "
                           f"{str(e).splitlines()[0][:300]}") from None


def create_all(objects: list[dict], api: client.ApiClient, scale: float = 1.0) -> None:
    """Create (or replace) the objects: namespaces and CRDs, then (once the CRDs are Established) the rest."""
    crd_timeout = CRD_TIMEOUT * scale
    first = [o for o in objects if o["kind"] == "Namespace"] + \
        [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    for obj in first:
        _create(api, obj, crd_timeout)
    crds = [o["metadata"]["name"] for o in first if o["kind"] == "CustomResourceDefinition"]
    if crds:
        _wait_established(client.ApiextensionsV1Api(api), crds, crd_timeout)
    for obj in objects:
        if obj["kind"] not in ("Namespace", "CustomResourceDefinition"):
            _create(api, obj, crd_timeout)


def replace_all(objects: list[dict], api: client.ApiClient, scale: float = 1.0,
                created: list[dict] | None = None) -> list[dict]:
    """Install `objects` over what is there, as a user upgrading with `kubectl replace`/`create` would: namespaces
    created if missing, CRDs replaced (created if missing) until Established, then every other object replaced
    (created if missing). Returns the objects that did not exist before, also appended to `created` as they
    are made (so a caller knows them when a later one fails)."""
    ext, dyn, core = client.ApiextensionsV1Api(api), _dynamic(api), client.CoreV1Api(api)
    crd_timeout = CRD_TIMEOUT * scale
    created = [] if created is None else created
    start = len(created)
    for o in (o for o in objects if o["kind"] == "Namespace"):
        if _read_or_none(core.read_namespace, o["metadata"]["name"]) is None:
            _create(api, o, crd_timeout)
            created.append(o)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    for o in crds:
        if _read_crd(ext, o["metadata"]["name"]) is None:
            created.append(o)
        _create(api, o, crd_timeout)  # creates, or replaces the one there
    if crds:
        _wait_established(ext, [o["metadata"]["name"] for o in crds], crd_timeout)
    for o in objects:
        if o["kind"] not in ("Namespace", "CustomResourceDefinition") and _replace(dyn, o):
            created.append(o)
    return created[start:]


def _replace(dyn, obj: dict) -> bool:
    """Replace the object (PUT, at its current resourceVersion), or create it; True if it was created."""
    from kubernetes.dynamic.exceptions import NotFoundError

    meta = obj["metadata"]
    try:
        res = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        try:
            current = res.get(name=meta["name"], namespace=meta.get("namespace"))
        except NotFoundError:
            res.create(body=obj, namespace=meta.get("namespace"))
            return True
        body = {**obj, "metadata": {**meta, "resourceVersion": current.metadata.resourceVersion}}
        res.replace(body=body, namespace=meta.get("namespace"))
        return False
    except Exception as e:  # noqa: BLE001 - any API error is one line for the user
        raise ObjectsError(f"replacing {obj['kind']} {meta.get('namespace') or ''}/{meta['name']} failed: "
                           f"{one_line(e)[:300]}") from None


def delete_all(objects: list[dict], api: client.ApiClient, timeout: float = DELETE_TIMEOUT) -> None:
    """Delete the objects (CRDs last, so the operator can run finalizers first), and wait for namespaces to go."""
    core = client.CoreV1Api(api)
    namespaced = [o for o in objects if o["metadata"].get("namespace")]
    cluster_scoped = [o for o in objects if not o["metadata"].get("namespace") and o["kind"] != "Namespace"]
    dyn = _dynamic(api)
    for o in namespaced + [o for o in cluster_scoped if o["kind"] != "CustomResourceDefinition"]:
        _delete(dyn, o)
    for o in objects:
        if o["kind"] == "Namespace":
            try:
                core.delete_namespace(o["metadata"]["name"])
            except ApiException as e:
                if e.status != 404:
                    raise
    for o in cluster_scoped:
        if o["kind"] == "CustomResourceDefinition":
            _delete(dyn, o)
    ext = client.ApiextensionsV1Api(api)
    read = {"Namespace": core.read_namespace, "CustomResourceDefinition": ext.read_custom_resource_definition}
    deadline = time.monotonic() + timeout
    for o in objects:
        if o["kind"] in read:
            kind, name = o["kind"], o["metadata"]["name"]
            _wait(lambda: _read_or_none(read[kind], name) is None, bool,
                  f"{kind} {name} to go (objects with finalizers the removed operator can no longer handle?)",
                  max(deadline - time.monotonic(), 0.1), render=lambda _: _still_there(read[kind], name))


def _still_there(read, name: str) -> str:
    """Why an object being deleted is still there: its finalizers and its Terminating condition, if any."""
    obj = _read_or_none(read, name)
    if obj is None:
        return "gone"
    parts = [f"finalizers {obj.metadata.finalizers}" if obj.metadata.finalizers else "no finalizers"]
    for c in (obj.status.conditions or []) if obj.status is not None else []:
        if c.type in ("Terminating", "NamespaceDeletionContentFailure", "NamespaceContentRemaining",
                      "NamespaceFinalizersRemaining") and c.status == "True":
            parts.append(f"{c.type}: {c.reason}: {c.message}")
    return "still there, " + "; ".join(parts)


def _dynamic(api: client.ApiClient):
    from kubernetes.dynamic import DynamicClient
    return DynamicClient(api)


def _delete(dyn, obj: dict) -> None:
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError
    try:
        res = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        res.delete(name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
    except (NotFoundError, ResourceNotFoundError):  # gone, or its kind is not served (CRD already removed)
        pass
    except ApiException as e:
        if e.status != 404:
            raise
