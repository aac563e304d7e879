"""What the kind provider takes from this directory and the tool cache (see clusters/kind/README.md).

- The project's own Docker engine (`engine.sh`), for machines where no Docker runs: its socket, and the
  address at which the host reaches ports it publishes (kind's API server).
- kind and kubectl built into the tool cache (`build-kind-tools.sh`, clusters/local/build-tools.sh), on first use
  when a run needs them.
- The offline node image (`build-node-image.sh`): its tag and `docker load` archive, once built.
- The offline application images (`build-app-images.sh`): public name -> archive, once built.

Nothing here runs a command but the tool cache's builds; the provider runs them through its one runner.
"""
from __future__ import annotations

import os
import zlib
from pathlib import Path

from rayconformance.clusters.toolcache import CACHE, ensure, tool, versions

HERE = Path(__file__).resolve().parent
ENGINE_SCRIPT = HERE / "engine.sh"
ENGINE_RUN = Path(os.environ.get("RAYCONF_ENGINE_RUN", "/run/rayconf-engine"))
ENGINE_SOCKET = ENGINE_RUN / "docker.sock"
ENGINE_LOG = ENGINE_RUN / "engine.log"
ENGINE_API_ADDRESS = "10.199.0.2"  # engine.sh ENGINE_IP: the engine's end of its veth link to the host
IMAGES_INDEX = CACHE / "kind-images" / "index.tsv"
LOGS = Path(os.environ.get("RAYCONF_LOGS", str(CACHE / "logs")))


def engine_env() -> str:
    """The DOCKER_HOST setting that points docker and kind at the project's engine."""
    return f"DOCKER_HOST=unix://{ENGINE_SOCKET}"


def names_engine(docker_host: str) -> bool:
    """Whether DOCKER_HOST names the project's engine by its socket (a user given that socket, as the hosted-runner
    simulation gives it to its runner's user): its containers are reached only at its own address, whoever started
    it."""
    return docker_host.startswith("unix://") and \
        os.path.realpath(docker_host.removeprefix("unix://")) == os.path.realpath(ENGINE_SOCKET)


def api_server_port(cluster: str) -> int:
    """The API server's port on the engine's address for a kind cluster: fixed per cluster name (kind picks a
    random free port only on addresses of the host itself), in 16443-17442."""
    return 16443 + zlib.crc32(cluster.encode()) % 1000


def cached_tool(name: str) -> Path | None:
    """kind or kubectl from the tool cache (built by `make kind-tools` / `make tools`), if built."""
    k8s = versions()["KUBERNETES_VERSION"]
    places = {"kind": [tool("kind", "kind")],  # kubectl: the local bed's build, else kubectl built alone
              "kubectl": [tool("kubernetes", "kubectl"), tool("kubectl", "kubectl", k8s)]}.get(name, [])
    return next((p for p in places if p.is_file() and os.access(p, os.X_OK)), None)


# what the tool cache builds of each: kubectl alone (build-tools.sh `kubectl`), not the whole control plane
BUILDABLE = {"kind": ("kind", "KIND_VERSION"), "kubectl": ("kubectl", "KUBERNETES_VERSION")}


def build_tool(name: str) -> Path | None:
    """kind or kubectl built into the tool cache on first use (a kind run on a user's Docker, which `make
    conformance` prepares only the local bed's base for), at the pinned version; None for a tool the cache does not
    build (docker). A failed build raises ToolBuildError naming its log."""
    if name not in BUILDABLE:
        return None
    component, pin = BUILDABLE[name]
    return ensure(component, versions()[pin], f"bin/{name}") / "bin" / name


def node_image() -> tuple[str, Path] | None:
    """(tag, archive) of the offline node image for the pinned Kubernetes version, if it was built."""
    env = CACHE / f"kind-node-image-{versions()['KUBERNETES_VERSION']}.env"
    if not env.is_file():
        return None
    kv = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
    tag, archive = kv.get("NODE_IMAGE"), Path(kv.get("NODE_IMAGE_ARCHIVE", ""))
    return (tag, archive) if tag and archive.is_file() else None


def image_archives() -> dict[str, Path]:
    """Public image name -> archive built offline (`make kind-images`), for the archives that exist."""
    if not IMAGES_INDEX.is_file():
        return {}
    out = {}
    for line in IMAGES_INDEX.read_text().splitlines():
        name, _, path = line.partition("\t")
        if name and path and Path(path).is_file():
            out[name] = Path(path)
    return out
