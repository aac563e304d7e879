"""Persistent volumes on the local test bed, as kind has them: Rancher's local-path-provisioner (built from the Go
module proxy into the tool cache) runs in the cluster as the Deployment of its own upstream manifest
(`deploy/local-path-storage.yaml` of the same module version), its StorageClass `local-path` is the default one.

Changed from upstream, as kind changes it: the StorageClass carries the default-class annotation, and the
provisioner's node path is `<state>/local-path` (removed with the state dir at teardown). The Deployment's image
`rancher/local-path-provisioner:<version>` runs the cached binary (image rule in the cluster definition); its helper
Pods (`busybox`) create and delete each volume's directory; the node agent binds the resulting hostPath PVs.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from .section import LocalSection
from .. import toolcache

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
_PATHS = {
    "Namespace": "/api/v1/namespaces", "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
}


class StorageError(RuntimeError):
    """The provisioner's manifest cannot be applied."""


def objects(manifest: str, data_dir: Path) -> list[dict]:
    """Upstream's objects with the local bed's two changes (default class, node path)."""
    out = []
    for obj in yaml.safe_load_all(manifest):
        if not obj:
            continue
        if obj["kind"] == "StorageClass":
            obj["metadata"].setdefault("annotations", {})[DEFAULT_CLASS] = "true"
        if obj["kind"] == "ConfigMap" and "config.json" in (obj.get("data") or {}):
            cfg = json.loads(obj["data"]["config.json"])
            cfg["nodePathMap"] = [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(data_dir)]}]
            obj["data"]["config.json"] = json.dumps(cfg, indent=2)
        if obj["kind"] not in _PATHS:
            raise StorageError(f"local-path-storage.yaml: unexpected kind {obj['kind']}")
        out.append(obj)
    return out


def start(defn: LocalSection, state: Path) -> None:
    """Apply the provisioner's objects (not waited for). A failure leaves the bed without a default StorageClass
    and says so on stderr: PVCs then stay Pending, nothing else depends on it."""
    try:
        _start(defn, state)
    except (StorageError, toolcache.ToolBuildError, OSError) as e:
        sys.stderr.write(f"rayconformance: no default StorageClass on {defn.name}: {e}\n")


def _start(defn: LocalSection, state: Path) -> None:
    from .nodeagent.kube import ApiError, Kube
    version = toolcache.versions()["LOCAL_PATH_PROVISIONER_VERSION"]
    d = toolcache.ensure("localpath", version, "deploy/local-path-storage.yaml")
    data_dir = state / "local-path"
    data_dir.mkdir(parents=True, exist_ok=True)
    kube = Kube(state / "admin.kubeconfig")
    for obj in objects((d / "deploy" / "local-path-storage.yaml").read_text(), data_dir):
        path = _PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
        try:
            kube.create(path, obj)
        except ApiError as e:
            if e.status != 409:
                raise StorageError(f"creating {obj['kind']} {obj['metadata']['name']}: {e}") from None
