"""Extended resource names and what the fake device plugin derives from one (no gRPC here: the cluster
definitions' parser uses it too)."""
from __future__ import annotations

import re

GPU = "nvidia.com/gpu"
# what a real plugin of the resource exports to a container; other resources get <NAME>_VISIBLE_DEVICES
KNOWN_ENV = {GPU: "NVIDIA_VISIBLE_DEVICES"}


def endpoint_for(resource: str) -> str:
    """The plugin's socket file name: `nvidia.com/gpu` -> `fake-nvidia.com-gpu.sock`."""
    return "fake-" + resource.replace("/", "-") + ".sock"


def check_resource(resource: str) -> str:
    """`resource` if it is an extended resource name (`<domain>/<name>`, the domain not kubernetes.io's), else
    ValueError."""
    domain, _, name = resource.partition("/")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", domain) or "kubernetes.io" in domain \
            or not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", name):
        raise ValueError(f"{resource!r} is not an extended resource name (<domain>/<name>, the domain not "
                         "kubernetes.io's)")
    return resource


def _upper(name: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


def env_for(resource: str) -> str:
    """The variable Allocate sets to the container's device IDs: `nvidia.com/gpu` -> NVIDIA_VISIBLE_DEVICES,
    `google.com/tpu` -> TPU_VISIBLE_DEVICES."""
    return KNOWN_ENV.get(resource) or _upper(resource.partition("/")[2]) + "_VISIBLE_DEVICES"


def id_prefix_for(resource: str) -> str:
    """The device IDs' prefix: `nvidia.com/gpu` -> GPU (IDs `GPU-fake-<node>-<i>`), `google.com/tpu` -> TPU."""
    return _upper(resource.partition("/")[2]).replace("_", "-")
