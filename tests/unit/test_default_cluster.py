"""The default run can be certified: the local provider's default cluster has nodes for every Pod of the samples the
tests of a profile's claimed features apply (their nodeSelector labels, and the fake GPUs and TPU chips they ask
for, a multi-host slice's hosts all placed), so no claimed feature's test skips for want of a device (`verify`
rejects a skipped claimed feature). Read from the sources: no cluster."""
from __future__ import annotations

import functools
import importlib
from pathlib import Path

import pytest
import yaml

from rayconformance import providers
from rayconformance.clusters.definition import ClusterDefinition
from rayconformance.clusters.local import DEFAULT_CLUSTER
from rayconformance.operator import profiles
from rayconformance.run import options

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def samples_by_feature() -> dict[str, set[str]]:
    """Feature -> the samples its conformance tests apply (their `feature` and `samples` marks)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "conformance").rglob("test_*.py")):
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name, fn in vars(module).items():
            marks = getattr(fn, "pytestmark", []) if name.startswith("test_") else []
            samples = {s for m in marks if m.name == "samples" for s in m.args}
            for feature in (f for m in marks if m.name == "feature" for f in m.args):
                out.setdefault(feature, set()).update(samples)
    return out


def pod_groups(doc) -> list[tuple[int, dict, dict]]:
    """(hosts, nodeSelector, extended-resource limits per Pod) of every Pod template in a manifest."""
    found = []
    if isinstance(doc, dict):
        spec = (doc.get("template") or {}).get("spec") if isinstance(doc.get("template"), dict) else None
        if isinstance(spec, dict) and "containers" in spec:
            limits = {}
            for c in spec["containers"]:
                for r, n in ((c.get("resources") or {}).get("limits") or {}).items():
                    if "/" in r:
                        limits[r] = limits.get(r, 0) + int(n)
            found.append((int(doc.get("numOfHosts", 1)), spec.get("nodeSelector") or {}, limits))
        for v in doc.values():
            found += pod_groups(v)
    elif isinstance(doc, list):
        for v in doc:
            found += pod_groups(v)
    return found


def unplaced(sample: str, definition: ClusterDefinition) -> list[str]:
    """What of the Pods of a sample that asks for devices no node of the definition can take (other samples may
    leave a Pod unschedulable on purpose)."""
    nodes = definition.section.nodes
    text = (ROOT / "samples" / f"{sample}.yaml").read_text()
    groups = [g for doc in yaml.safe_load_all(text) for g in pod_groups(doc)]
    out = []
    if any(limits for _, _, limits in groups):
        for hosts, selector, limits in groups:
            fits = [n for n in nodes if all(str(n.labels.get(k)) == str(v) for k, v in selector.items())]
            room = sum(min((n.devices.get(r, 0) // count for r, count in limits.items()), default=hosts)
                       for n in fits)
            if room < hosts:
                out.append(f"{sample}: {hosts} Pod(s) selecting {selector} with {limits}")
    return out


def claimed_unplaced(definition: ClusterDefinition) -> dict[str, list[str]]:
    """Profile -> the Pods of its claimed features' samples the definition cannot place."""
    by_feature, out = samples_by_feature(), {}
    for name in profiles.known():
        if name == "template":
            continue
        claimed = profiles.load(name).features
        problems = [p for f in claimed for s in sorted(by_feature.get(f, ())) for p in unplaced(s, definition)]
        if problems:
            out[name] = problems
    return out


def test_the_local_providers_default_cluster_serves_every_claimed_feature():
    _, definition = providers.resolve("local", None)
    assert definition.name == DEFAULT_CLUSTER and providers.resolve(None, None)[1].name == DEFAULT_CLUSTER
    assert set(definition.section.device_resources) >= {"nvidia.com/gpu", "google.com/tpu"}
    assert claimed_unplaced(definition) == {}


def test_the_check_sees_what_a_cpu_only_cluster_lacks():
    missing = claimed_unplaced(providers.load_definition("local-cpu", ""))
    default = missing.get(options.default("operator-profile"), [])
    assert {m.split(":")[0] for m in default} >= {"raycluster-gpu", "raycluster-gpu-autoscale",
                                                  "raycluster-multi-host-tpu"}, default


@pytest.mark.parametrize("sample", ["raycluster-gpu", "raycluster-gpu-autoscale", "raycluster-multi-host-tpu"])
def test_the_device_samples_are_the_ones_read(sample):
    """The samples the tests of the GPU and TPU features apply ask for devices (else the check above proves nothing)."""
    assert any(limits for _, _, limits in pod_groups(yaml.safe_load((ROOT / "samples" / f"{sample}.yaml").read_text())))
