"""The local test bed's section of a cluster definition (`provider: local`): its network, nodes and image rules.

Only this module parses these keys (registered with clusters/definition.py); the bed's components take the
parsed `LocalSection`. Every bad entry is a one-line error naming the key, e.g. `images[2].user: ...`.
"""
from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from .. import definition
from ..definition import SectionError
from ..deviceplugin.resources import GPU, check_resource

KNOWN_RUNTIMES = ("host", "kuberay", "ray", "tool")


@dataclass(frozen=True)
class ImageRule:
    match: str
    runtime: str  # ray | host | kuberay | tool
    entrypoint: tuple[str, ...] = ()
    tool: str = ""  # runtime tool: the tool-cache component whose <tool>-<image tag>/bin goes on PATH
    # runtime kuberay: the build's binary (in kuberay-<tag>/bin) the entrypoint runs ("" = ray-operator); runtime
    # tool: the file in <tool>-<tag>/bin that shows the tool is built ("" = the entrypoint's command)
    binary: str = ""
    env: tuple[tuple[str, str], ...] = ()  # like the image's ENV: defaults the container's env overrides
    working_dir: str = ""  # the image's WORKDIR (a Pod's workingDir wins); "" = the runtime's default
    volumes: tuple[str, ...] = ()  # the image's VOLUMEs: a fresh empty directory per container run
    user: str = ""  # the image's USER, numeric "uid[:gid]" (a Pod's runAsUser/runAsGroup win); "" = root

    def matches(self, image: str) -> bool:
        return fnmatch.fnmatchcase(image, self.match)

    def build(self, image: str) -> tuple[str, str, str] | None:
        """What runs `image` under a kuberay or tool rule, as the tool cache keys it: (component, version, the
        file inside `<component>-<version>` whose presence says it is built). None for the host and Ray runtimes,
        which the tool cache does not build."""
        tag = image_tag(image)
        if self.runtime == "kuberay":
            version = tag if tag.startswith(("v", "tree-")) else f"v{tag}"  # a release, or a source tree's build
            return "kuberay", version, f"bin/{self.binary or 'ray-operator'}"
        if self.runtime == "tool":
            command = self.entrypoint[0] if self.entrypoint and "/" not in self.entrypoint[0] else ""
            return self.tool, tag, f"bin/{self.binary or command}" if self.binary or command else "bin"
        return None


def image_tag(image: str) -> str:
    """An image reference's tag ("latest" when it names none; a digest is ignored)."""
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


@dataclass(frozen=True)
class NodeDef:
    name: str
    index: int  # 1-based; node i owns podCIDR 10.244.<i>.0/24
    capacity: dict
    labels: dict = field(default_factory=dict)
    devices: dict = field(default_factory=dict)  # extended resource -> fake devices its device plugin serves

    @property
    def gpus(self) -> int:
        return self.devices.get(GPU, 0)


@definition.register("local")
@dataclass(frozen=True)
class LocalSection:
    KEYS: ClassVar[tuple[str, ...]] = ("network", "nodes", "images", "controlPlane")

    name: str  # the definition's: names the bed's state directory
    path: Path  # the definition's file: the node agent reads it
    host_address: str
    dns_address: str
    service_cidr: str
    pod_cidr: str
    nodes: tuple[NodeDef, ...]
    images: tuple[ImageRule, ...]
    # controlPlane: Kubernetes feature gates for the apiserver, controller-manager and scheduler (as kind's
    # featureGates), and the apiserver's --runtime-config (API group/versions served beyond the defaults)
    feature_gates: dict = field(default_factory=dict)  # gate -> bool
    runtime_config: dict = field(default_factory=dict)  # group/version -> bool

    @property
    def has_gpus(self) -> bool:
        return any(n.gpus for n in self.nodes)

    @property
    def device_resources(self) -> tuple[str, ...]:
        """Every extended resource some node's fake device plugin serves."""
        return tuple(sorted({r for n in self.nodes for r in n.devices}))

    def node_pod_cidr(self, node: NodeDef) -> str:
        net = ipaddress.ip_network(self.pod_cidr)
        return str(list(net.subnets(new_prefix=24))[node.index])

    def image_rule(self, image: str) -> ImageRule | None:
        return next((r for r in self.images if r.matches(image)), None)

    @classmethod
    def parse(cls, doc: dict, name: str, path: Path) -> "LocalSection":
        net = mapping(doc.get("network"), "network", ("hostAddress", "dnsAddress", "serviceCIDR", "podCIDR"))
        nodes = tuple(parse_node(n, i) for i, n in enumerate(listing(doc.get("nodes"), "nodes")))
        if not nodes:
            raise SectionError("nodes", "a local cluster needs at least one node")
        for key, default in (("podCIDR", "10.244.0.0/16"), ("serviceCIDR", "10.96.0.0/16")):
            try:
                ipaddress.ip_network(net.get(key, default))
            except ValueError as e:
                raise SectionError(f"network.{key}", f"not a CIDR ({e})") from None
        plane = mapping(doc.get("controlPlane"), "controlPlane", ("featureGates", "runtimeConfig"))
        return cls(name=name, path=path, host_address=str(net.get("hostAddress", "10.240.0.1")),
                   dns_address=str(net.get("dnsAddress", "10.240.0.10")),
                   service_cidr=str(net.get("serviceCIDR", "10.96.0.0/16")),
                   pod_cidr=str(net.get("podCIDR", "10.244.0.0/16")), nodes=nodes,
                   images=tuple(parse_rule(r, f"images[{i}]") for i, r in enumerate(listing(doc.get("images"), "images"))),
                   feature_gates=switches(plane.get("featureGates"), "controlPlane.featureGates", FEATURE_GATE),
                   runtime_config=switches(plane.get("runtimeConfig"), "controlPlane.runtimeConfig", API_VERSION))


def mapping(value, key: str, allowed: tuple[str, ...] = ()) -> dict:
    """`value` as a mapping; with `allowed`, a key outside it is an error."""
    if value is not None and not isinstance(value, dict):
        raise SectionError(key, "must be a mapping")
    if unknown := [k for k in value or {} if allowed and k not in allowed]:
        raise SectionError(f"{key}.{unknown[0]}", f"unknown key; allowed keys: {', '.join(allowed)}")
    return value or {}


FEATURE_GATE = (re.compile(r"[A-Z][A-Za-z0-9]*"), "a Kubernetes feature gate name, e.g. GenericWorkload")
API_VERSION = (re.compile(r"[a-z0-9.-]+/[a-z0-9]+|api/(all|ga|beta|alpha)"),
               "an API group/version, e.g. scheduling.k8s.io/v1alpha2 (or api/all, api/ga, api/beta, api/alpha)")


def switches(value, key: str, name: tuple[re.Pattern, str]) -> dict[str, bool]:
    """A mapping of names to true/false (feature gates, runtime-config entries), each name of the given form."""
    pattern, what = name
    out = {}
    for k, v in mapping(value, key).items():
        if not pattern.fullmatch(str(k)):
            raise SectionError(f"{key}.{k}", f"not {what}")
        if not isinstance(v, bool):
            raise SectionError(f"{key}.{k}", f"must be true or false, got '{v}'")
        out[str(k)] = v
    return out


def listing(value, key: str) -> list:
    if value is not None and not isinstance(value, list):
        raise SectionError(key, "must be a list")
    return value or []


def parse_node(n, i: int) -> NodeDef:
    key = f"nodes[{i}]"
    n = mapping(n, key, ("name", "capacity", "labels", "gpus", "devices"))
    if not n.get("name"):
        raise SectionError(f"{key}.name", "missing: every node needs a name")
    given = mapping(n.get("devices"), f"{key}.devices")
    if "gpus" in n and GPU in given:
        raise SectionError(f"{key}.gpus", f"given twice: gpus is short for devices.{GPU}")
    devices = {}
    for resource, raw in {**({GPU: n["gpus"]} if "gpus" in n else {}), **given}.items():
        where = f"{key}.gpus" if resource == GPU and "gpus" in n else f"{key}.devices.{resource}"
        try:
            check_resource(str(resource))
        except ValueError as e:
            raise SectionError(where, str(e)) from None
        try:
            count = int(raw or 0)
        except (TypeError, ValueError):
            count = -1
        if count < 0:
            raise SectionError(where, f"must be a whole number, got '{raw}'")
        if count:
            devices[str(resource)] = count
    return NodeDef(name=str(n["name"]), index=i + 1, capacity=dict(mapping(n.get("capacity"), f"{key}.capacity")),
                   labels=dict(mapping(n.get("labels"), f"{key}.labels")), devices=devices)


def parse_rule(r, key: str) -> ImageRule:
    r = mapping(r, key, ("match", "runtime", "entrypoint", "tool", "binary", "env", "workingDir", "volumes", "user"))
    for required in ("match", "runtime"):
        if not r.get(required):
            raise SectionError(f"{key}.{required}", "missing: every image rule needs a match and a runtime")
    rule = ImageRule(match=str(r["match"]), runtime=str(r["runtime"]),
                     entrypoint=tuple(str(a) for a in listing(r.get("entrypoint"), f"{key}.entrypoint")),
                     tool=str(r.get("tool") or ""), binary=str(r.get("binary") or ""),
                     env=tuple((str(k), str(v)) for k, v in mapping(r.get("env"), f"{key}.env").items()),
                     working_dir=str(r.get("workingDir") or ""),
                     volumes=tuple(str(v) for v in listing(r.get("volumes"), f"{key}.volumes")),
                     user=str(r.get("user") if r.get("user") is not None else ""))
    if rule.runtime not in KNOWN_RUNTIMES:
        raise SectionError(f"{key}.runtime", f"unknown runtime '{rule.runtime}' (known: {', '.join(KNOWN_RUNTIMES)})")
    if rule.runtime == "tool" and not rule.tool:
        raise SectionError(f"{key}.tool", f"rule '{rule.match}' has runtime 'tool' but no tool (a cache component)")
    if rule.binary and (rule.runtime not in ("kuberay", "tool") or not re.fullmatch(r"[\w.-]+", rule.binary)):
        raise SectionError(f"{key}.binary", f"rule '{rule.match}': binary is a file name in the build's bin/ "
                                            f"(runtime kuberay or tool), got '{rule.binary}'")
    for d in ((rule.working_dir,) if rule.working_dir else ()) + rule.volumes:
        if not d.startswith("/"):
            raise SectionError(f"{key}.{'workingDir' if d == rule.working_dir else 'volumes'}",
                               f"must be an absolute path, got '{d}'")
    if rule.user and not re.fullmatch(r"\d+(:\d+)?", rule.user):
        raise SectionError(f"{key}.user", f"must be numeric 'uid[:gid]' (as the image's USER resolves), got '{rule.user}'")
    return rule


def of(defn: definition.ClusterDefinition) -> LocalSection:
    """The local section of `defn`; a one-line error if it is another provider's definition."""
    if not isinstance(defn.section, LocalSection):
        raise definition.DefinitionError(f"cluster definition {defn.path} is for provider '{defn.provider}'; the "
                                         "local test bed takes a 'provider: local' definition (e.g. local-cpu)")
    return defn.section


def load(name_or_path: str) -> LocalSection:
    """The local section of the named definition (for the bed's own commands)."""
    return of(definition.load(name_or_path))
