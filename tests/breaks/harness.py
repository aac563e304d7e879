"""What break cases are made of: a `Case` (one conformance test and what breaks it), saboteurs that act on
the bed while the suite runs, and sample mutations. The cases live in cases_<resource>.py."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kubernetes import client

from rayconformance.testing.expect import raycluster, rayjob, rayservice
from rayconformance.features import matches
from rayconformance.kube.namespaces import RUN_LABEL
from tests.breaks.declared import DECLARED_ENV
from tests.suiterun import RUN_ID


@dataclass
class Case:
    test: str  # short test name for --run-test
    expect: str  # a regular expression the failure message must match
    gates: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    samples: dict[str, Callable[[list[dict]], None]] = field(default_factory=dict)  # sample -> mutation
    saboteur: Callable[[client.ApiClient, threading.Event], None] | None = None
    timeout_scale: float = 0.3
    patch: str | None = None  # tests/breaks/patches/<patch>.patch: the operator built from its source so patched
    local: bool = False  # the suite sees the bed as the `local` provider (for its capabilities), not `existing`
    profile: str = "kuberay-v1.6.1"  # the profile the break is derived from
    tree_patch: str | None = None  # tests/breaks/patches/<patch>.patch applied to a copy of the profile's source tree
    variant: str | None = None  # tells apart two cases of one test that no patch tells apart (e.g. two saboteurs)
    bed: str | None = None  # the local bed's cluster definition the case needs (None: the breaks' own, local-gpu)

    @property
    def id(self) -> str:
        """The case's pytest id and ledger key: its test, and the patch that breaks the operator if one does."""
        patch = self.patch or self.tree_patch or self.variant
        return self.test + (f"~{patch}" if patch else "")

    @property
    def install_key(self) -> tuple | None:
        """What the operator install of the case's suite session is made of: cases with the same key can share one
        session (the overhead of a case, some 60 s, paid once; `session_keys` says which do). None for a case
        that needs the bed to itself: a saboteur acts on the whole cluster, and on the `local` provider a mutated
        sample's images are made ready before any test runs."""
        if self.saboteur or (self.samples and self.local):
            return None
        return (self.profile, self.patch, self.tree_patch, tuple(sorted(self.gates.items())),
                tuple(sorted(self.env.items())), self.local, self.timeout_scale, self.bed)


def session_keys(cases: list[Case], declared: dict[str, tuple[str, ...]] | None) -> dict[str, tuple | None]:
    """Case id -> the key of the suite session it runs in (None: alone). Cases with one install key share a
    session unless one mutates a sample that the other's test applies or mutates too, since the session has
    one samples directory. `declared` maps each conformance test's short name to the samples it declares
    (`declared_samples`); without it, a case that mutates a sample runs alone."""
    applies = {c.id: {s for short, names in (declared or {}).items() if matches(c.test, short) for s in names}
               for c in cases}

    def apart(a: Case, b: Case) -> bool:  # neither case's sample mutation reaches the other's test
        return not set(a.samples) & (applies[b.id] | set(b.samples)) and not set(b.samples) & applies[a.id]

    sessions: dict[tuple, list[list[Case]]] = {}
    keys: dict[str, tuple | None] = {}
    for case in cases:
        if case.install_key is None or (case.samples and declared is None):
            keys[case.id] = None
            continue
        groups = sessions.setdefault(case.install_key, [])
        n = next((n for n, group in enumerate(groups) if all(apart(case, o) for o in group)), len(groups))
        if n == len(groups):
            groups.append([])
        groups[n].append(case)
        keys[case.id] = case.install_key + (n,)
    return keys


def declared_samples() -> dict[str, tuple[str, ...]] | None:
    """Each conformance test's short name -> the samples it declares (a collect-only pass over conformance/ with
    the plugin in tests/breaks/declared.py); None when the collection fails."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    from tests.suiterun import ROOT

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "declared.json"
        r = subprocess.run([sys.executable, "-m", "pytest", "conformance", "--collect-only", "-q", "-p",
                            "no:cacheprovider", "-p", "tests.breaks.declared"], cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, DECLARED_ENV: str(out)})
        return {k: tuple(v) for k, v in json.loads(out.read_text()).items()} if r.returncode == 0 and \
            out.is_file() else None


def patched_tree(tmp: Path, patch: Path) -> Path:
    """A copy of the source tree given to the suite (RAYCONF_OPERATOR_TREE) with `patch` applied, uncommitted: the
    suite builds it as a modified tree, as it would a pull request's checkout."""
    import shutil
    import subprocess

    import pytest

    from rayconformance.operator import source_tree

    tree = source_tree.tree_path(None)
    if tree is None:
        pytest.skip(f"this break patches a KubeRay source tree: set {source_tree.ENV} to a clone at the profile's ref")
    copy = tmp / "operator-tree"
    shutil.copytree(tree, copy, symlinks=True)
    r = subprocess.run(["git", "-C", str(copy), "apply", str(patch)], capture_output=True, text=True)
    assert r.returncode == 0, f"{patch.name} does not apply to {tree}: {r.stderr.strip()}"
    return copy


def until(stop: threading.Event, probe: Callable[[], bool], period: float = 1.0) -> bool:
    while not stop.is_set():
        try:
            if probe():
                return True
        except Exception:  # noqa: BLE001 - the cluster changes under us; keep looking
            pass
        stop.wait(period)
    return False


def scale_operator(api: client.ApiClient, replicas: int) -> bool:
    client.AppsV1Api(api).patch_namespaced_deployment_scale("kuberay-operator", "ray-system",
                                                            {"spec": {"replicas": replicas}})
    return True


def any_object(plural: str, pred: Callable[[dict], bool]) -> Callable[[client.ApiClient], bool]:
    return lambda api: any(pred(o) for o in
                           client.CustomObjectsApi(api).list_cluster_custom_object("ray.io", "v1", plural)["items"])


def namespace_created(api: client.ApiClient) -> bool:
    """This run's test namespace exists and is active (the operator was installed and Available before)."""
    items = client.CoreV1Api(api).list_namespace(label_selector=f"{RUN_LABEL}={RUN_ID}").items
    return any(ns.status.phase == "Active" for ns in items)


def namespace_terminating(api: client.ApiClient) -> bool:
    """The test is over: its namespace is being deleted."""
    items = client.CoreV1Api(api).list_namespace(label_selector=f"{RUN_LABEL}={RUN_ID}").items
    return any(ns.status.phase == "Terminating" for ns in items)


def stop_operator_when(probe: Callable[[client.ApiClient], bool]):
    """A saboteur: scale the operator to zero once `probe` holds, and back to one once the test is over (its
    finalizers, e.g. a RayJob's, must run for the test's namespace to go)."""
    def saboteur(api: client.ApiClient, stop: threading.Event) -> bool:
        acted = until(stop, lambda: probe(api), 0.5) and until(stop, lambda: scale_operator(api, 0), 1.0)
        if acted and until(stop, lambda: namespace_terminating(api), 1.0):
            until(stop, lambda: scale_operator(api, 1), 1.0)
        return acted
    return saboteur


provisioned = any_object("rayclusters", raycluster.is_provisioned)
service_ready = any_object("rayservices", rayservice.is_ready)
upgrade_pending = any_object("rayservices", rayservice.is_upgrading)
job_suspended = any_object("rayjobs", rayjob.is_suspended)


def set_field(path: list, value):
    def mutate(docs: list[dict]) -> None:
        node = next(d for d in docs if d["kind"] in ("RayCluster", "RayJob", "RayService"))
        for k in path[:-1]:
            node = node[k]
        if value is None:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
    return mutate


def patch_rayjob_spec(field: str, value):
    """A saboteur acting as if the operator ignored a RayJob's spec.<field>: as soon as a RayJob sets it to
    something else, patch it to `value` (None removes it), so the operator acts on the RayJob without it."""
    def saboteur(api: client.ApiClient, stop: threading.Event) -> bool:
        co = client.CustomObjectsApi(api)

        def patched() -> bool:
            for o in co.list_cluster_custom_object("ray.io", "v1", "rayjobs")["items"]:
                if o["spec"].get(field) not in (None, value):
                    co.patch_namespaced_custom_object("ray.io", "v1", o["metadata"]["namespace"], "rayjobs",
                                                      o["metadata"]["name"], {"spec": {field: value}})
                    return True
            return False
        return until(stop, patched, 0.5)
    return saboteur


