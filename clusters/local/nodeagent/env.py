"""Container environment as a kubelet builds it: env/envFrom, $(VAR) expansion, downward API, Service links."""
from __future__ import annotations

import base64
import math
import re
from decimal import Decimal
from typing import Callable

from kubernetes.utils.quantity import parse_quantity


class EnvError(RuntimeError):
    """A reference cannot be resolved: the container waits with CreateContainerConfigError."""


def expand(s: str, lookup: Callable[[str], str | None]) -> str:
    """$(VAR) -> value if VAR is defined, else left as written; $$ -> $; everything else verbatim."""
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c == "$" and i + 1 < n:
            nxt = s[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = s.find(")", i + 2)
                if end != -1:
                    name = s[i + 2:end]
                    val = lookup(name) if name else None
                    out.append(val if val is not None else s[i:end + 1])
                    i = end + 1
                    continue
                out.append(s[i:])
                break
            out.append("$" + nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_FIELD_RE = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: dict, path: str, pod_ip: str | None, host_ip: str | None) -> str:
    md, spec = pod.get("metadata", {}), pod.get("spec", {})
    m = _FIELD_RE.match(path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    simple = {
        "metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""), "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.hostIP": host_ip or "", "status.hostIPs": host_ip or "",
        "status.podIP": pod_ip or "", "status.podIPs": pod_ip or "",
    }
    if path in simple:
        return simple[path]
    if path in ("metadata.labels", "metadata.annotations"):
        items = md.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{_escape(v)}"' for k, v in sorted(items.items()))
    raise EnvError(f"unsupported fieldRef {path!r}")


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def resource_value(pod: dict, container_name: str, ref: dict, allocatable: dict) -> str:
    ctr = next((c for c in pod["spec"].get("containers", []) + pod["spec"].get("initContainers", [])
                if c["name"] == (ref.get("containerName") or container_name)), None)
    if ctr is None:
        raise EnvError(f"resourceFieldRef: container {ref.get('containerName')!r} not found")
    res = ref["resource"]
    kind, _, name = res.partition(".")
    resources = ctr.get("resources") or {}
    q = (resources.get(kind) or {}).get(name)
    if q is None and kind == "limits":
        q = allocatable.get(name)
    if q is None and kind == "requests":
        q = (resources.get("limits") or {}).get(name, "0")
    value = parse_quantity(str(q)) if q is not None else Decimal(0)
    divisor = parse_quantity(str(ref.get("divisor") or "1"))
    if divisor == 0:
        divisor = Decimal(1)
    return str(int(math.ceil(value / divisor)))


def service_env(services: list[dict]) -> dict[str, str]:
    """Docker-link style variables for every Service with a cluster IP (kubelet's Service links)."""
    env: dict[str, str] = {}
    for svc in services:
        spec = svc.get("spec") or {}
        ip = spec.get("clusterIP")
        ports = spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        name = svc["metadata"]["name"].upper().replace("-", "_")
        env[f"{name}_SERVICE_HOST"] = ip
        env[f"{name}_SERVICE_PORT"] = str(ports[0]["port"])
        for p in ports:
            if p.get("name"):
                env[f"{name}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
        first = ports[0]
        env[f"{name}_PORT"] = f"{first.get('protocol', 'TCP').lower()}://{ip}:{first['port']}"
        for p in ports:
            proto = p.get("protocol", "TCP")
            pre = f"{name}_PORT_{p['port']}_{proto.upper()}"
            env[pre] = f"{proto.lower()}://{ip}:{p['port']}"
            env[pre + "_PROTO"] = proto.lower()
            env[pre + "_PORT"] = str(p["port"])
            env[pre + "_ADDR"] = ip
    return env


class Resolver:
    """What env building needs from the outside world (the API and the sandbox)."""

    def configmap(self, namespace: str, name: str) -> dict | None: ...
    def secret(self, namespace: str, name: str) -> dict | None: ...
    def services(self, namespace: str) -> list[dict]: ...
    def kubernetes_service(self) -> dict | None: ...


def _data(obj: dict | None, secret: bool) -> dict[str, str]:
    if obj is None:
        return {}
    out = dict(obj.get("data") or {})
    if secret:
        return {k: base64.b64decode(v).decode(errors="replace") for k, v in out.items()}
    out.update({k: base64.b64decode(v).decode(errors="replace") for k, v in (obj.get("binaryData") or {}).items()})
    return out


def container_env(pod: dict, ctr: dict, res: Resolver, pod_ip: str | None, host_ip: str | None,
                  allocatable: dict) -> dict[str, str]:
    """The variables a kubelet would give this container (without the image's own env)."""
    ns = pod["metadata"]["namespace"]
    spec = pod["spec"]
    services: list[dict] = []
    if spec.get("enableServiceLinks", True):
        services = [s for s in res.services(ns) if not (ns == "default" and s["metadata"]["name"] == "kubernetes")]
    master = res.kubernetes_service()
    if master:
        services.append(master)
    svc_env = service_env(services)
    env: dict[str, str] = {}

    def lookup(name: str) -> str | None:
        return env.get(name, svc_env.get(name))

    for src in ctr.get("envFrom") or []:
        prefix = src.get("prefix", "")
        if "configMapRef" in src:
            ref, secret = src["configMapRef"], False
            obj = res.configmap(ns, ref["name"])
        else:
            ref, secret = src["secretRef"], True
            obj = res.secret(ns, ref["name"])
        if obj is None:
            if ref.get("optional"):
                continue
            raise EnvError(f'{"secret" if secret else "configmap"} "{ref["name"]}" not found')
        for k, v in _data(obj, secret).items():
            if "=" not in k:
                env[prefix + k] = v
    for e in ctr.get("env") or []:
        name = e["name"]
        if "valueFrom" not in e:
            env[name] = expand(e.get("value", ""), lookup)
            continue
        vf = e["valueFrom"]
        if "fieldRef" in vf:
            env[name] = field_value(pod, vf["fieldRef"]["fieldPath"], pod_ip, host_ip)
        elif "resourceFieldRef" in vf:
            env[name] = resource_value(pod, ctr["name"], vf["resourceFieldRef"], allocatable)
        elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
            secret = "secretKeyRef" in vf
            ref = vf["secretKeyRef" if secret else "configMapKeyRef"]
            obj = res.secret(ns, ref["name"]) if secret else res.configmap(ns, ref["name"])
            data = _data(obj, secret)
            if obj is None or ref["key"] not in data:
                if ref.get("optional"):
                    continue
                what = "secret" if secret else "configmap"
                if obj is None:
                    raise EnvError(f'{what} "{ref["name"]}" not found')
                raise EnvError(f'couldn\'t find key {ref["key"]} in {what} {ns}/{ref["name"]}')
            env[name] = data[ref["key"]]
        else:
            raise EnvError(f"env {name}: unsupported valueFrom {sorted(vf)}")
    for k, v in svc_env.items():
        env.setdefault(k, v)
    return env


def expand_argv(argv: list[str], env: dict[str, str]) -> list[str]:
    return [expand(a, env.get) for a in argv]
