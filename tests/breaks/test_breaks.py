"""Deliberate breaks: each conformance test must FAIL, with a message naming what it expected and what it
observed, when the behavior it checks is broken. Each case runs the real suite (`pytest conformance
--run-test <test>`) on a local test bed with one thing broken: the operator's configuration (a derived
profile), a sample, or a saboteur that acts on the cluster while the test runs (e.g. the operator scaled
to zero). Selected cases that break the operator the same way (the same install key) share one suite session,
so the operator is installed once for them, unless one mutates a sample another's test applies. Slow (every
case waits out a scaled timeout), so they run with `make test-breaks` or a batch at a time with bench/breaks.py.
"""
from __future__ import annotations

import re
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

import pytest
import yaml
from kubernetes import config

from rayconformance.testing import ray
from tests.breaks.conftest import BED_DEFINITION, BED_ENV, DEFAULT_BED
from tests.breaks import cases_raycluster, cases_raycronjob, cases_rayjob, cases_rayservice
from tests.breaks.harness import Case, declared_samples, patched_tree, session_keys
from tests.suiterun import SuiteRun, derive_profile, run_suite

pytestmark = [pytest.mark.integration, pytest.mark.breaks]
PATCHES = Path(__file__).parent / "patches"
CASES: list[Case] = (cases_raycluster.CASES + cases_rayjob.CASES + cases_rayservice.CASES
                     + cases_raycronjob.CASES)


def _samples(tmp: Path, cases: list[Case]) -> Path:
    """The samples the cases mutate, each written mutated (the cases of one session mutate different samples)."""
    d = tmp / "samples"
    d.mkdir(exist_ok=True)
    for case in cases:
        for name, mutate in case.samples.items():
            docs = ray.load_sample(name)
            mutate(docs)
            (d / f"{name}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return d


def _run(cases: list[Case], tmp: Path, kubeconfig: Path) -> SuiteRun:
    """The suite run of the cases' tests in one session, with their (shared) install and their sample breaks."""
    case = cases[0]
    profile = derive_profile(tmp, case.profile, f"{case.profile}-broken-{abs(hash(case.test)) % 10**6}",
                             gates=case.gates, env=case.env,
                             patch=PATCHES / f"{case.patch}.patch" if case.patch else None)
    tree = patched_tree(tmp, PATCHES / f"{case.tree_patch}.patch") if case.tree_patch else None
    return run_suite(kubeconfig, profile, [c.test for c in cases], tmp / "reports", timeout_scale=case.timeout_scale,
                     samples=_samples(tmp, cases), local_bed=BED_DEFINITION if case.local else None,
                     extra=("--operator-tree", str(tree)) if tree else ())


@pytest.fixture(scope="session")
def shared_runs(request) -> Callable[[Case, Path, Path], SuiteRun]:
    """A case's suite run, shared by the selected cases with the same session key (harness.session_keys): the
    first of them to run runs them all, and the others read their results from it."""
    runs: dict[tuple, SuiteRun] = {}
    selected = [item.callspec.params["case"] for item in request.session.items
                if hasattr(item, "callspec") and "case" in item.callspec.params]
    keys = session_keys(selected, declared_samples() if any(c.samples for c in selected) else {})

    def run(case: Case, tmp: Path, kubeconfig: Path) -> SuiteRun:
        key = keys[case.id]
        if key is None:
            return _run([case], tmp, kubeconfig)
        if key not in runs:
            runs[key] = _run([c for c in selected if keys[c.id] == key], tmp, kubeconfig)
        return runs[key]
    return run


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_test_fails_when_behavior_is_broken(case: Case, tmp_path, request, shared_runs):
    if (case.bed or DEFAULT_BED) != BED_DEFINITION:
        pytest.skip(f"runs on the {case.bed or DEFAULT_BED} bed, this run's is {BED_DEFINITION}: "
                    f"{BED_ENV}={case.bed or DEFAULT_BED} bench/breaks.py run -k <its test>")
    bed_kubeconfig = request.getfixturevalue("bed_kubeconfig")
    stop = threading.Event()
    saboteur, acted = None, []
    if case.saboteur:
        api = config.new_client_from_config(str(bed_kubeconfig))
        saboteur = threading.Thread(target=lambda: acted.append(case.saboteur(api, stop)))
        saboteur.start()
    try:
        run = shared_runs(case, tmp_path, bed_kubeconfig)
    finally:
        stop.set()
        if saboteur:
            saboteur.join(30)
    cases = run.testcases(case.test)
    assert cases, f"{case.test} did not run:\n{run.output}"
    assert not case.saboteur or acted == [True], f"the saboteur never acted ({acted}); the suite said:\n{run.output}"
    failures = [f for tc in cases for f in tc.findall("failure")]
    errors = [f for tc in cases for f in tc.findall("error")]
    assert failures and not errors, \
        f"expected {case.test} to FAIL (not pass, not error); junit: {ET.tostring(cases[0], encoding='unicode')[:3000]}"
    message = " ".join((f.get("message") or "") + (f.text or "") for f in failures)
    assert re.search(case.expect, message), f"the failure message should mention {case.expect!r}:\n{message[:3000]}"
