"""Pod volumes in the Pod's state dir: emptyDir, configMap, secret, downwardAPI, projected (with TokenRequest
service-account tokens), hostPath; persistentVolumeClaim and ephemeral volumes bound to hostPath or local PVs (the
PV's directory itself).

API-backed volumes use the kubelet's atomic-writer layout: files live in a timestamped `..<ts>` directory,
`..data` links to it, and each top-level name links through `..data`, so an update swaps one symlink. They are
re-synced every minute (`refresh`); service-account tokens are renewed when older than 80% of their TTL or 24 h.
"""
from __future__ import annotations

import base64
import datetime as dt
import logging
import os
import shutil
import threading
import time
from pathlib import Path

from kubernetes.utils.quantity import parse_quantity

from . import env as envmod
from .kube import ApiError, Kube

log = logging.getLogger("nodeagent.volumes")


class VolumeError(RuntimeError):
    """A volume cannot be set up yet (FailedMount): the Pod waits in ContainerCreating and retries."""


class Objects(envmod.Resolver):
    """Reads of API objects the Pod refers to."""

    def __init__(self, kube: Kube):
        self.kube = kube

    def configmap(self, namespace: str, name: str) -> dict | None:
        return self.kube.get_or_none(f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    def secret(self, namespace: str, name: str) -> dict | None:
        return self.kube.get_or_none(f"/api/v1/namespaces/{namespace}/secrets/{name}")

    def services(self, namespace: str) -> list[dict]:
        return self.kube.get(f"/api/v1/namespaces/{namespace}/services").get("items", [])

    def pvc(self, namespace: str, name: str) -> dict | None:
        return self.kube.get_or_none(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")

    def pv(self, name: str) -> dict | None:
        return self.kube.get_or_none(f"/api/v1/persistentvolumes/{name}")

    def kubernetes_service(self) -> dict | None:
        return self.kube.get_or_none("/api/v1/namespaces/default/services/kubernetes")


class Tokens:
    """Service-account tokens from TokenRequest, cached per (namespace, sa, pod uid, audience, ttl)."""

    def __init__(self, kube: Kube):
        self.kube = kube
        self._lock = threading.Lock()
        self._cache: dict[tuple, tuple[str, float, float]] = {}  # key -> (token, issued, expires) epoch secs

    def get(self, pod: dict, audience: str | None, ttl: int) -> str:
        md = pod["metadata"]
        sa = pod["spec"].get("serviceAccountName") or "default"
        key = (md["namespace"], sa, md["uid"], audience, ttl)
        now = time.time()
        with self._lock:
            hit = self._cache.get(key)
        if hit and not self.needs_refresh(hit[1], hit[2], now):
            return hit[0]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": ttl,
                         "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]}}}
        if audience:
            body["spec"]["audiences"] = [audience]
        try:
            r = self.kube.create(f"/api/v1/namespaces/{md['namespace']}/serviceaccounts/{sa}/token", body)
        except ApiError as e:
            raise VolumeError(f"failed to fetch token: {e}") from None
        exp = dt.datetime.fromisoformat(r["status"]["expirationTimestamp"].replace("Z", "+00:00")).timestamp()
        with self._lock:
            self._cache[key] = (r["status"]["token"], now, exp)
        return r["status"]["token"]

    @staticmethod
    def needs_refresh(issued: float, expires: float, now: float) -> bool:
        return now > issued + 0.8 * (expires - issued) or now > issued + 24 * 3600

    def forget(self, uid: str) -> None:
        with self._lock:
            for k in [k for k in self._cache if k[2] == uid]:
                del self._cache[k]


def write_atomic_dir(root: Path, payload: dict[str, tuple[bytes, int]]) -> bool:
    """Atomic-writer update of `root`; returns True when the content changed."""
    root.mkdir(parents=True, exist_ok=True)
    data_link = root / "..data"
    if data_link.is_symlink():
        cur = root / os.readlink(data_link)
        same = True
        existing = {str(p.relative_to(cur)) for p in cur.rglob("*") if p.is_file()}
        if existing != set(payload):
            same = False
        else:
            for rel, (content, mode) in payload.items():
                f = cur / rel
                if f.read_bytes() != content or (f.stat().st_mode & 0o777) != mode:
                    same = False
                    break
        if same:
            return False
    ts = root / f"..{dt.datetime.now().strftime('%Y_%m_%d_%H_%M_%S.%f')}"
    ts.mkdir()
    for rel, (content, mode) in payload.items():
        f = ts / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content)
        f.chmod(mode)
    old = root / os.readlink(data_link) if data_link.is_symlink() else None
    tmp = root / "..data_tmp"
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(ts.name)
    os.replace(tmp, data_link)
    tops = {rel.split("/", 1)[0] for rel in payload}
    for top in tops:
        link = root / top
        if not link.is_symlink():
            link.symlink_to(f"..data/{top}")
    for entry in root.iterdir():
        if entry.is_symlink() and not entry.name.startswith("..") and entry.name not in tops:
            entry.unlink()
    if old is not None and old.exists():
        shutil.rmtree(old, ignore_errors=True)
    return True


def _mode(item: dict, default: int | None) -> int:
    m = item.get("mode")
    return int(m if m is not None else (default if default is not None else 0o644))


def _kv_payload(kind: str, obj: dict | None, ref_name: str, items: list | None, optional: bool,
                default_mode: int | None) -> dict[str, tuple[bytes, int]]:
    if obj is None:
        if optional:
            return {}
        raise VolumeError(f'{kind} "{ref_name}" not found')
    data: dict[str, bytes] = {}
    if kind == "secret":
        data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    else:
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    out = {}
    if items:
        for it in items:
            if it["key"] not in data:
                if optional:
                    continue
                raise VolumeError(f'configuration for {kind} "{ref_name}": key "{it["key"]}" not found')
            out[it["path"]] = (data[it["key"]], _mode(it, default_mode))
    else:
        out = {k: (v, _mode({}, default_mode)) for k, v in data.items()}
    return out


class Volumes:
    def __init__(self, kube: Kube, tokens: Tokens):
        self.objects = Objects(kube)
        self.tokens = tokens

    @staticmethod
    def memory_volumes(pod: dict, pod_dir: Path) -> list[dict]:
        out = []
        limit = pod_memory_limit(pod)
        for v in pod["spec"].get("volumes") or []:
            ed = v.get("emptyDir")
            if ed is not None and ed.get("medium") == "Memory":
                size = int(parse_quantity(ed["sizeLimit"])) if ed.get("sizeLimit") else limit
                out.append({"path": str(pod_dir / "volumes" / v["name"]), "size": size})
        return out

    def setup(self, pod: dict, pod_dir: Path, pod_ip: str | None, host_ip: str | None,
              allocatable: dict) -> dict[str, str]:
        """Create or refresh every volume; return volume name -> host path to bind."""
        out = {}
        for v in pod["spec"].get("volumes") or []:
            out[v["name"]] = self._one(pod, pod_dir, v, pod_ip, host_ip, allocatable)
        return out

    def _one(self, pod: dict, pod_dir: Path, v: dict, pod_ip, host_ip, allocatable) -> str:
        name = v["name"]
        path = pod_dir / "volumes" / name
        ns = pod["metadata"]["namespace"]
        if "emptyDir" in v:
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)
            return str(path)
        if "hostPath" in v:
            hp = v["hostPath"]
            p, kind = Path(hp["path"]), hp.get("type") or ""
            if kind == "DirectoryOrCreate":
                p.mkdir(parents=True, exist_ok=True)
            elif kind == "FileOrCreate":
                p.parent.mkdir(parents=True, exist_ok=True)
                p.touch(exist_ok=True)
            elif kind == "Directory" and not p.is_dir():
                raise VolumeError(f"hostPath type check failed: {p} is not a directory")
            elif kind == "File" and not p.is_file():
                raise VolumeError(f"hostPath type check failed: {p} is not a file")
            elif not p.exists() and kind in ("Socket", "CharDevice", "BlockDevice"):
                raise VolumeError(f"hostPath type check failed: {p} does not exist")
            elif not p.exists():
                p.mkdir(parents=True, exist_ok=True)  # type "": the runtime creates a directory
            return str(p)
        if "persistentVolumeClaim" in v or "ephemeral" in v:
            claim = v["persistentVolumeClaim"]["claimName"] if "persistentVolumeClaim" in v else \
                f"{pod['metadata']['name']}-{name}"  # the ephemeral volume controller's PVC name
            return self._claimed(ns, claim)
        payload: dict[str, tuple[bytes, int]] | None = None
        if "configMap" in v:
            c = v["configMap"]
            payload = _kv_payload("configmap", self.objects.configmap(ns, c["name"]), c["name"], c.get("items"),
                                  bool(c.get("optional")), c.get("defaultMode"))
        elif "secret" in v:
            s = v["secret"]
            payload = _kv_payload("secret", self.objects.secret(ns, s["secretName"]), s["secretName"],
                                  s.get("items"), bool(s.get("optional")), s.get("defaultMode"))
        elif "downwardAPI" in v:
            d = v["downwardAPI"]
            payload = self._downward(pod, d.get("items") or [], d.get("defaultMode"), pod_ip, host_ip, allocatable)
        elif "projected" in v:
            payload = self._projected(pod, v["projected"], pod_ip, host_ip, allocatable)
        else:
            kinds = sorted(k for k in v if k != "name")
            raise VolumeError(f"volume {name}: type {kinds} is not supported by the local provider")
        write_atomic_dir(path, payload)
        return str(path)

    def _claimed(self, ns: str, claim: str) -> str:
        """The host directory of the PV bound to a claim (hostPath and local PVs: all nodes share this host)."""
        pvc = self.objects.pvc(ns, claim)
        if pvc is None:
            raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
        pv_name = (pvc.get("spec") or {}).get("volumeName")
        if (pvc.get("status") or {}).get("phase") != "Bound" or not pv_name:
            raise VolumeError(f'persistentvolumeclaim "{claim}" is not bound')
        pv = self.objects.pv(pv_name)
        if pv is None:
            raise VolumeError(f'persistentvolume "{pv_name}" not found')
        src = pv["spec"].get("hostPath") or pv["spec"].get("local")
        if not src:
            kinds = sorted(k for k in pv["spec"] if k not in ("accessModes", "capacity", "claimRef", "nodeAffinity",
                           "persistentVolumeReclaimPolicy", "storageClassName", "volumeMode", "mountOptions"))
            raise VolumeError(f'persistentvolume "{pv_name}": type {kinds} is not supported by the local provider '
                              "(hostPath and local only)")
        p = Path(src["path"])
        if not p.exists():
            if "hostPath" in pv["spec"] and (src.get("type") or "") in ("", "DirectoryOrCreate"):
                p.mkdir(parents=True, exist_ok=True)
            else:
                raise VolumeError(f'persistentvolume "{pv_name}": path {p} does not exist')
        return str(p)

    def _downward(self, pod, items, default_mode, pod_ip, host_ip, allocatable):
        out = {}
        for it in items:
            if "fieldRef" in it:
                val = envmod.field_value(pod, it["fieldRef"]["fieldPath"], pod_ip, host_ip)
            else:
                ref = it["resourceFieldRef"]
                val = envmod.resource_value(pod, ref.get("containerName", ""), ref, allocatable)
            out[it["path"]] = (val.encode(), _mode(it, default_mode))
        return out

    def _projected(self, pod, proj, pod_ip, host_ip, allocatable):
        ns = pod["metadata"]["namespace"]
        dm = proj.get("defaultMode")
        out: dict[str, tuple[bytes, int]] = {}
        for src in proj.get("sources") or []:
            if "configMap" in src:
                c = src["configMap"]
                out.update(_kv_payload("configmap", self.objects.configmap(ns, c["name"]), c["name"],
                                       c.get("items"), bool(c.get("optional")), dm))
            elif "secret" in src:
                s = src["secret"]
                out.update(_kv_payload("secret", self.objects.secret(ns, s["name"]), s["name"], s.get("items"),
                                       bool(s.get("optional")), dm))
            elif "downwardAPI" in src:
                out.update(self._downward(pod, src["downwardAPI"].get("items") or [], dm, pod_ip, host_ip,
                                          allocatable))
            elif "serviceAccountToken" in src:
                t = src["serviceAccountToken"]
                token = self.tokens.get(pod, t.get("audience"), int(t.get("expirationSeconds") or 3600))
                out[t["path"]] = (token.encode(), _mode({}, dm if dm is not None else 0o644))
            else:
                raise VolumeError(f"projected source {sorted(src)} is not supported by the local provider")
        return out


def pod_memory_limit(pod: dict) -> int | None:
    total = 0
    for c in pod["spec"].get("containers") or []:
        lim = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if not lim:
            return None
        total += int(parse_quantity(lim))
    return total or None
