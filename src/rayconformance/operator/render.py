"""A profile's `install.<provider>` section rendered to the plain objects to create: the manifests read (kustomize
directories through the provider's kubectl, YAML files as they are), then adjusted (namespace, image, args, env,
feature gates)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from rayconformance.clusters.toolcache import CACHE

from . import OperatorError
from .install_section import InstallSection, built_image, manifest_objects
from .source import source_dir


def _kustomize(path: Path, kubectl: str) -> list[dict]:
    r = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise OperatorError(f"kustomize {path} failed: {r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode}")
    return manifest_objects(r.stdout, f"{path} (as kustomize rendered it)")


def render(spec: InstallSection, feature_gates: dict[str, bool], profile_dir: Path, kubectl: str) -> list[dict]:
    """All objects of the install, with namespace, image, args, env and feature gates applied; `kubectl` renders
    kustomize directories (the provider's kubectl). `profile_dir` is what relative manifests are relative to (a
    source tree's build for a tree source, whose section comes resolved: source_tree.resolve_install)."""
    base = source_dir(spec, profile_dir) or profile_dir
    image = built_image(spec, spec.image, profile_dir, provider="")  # a tree source is resolved before
    objects: list[dict] = []
    for m in spec.manifests:
        m = m.replace("${CACHE}", str(CACHE))
        p = (base / m) if not Path(m).is_absolute() else Path(m)
        if not p.exists():
            raise OperatorError(f"operator manifest {p} not found; check `install.manifests` in the profile "
                                f"(or run `make tools`)")
        if p.is_dir() and (p / "kustomization.yaml").exists():
            objects += _kustomize(p, kubectl)
        else:
            for f in sorted(p.glob("*.yaml")) if p.is_dir() else [p]:
                objects += manifest_objects(f.read_text(), str(f))
    ns = spec.namespace
    old_ns = {o["metadata"].get("namespace") for o in objects if o["metadata"].get("namespace")}
    for o in objects:
        if o["kind"] == "Namespace":
            o["metadata"]["name"] = ns
        elif o["metadata"].get("namespace") in old_ns:
            o["metadata"]["namespace"] = ns
        for s in o.get("subjects") or []:
            if s.get("kind") == "ServiceAccount":
                s["namespace"] = ns
        if o["kind"] == "Deployment" and o["metadata"]["name"] == (spec.deployment or o["metadata"]["name"]):
            _adjust_container(o, spec, image, feature_gates)
    if not any(o["kind"] == "Namespace" for o in objects):
        objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return objects


def _adjust_container(dep: dict, spec: InstallSection, image: str | None, feature_gates: dict[str, bool]) -> None:
    containers = dep["spec"]["template"]["spec"]["containers"]
    c = next((c for c in containers if c["name"] == spec.container), containers[0])
    if image:
        c["image"] = image
    args = [a for a in c.get("args") or [] if not a.startswith("--feature-gates")]
    if feature_gates:
        args.append("--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(feature_gates.items())))
    c["args"] = args + list(spec.args)
    env = [e for e in c.get("env") or [] if e["name"] not in spec.env]
    c["env"] = env + [{"name": k, "value": str(v)} for k, v in spec.env.items()]
