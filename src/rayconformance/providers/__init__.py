"""Cluster providers: how a run gets a Kubernetes cluster, and what else a provider can do with it.

A provider is one class in one module of this package (`local.py`, `kind.py`, `existing.py`), exported as
`PROVIDER`; the module's name is the `--provider` value. Nothing else lists providers: adding one touches its
module and its cluster definitions (`clusters/<name>-*.yaml`, `provider: <name>`).

Every provider can bring a cluster up and take it down. The capabilities in `CAPABILITIES` are methods a
provider may lack; a test asks with `provider.supports("cut_pod_network")` or `provider.require(...)`
(which raises `Unsupported`, one line, naming the provider and what it cannot do).

The controller process calls `up()` once per run and `down()` at the end (unless resources are kept), or, with
`--attach-kubeconfig`, `adopt(kubeconfig)` on a cluster of the definition that is already up (then nothing is
taken down). Any process (an xdist worker included) gets a handle on the running cluster with
`attach(cluster, run_dir)`: the cluster carries its resolved definition, so no definition is read again.
"""
from __future__ import annotations

import importlib
import pkgutil
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rayconformance.clusters import definition as definitions


class ProviderError(RuntimeError):
    """A provider cannot give a cluster; the message is one line saying what is wrong and how to fix it."""


class Unsupported(ProviderError):
    """The provider lacks a capability a test asked for."""


@dataclass
class Cluster:
    provider: str
    name: str
    kubeconfig: Path
    bringup_seconds: float = 0.0
    gpu: bool = False
    extra: dict = field(default_factory=dict)  # provider-specific facts for the report
    definition: definitions.ClusterDefinition | None = None  # as resolved for the run; None: the provider takes none


CAPABILITIES = {  # method -> what it does, for Unsupported messages
    "load_images": "load container images into the cluster's nodes",
    "cut_pod_network": "cut a running Pod's network",
    "kill_container": "kill a running container of a Pod",
    "restart_node": "restart a node",
    "gpu_nodes": "report the nodes that offer GPUs",
}


class Provider:
    """One way to get a cluster. Subclasses set `name` and `default_cluster` and implement `up`/`down`, and
    whichever capabilities they have; `kubectl()` is the client that renders and installs manifests."""

    name: ClassVar[str]
    default_cluster: ClassVar[str | None] = None  # definition used without --cluster; None: takes no definition
    adoptable: ClassVar[bool] = False  # can act on a cluster of its definition that is already up (`adopt`)

    def __init__(self, definition: definitions.ClusterDefinition | None, run_dir: Path, keep: bool = False, *,
                 timeout_scale: float = 1.0):
        self.definition, self.run_dir, self.keep = definition, Path(run_dir), keep
        self.timeout_scale = timeout_scale  # multiplies every wait of the provider
        self.cluster: Cluster | None = None  # set by up() or attach()

    def up(self) -> Cluster:
        raise NotImplementedError

    def down(self) -> None:
        raise NotImplementedError

    def attach(self, cluster: Cluster) -> None:
        """Act on a cluster that is already up (brought up by this or another process); `down()` stays a no-op."""
        self.cluster = cluster

    def adopt(self, kubeconfig: Path) -> Cluster:
        """Use the cluster of this definition that is already up behind `kubeconfig` (`--attach-kubeconfig`) as if
        `up()` had brought it up; `down()` leaves it up."""
        if not self.adoptable:
            raise ProviderError(f"provider {self.name} cannot attach to a cluster that is already up; leave out "
                                "--attach-kubeconfig")
        defn = self.definition
        self.attach(Cluster(provider=self.name, name=defn.name if defn else Path(kubeconfig).stem,
                            kubeconfig=Path(kubeconfig), gpu=bool(defn and defn.has_gpus), definition=defn,
                            extra={"attached": True}))
        return self.cluster

    def kubectl(self) -> str:
        """A kubectl for this cluster: the project's own build (`make tools`) if there is one, else PATH's."""
        from rayconformance.clusters.toolcache import tool

        own = tool("kubernetes", "kubectl")
        found = str(own) if own.exists() else shutil.which("kubectl")
        if not found:
            raise ProviderError(f"provider {self.name}: no kubectl ({own} is not built and none is on PATH); "
                                "run `make tools` or install kubectl")
        return found

    def prepare_images(self, objects: list[dict]) -> None:
        """Make the images the workloads among `objects` run available to the cluster's nodes: loaded (or built)
        where the provider loads images, nothing where the nodes pull them themselves."""
        if self.supports("load_images"):
            self.load_images(images_of(objects))

    # ---- capabilities a provider may lack

    def load_images(self, images: list[str]) -> None:
        raise self._unsupported("load_images")

    def cut_pod_network(self, pod) -> None:
        """Drop every packet of a running Pod but loopback and abort its TCP connections, as a broken link would."""
        raise self._unsupported("cut_pod_network")

    def kill_container(self, pod, container: str) -> None:
        """Kill the container named `container` of a running Pod at once (SIGKILL, as `crictl stop` without a
        grace period does): it exits 137 and the kubelet applies the restart policy."""
        raise self._unsupported("kill_container")

    def restart_node(self, node: str) -> None:
        raise self._unsupported("restart_node")

    def gpu_nodes(self) -> dict[str, int]:
        """Node name -> number of GPUs the provider gave it."""
        raise self._unsupported("gpu_nodes")

    def supports(self, capability: str) -> bool:
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown provider capability {capability!r}; known: {', '.join(CAPABILITIES)}")
        return getattr(type(self), capability) is not getattr(Provider, capability)

    def require(self, capability: str) -> None:
        if not self.supports(capability):
            raise self._unsupported(capability)

    def _unsupported(self, capability: str) -> Unsupported:
        return Unsupported(f"provider {self.name} cannot {CAPABILITIES[capability]}")


def images_of(objects: list[dict]) -> list[str]:
    """The container images the workloads among `objects` (manifests as dicts) run, in order, once each."""
    out: list[str] = []
    for obj in objects:
        spec = obj.get("spec") or {}
        pod = (spec.get("jobTemplate") or {}).get("spec", spec).get("template", {}).get("spec") or \
            (spec if obj.get("kind") == "Pod" else {})
        for c in (pod.get("initContainers") or []) + (pod.get("containers") or []):
            if c.get("image") and c["image"] not in out:
                out.append(c["image"])
    return out


def names() -> list[str]:
    """The registered providers: every public module of this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def provider_class(name: str) -> type[Provider]:
    if name not in names():
        raise ProviderError(f"unknown provider '{name}'; use --provider with one of: {', '.join(names())}")
    cls = getattr(importlib.import_module(f"{__name__}.{name}"), "PROVIDER", None)
    if cls is None:
        raise ProviderError(f"provider module src/rayconformance/providers/{name}.py exports no PROVIDER class")
    return cls


def resolve(provider: str | None, cluster: str | None) -> tuple[str, definitions.ClusterDefinition | None]:
    """The provider and cluster definition a run uses, the definition read and checked here, once:
    `--provider kind` alone picks the provider's default definition (kind-cpu), `--cluster kind-gpu` alone picks
    the definition's provider; both must agree. A provider that takes no definition ignores --cluster."""
    if provider is not None and provider_class(provider).default_cluster is None:
        return provider, None
    defn = load_definition(cluster, "(--cluster)") if cluster is not None else None
    provider = provider or (defn.provider if defn else "local")
    cls = provider_class(provider)
    if cls.default_cluster is None:
        return provider, None
    if defn is None:
        defn = load_definition(cls.default_cluster, f"(the default of provider {provider})")
    if defn.provider != provider:
        raise ProviderError(f"cluster definition '{defn.name}' is for provider '{defn.provider}', not '{provider}'; "
                            f"pass --provider {defn.provider} or another --cluster")
    return provider, defn


def docker_answers() -> str | None:
    """Where a Docker engine answers its ping (clusters/kind/docker.py), or None."""
    from rayconformance.clusters.kind.docker import answers

    return answers()


def default_provider() -> tuple[str, str]:
    """The provider a run uses when none is named, and why: kind where a Docker engine answers (as on a laptop or a
    CI runner: the real public images are pulled), else the local bed."""
    socket_path = docker_answers()
    if socket_path:
        return "kind", f"a Docker engine answers at {socket_path} (--provider local for the local bed)"
    return "local", "no Docker engine answers (--provider kind starts the project's own)"


def load_definition(name_or_path: str, what: str) -> definitions.ClusterDefinition:
    try:
        return definitions.load(name_or_path)
    except definitions.DefinitionError as e:
        raise ProviderError(f"{e} {what}") from None


def build(name: str, definition: definitions.ClusterDefinition | None, run_dir: Path, keep: bool = False,
          timeout_scale: float = 1.0) -> Provider:
    """The provider `name` for an already resolved definition."""
    return provider_class(name)(definition, run_dir, keep=keep, timeout_scale=timeout_scale)


def make_provider(name: str | None, cluster: str | None, run_dir: Path, keep: bool = False,
                  timeout_scale: float = 1.0) -> Provider:
    """Resolve `--provider`/`--cluster` and build the provider (for commands outside the suite, e.g. bench/)."""
    return build(*resolve(name, cluster), run_dir, keep=keep, timeout_scale=timeout_scale)


def attach(cluster: Cluster, run_dir: Path, timeout_scale: float = 1.0) -> Provider:
    """A handle on the run's cluster (in any process) for the capabilities; it never takes the cluster down."""
    provider = build(cluster.provider, cluster.definition, run_dir, keep=True, timeout_scale=timeout_scale)
    provider.attach(cluster)
    return provider
