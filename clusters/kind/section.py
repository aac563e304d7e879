"""The kind section of a cluster definition (`provider: kind`): `kindCluster`, parsed here only.

    kindCluster:
      name: rayconformance-cpu     # the kind cluster (default: the definition's name)
      nodeImage: kindest/node:...  # optional: pins Kubernetes
      loadImages: [...]            # loaded into the nodes
      fakeGPUs: {perNode: 4, image: ...}   # the project's device plugin on nodes labelled nvidia.com/gpu.present
      config: {kind: Cluster, ...}  # the kind Cluster config, passed to `kind create cluster` as is
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .. import definition
from ..definition import SectionError

GPU_LABEL = "nvidia.com/gpu.present"
NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
KEYS = ("name", "nodeImage", "loadImages", "fakeGPUs", "config")


@definition.register("kind")
@dataclass(frozen=True)
class KindSection:
    KEYS: ClassVar[tuple[str, ...]] = ("kindCluster",)

    name: str  # of the definition
    cluster: str  # of the kind cluster
    config: dict  # the kind Cluster config
    node_image: str | None
    images: tuple[str, ...]  # loaded into the nodes, the device plugin's image included
    gpus_per_node: int
    plugin_image: str | None

    @property
    def gpu_node_count(self) -> int:
        return sum(str((n.get("labels") or {}).get(GPU_LABEL)).lower() == "true" for n in self.config["nodes"])

    @property
    def has_gpus(self) -> bool:
        return bool(self.gpus_per_node)

    @classmethod
    def parse(cls, doc: dict, name: str, path: Path) -> "KindSection":
        k = doc.get("kindCluster")
        if not isinstance(k, dict):
            raise SectionError("kindCluster", "missing or not a mapping; see clusters/kind-cpu.yaml")
        if unknown := [key for key in k if key not in KEYS]:
            raise SectionError(f"kindCluster.{unknown[0]}", f"unknown key; allowed keys: {', '.join(KEYS)}")
        config = k.get("config")
        if not isinstance(config, dict) or config.get("kind") != "Cluster" or not isinstance(config.get("nodes"), list):
            raise SectionError("kindCluster.config", "must be a kind Cluster config with a 'nodes' list; "
                                                     "see clusters/kind-cpu.yaml")
        cluster = str(k.get("name") or name)
        if not NAME.match(cluster):
            raise SectionError("kindCluster.name", f"'{cluster}' is not a usable kind cluster name (lowercase "
                                                   "letters, digits, '.', '-')")
        gpus = k.get("fakeGPUs") or {}
        if not isinstance(gpus, dict):
            raise SectionError("kindCluster.fakeGPUs", "must be a mapping with perNode and image")
        try:
            per_node = int(gpus.get("perNode") or 0)
        except (TypeError, ValueError):
            raise SectionError("kindCluster.fakeGPUs.perNode", f"must be a whole number, got "
                                                               f"'{gpus.get('perNode')}'") from None
        plugin_image = gpus.get("image")
        images = [str(i) for i in k.get("loadImages") or []]
        if plugin_image and plugin_image not in images:
            images.append(plugin_image)
        section = cls(name=name, cluster=cluster, config=config, node_image=k.get("nodeImage"),
                      images=tuple(images), gpus_per_node=per_node, plugin_image=plugin_image)
        if per_node and not (plugin_image and section.gpu_node_count):
            raise SectionError("kindCluster.fakeGPUs", f"needs an 'image' and at least one node labelled "
                                                       f"{GPU_LABEL}: \"true\"")
        return section
