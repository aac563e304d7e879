"""What bench/upstream_samples.py needs beyond `rayconformance.testing.kuberay_samples` (where a release's samples
are, which of them run, what they need first): the images the samples name, loaded on kind when they can be built
offline."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

RAY_RELEASE_IMAGE = re.compile(r"^rayproject/ray:(\d+\.\d+\.\d+)$")


def named_images(objs: list[dict]) -> set[str]:
    """Every `image:` value in the objects."""
    found: set[str] = set()

    def walk(x) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "image" and isinstance(v, str):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for o in objs:
        walk(o)
    return found


def images_to_load(images: set[str]) -> tuple[list[str], list[str]]:
    """(images with an offline archive, after building the missing Ray release images; images left out)."""
    from rayconformance.clusters.kind import image_archives

    missing = sorted(m.group(1) for i in images if (m := RAY_RELEASE_IMAGE.match(i)) and i not in image_archives())
    if missing:
        print(f"building Ray images {' '.join(missing)} offline (clusters/kind/build-app-images.sh ray)", flush=True)
        root = Path(__file__).resolve().parents[2]
        subprocess.run(["bash", str(root / "clusters/kind/build-app-images.sh"), "ray"], check=True,
                       env={**os.environ, "RAY_IMAGE_VERSIONS": " ".join(missing)})
    archives = image_archives()
    return sorted(i for i in images if i in archives), sorted(i for i in images if i not in archives)
