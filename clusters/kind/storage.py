"""kind's default StorageClass for the project's offline node image, as a real kind node image has it: Rancher's
local-path-provisioner, the manifest of its pinned version (`deploy/local-path-storage.yaml`, the tool cache's copy)
with the changes kind makes to it: the StorageClass is `standard` and the default one, volumes live under
`/var/local-path-provisioner` on the node, the provisioner tolerates the control-plane taint, and it and its helper
Pods use images held in the node image (built offline by build-node-image.sh, never pulled).

    python -m rayconformance.clusters.kind.storage MANIFEST PROVISIONER_IMAGE HELPER_IMAGE > default-storage.yaml

kind applies the result (the node's `/kind/manifests/default-storage.yaml`) when it creates a cluster.
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from rayconformance.clusters.local.storage import objects

CLASS = "standard"
NODE_PATH = Path("/var/local-path-provisioner")
CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoSchedule"}


def kind_objects(manifest: str, provisioner_image: str, helper_image: str) -> list[dict]:
    """The upstream objects with kind's changes."""
    out = objects(manifest, NODE_PATH)  # the default-class annotation and the node path
    for obj in out:
        if obj["kind"] == "StorageClass":
            obj["metadata"]["name"] = CLASS
        elif obj["kind"] == "Deployment":
            pod = obj["spec"]["template"]["spec"]
            pod.setdefault("tolerations", []).append(CONTROL_PLANE_TOLERATION)
            for ctr in pod["containers"]:
                ctr["image"] = provisioner_image
                ctr["imagePullPolicy"] = "IfNotPresent"
        elif obj["kind"] == "ConfigMap" and "helperPod.yaml" in (obj.get("data") or {}):
            helper = yaml.safe_load(obj["data"]["helperPod.yaml"])
            for ctr in helper["spec"]["containers"]:
                ctr["image"] = helper_image
                ctr["imagePullPolicy"] = "IfNotPresent"
            obj["data"]["helperPod.yaml"] = yaml.safe_dump(helper, sort_keys=False)
    return out


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the ConfigMap's scripts and files) as literal blocks, readable on the node."""


_BlockDumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s,
                                                                  style="|" if "\n" in s else None))


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write(__doc__.split("\n\n")[1].strip() + "\n")
        return 2
    manifest, provisioner_image, helper_image = argv
    sys.stdout.write(yaml.dump_all(kind_objects(Path(manifest).read_text(), provisioner_image, helper_image),
                                   Dumper=_BlockDumper, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
