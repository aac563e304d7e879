"""Which of KubeRay's samples bench/upstream_samples.py runs, and what they need first: the samples of a release,
each classified (run, or skipped with the reason: hardware, cloud services, internet egress, no Ray resource,
a kind the cluster does not serve), the Secrets their comments tell the user to create, and the images they name
(loaded on kind when they can be built offline)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from rayconformance.clusters.toolcache import CACHE

RAY_KINDS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices",
             "RayCronJob": "raycronjobs"}
HARDWARE = re.compile(r"nvidia\.com/gpu|google\.com/tpu|amd\.com/gpu|aws\.amazon\.com/neuron|habana\.ai")
CLOUD = re.compile(r"\bgke\b|\.gke\.|cloud\.google\.com|gcsfuse|gcs-fuse|alb\.ingress|eks\.amazonaws|\bs3://|\bgs://|"
                   r"azure|application-networking\.k8s\.aws|agc")
EGRESS = re.compile(r"(working_dir|py_modules|pip|uv|requirements)\W.*https?://|https?://[^\s\"']*\.(zip|whl|tar\.gz)|"
                    r"\bpip3? install\b|\buv (pip|run|add)\b|\bpip:\s|[\"']pip[\"']\s*:|huggingface|hf_token|HF_TOKEN|"
                    r"\bwget https?://|\bcurl [^|]*https?://|git clone", re.I)


def samples_dir(version: str) -> Path:
    d = CACHE / f"kuberay-{version}" / "config" / "samples"
    if d.is_dir():
        return d
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    d = Path(out) / f"github.com/ray-project/kuberay/ray-operator@{version}" / "config" / "samples"
    if not d.is_dir():
        raise SystemExit(f"bench: no KubeRay {version} samples in the tool cache or the Go module cache; "
                         f"run `bash clusters/local/build-tools.sh kuberay@{version}`")
    return d


def _code(text: str) -> str:
    """The manifest without YAML comments (links in comments are no egress)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))


def classify(path: Path) -> tuple[str | None, list[dict]]:
    """(reason to skip or None, the objects)."""
    text = path.read_text()
    objs = [o for o in yaml.safe_load_all(text) if o]
    code = _code(text)
    if not any(o.get("kind") in RAY_KINDS for o in objs):
        return "no Ray resource (" + ", ".join(sorted({o.get("kind", "?") for o in objs})) + ")", objs
    if HARDWARE.search(code):
        return "needs hardware: " + HARDWARE.search(code).group(0), objs
    m = CLOUD.search(code) or CLOUD.search(path.name)
    if m:
        return f"needs a cloud service: {m.group(0)}", objs
    m = EGRESS.search(code)
    if m:
        return f"needs internet egress: {m.group(0)[:60]!r}", objs
    return None, objs


DOCUMENTED_SECRET = re.compile(r"^\s*#\s*kubectl create secret generic (\S+)((?:\s+--from-literal=\S+)+)", re.M)
LITERAL = re.compile(r"--from-literal=([^=\s]+)=(\S+)")


def documented_secrets(text: str) -> dict[str, dict[str, str]]:
    """Secrets the sample's comments tell the user to create before applying it: name -> data."""
    return {m.group(1): {k: v.strip("'\"") for k, v in LITERAL.findall(m.group(2))}
            for m in DOCUMENTED_SECRET.finditer(text)}


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


def unserved(dyn, objs: list[dict]) -> str | None:
    """The first kind the sample creates that the cluster does not serve (a third-party CRD not installed)."""
    from kubernetes.dynamic.exceptions import ResourceNotFoundError
    for o in objs:
        try:
            dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
        except ResourceNotFoundError:
            return f"{o['kind']} ({o['apiVersion']})"
    return None
