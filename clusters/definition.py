"""Cluster definitions (clusters/*.yaml), for every provider: loading and validation into plain dataclasses.

The common keys (name, provider) and the local test bed's sections (network, nodes, images) are parsed here;
a provider reads its own section (e.g. `kindCluster`) from `raw`.
"""
from __future__ import annotations

import fnmatch
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CLUSTERS_DIR = Path(__file__).resolve().parent


class DefinitionError(ValueError):
    """A cluster definition is missing or malformed; the message says what and how to fix it."""


@dataclass(frozen=True)
class ImageRule:
    match: str
    runtime: str  # ray | host | kuberay | tool
    entrypoint: tuple[str, ...] = ()
    tool: str = ""  # runtime tool: the tool-cache component whose <tool>-<image tag>/bin goes on PATH
    env: tuple[tuple[str, str], ...] = ()  # like the image's ENV: defaults the container's env overrides
    working_dir: str = ""  # the image's WORKDIR (a Pod's workingDir wins); "" = the runtime's default
    volumes: tuple[str, ...] = ()  # the image's VOLUMEs: a fresh empty directory per container run
    user: str = ""  # the image's USER, numeric "uid[:gid]" (a Pod's runAsUser/runAsGroup win); "" = root

    def matches(self, image: str) -> bool:
        return fnmatch.fnmatchcase(image, self.match)


@dataclass(frozen=True)
class NodeDef:
    name: str
    index: int  # 1-based; node i owns podCIDR 10.244.<i>.0/24
    capacity: dict
    labels: dict = field(default_factory=dict)
    gpus: int = 0


@dataclass(frozen=True)
class ClusterDefinition:
    name: str
    provider: str
    path: Path
    host_address: str
    dns_address: str
    service_cidr: str
    pod_cidr: str
    nodes: tuple[NodeDef, ...]
    images: tuple[ImageRule, ...]
    raw: dict

    @property
    def has_gpus(self) -> bool:
        return any(n.gpus for n in self.nodes)

    def node_pod_cidr(self, node: NodeDef) -> str:
        net = ipaddress.ip_network(self.pod_cidr)
        return str(list(net.subnets(new_prefix=24))[node.index])

    def image_rule(self, image: str) -> ImageRule | None:
        return next((r for r in self.images if r.matches(image)), None)


KNOWN_RUNTIMES = {"ray", "host", "kuberay", "tool"}


def resolve_named(name_or_path: str, directory: Path) -> Path:
    """A name (`local-cpu`, looked up as <directory>/<name>.yaml) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return directory / f"{name_or_path}.yaml"


def resolve(name_or_path: str) -> Path:
    return resolve_named(name_or_path, CLUSTERS_DIR)


def load(name_or_path: str) -> ClusterDefinition:
    path = resolve(name_or_path)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CLUSTERS_DIR.glob("*.yaml")))
        raise DefinitionError(f"cluster definition '{name_or_path}' not found ({path}); known: {known}")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise DefinitionError(f"cluster definition {path} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(raw, dict) or raw.get("kind") != "ClusterDefinition":
        raise DefinitionError(f"{path}: expected 'kind: ClusterDefinition' at the top level")
    net = raw.get("network") or {}
    try:
        nodes = tuple(
            NodeDef(name=str(n["name"]), index=i + 1, capacity=dict(n.get("capacity") or {}),
                    labels=dict(n.get("labels") or {}), gpus=int(n.get("gpus") or 0))
            for i, n in enumerate(raw.get("nodes") or [])
        )
        images = tuple(
            ImageRule(match=str(r["match"]), runtime=str(r["runtime"]), entrypoint=tuple(r.get("entrypoint") or ()),
                      tool=str(r.get("tool") or ""),
                      env=tuple((str(k), str(v)) for k, v in (r.get("env") or {}).items()),
                      working_dir=str(r.get("workingDir") or ""), volumes=tuple(str(v) for v in r.get("volumes") or ()),
                      user=str(r.get("user") if r.get("user") is not None else ""))
            for r in raw.get("images") or []
        )
    except (KeyError, TypeError, ValueError) as e:
        raise DefinitionError(f"{path}: malformed nodes or images entry ({e}); see clusters/local-cpu.yaml") from None
    for r in images:
        if r.runtime == "tool" and not r.tool:
            raise DefinitionError(f"{path}: image rule '{r.match}' has runtime 'tool' but no 'tool' (a cache component)")
        for d in ((r.working_dir,) if r.working_dir else ()) + r.volumes:
            if not d.startswith("/"):
                raise DefinitionError(f"{path}: image rule '{r.match}': workingDir and volumes must be absolute "
                                      f"paths, got '{d}'")
        if r.user and not re.fullmatch(r"\d+(:\d+)?", r.user):
            raise DefinitionError(f"{path}: image rule '{r.match}': user must be numeric 'uid[:gid]' (as the image's "
                                  f"USER resolves), got '{r.user}'")
        if r.runtime not in KNOWN_RUNTIMES:
            raise DefinitionError(f"{path}: image rule '{r.match}' has unknown runtime '{r.runtime}' "
                                  f"(known: {', '.join(sorted(KNOWN_RUNTIMES))})")
    provider = str(raw.get("provider", "local"))
    if provider == "local" and not nodes:
        raise DefinitionError(f"{path}: a local cluster needs at least one entry under 'nodes'")
    return ClusterDefinition(
        name=str(raw.get("name") or path.stem), provider=provider, path=path,
        host_address=str(net.get("hostAddress", "10.240.0.1")), dns_address=str(net.get("dnsAddress", "10.240.0.10")),
        service_cidr=str(net.get("serviceCIDR", "10.96.0.0/16")), pod_cidr=str(net.get("podCIDR", "10.244.0.0/16")),
        nodes=nodes, images=images, raw=raw,
    )
