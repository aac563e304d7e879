"""Running the real conformance suite from the project's own tests: `pytest conformance --provider existing`
against a test bed's kubeconfig, with a (possibly derived) operator profile, and reading back what it wrote
(junit.xml, conformance-report.yaml, the rendered operator manifests)."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import yaml

from rayconformance import features
from rayconformance.testing import ray

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"
RUN_ID = "suiterun"


@dataclass
class SuiteRun:
    proc: subprocess.CompletedProcess
    run_dir: Path

    @property
    def output(self) -> str:
        return f"{self.proc.stdout[-4000:]}\n{self.proc.stderr[-2000:]}"

    def testcases(self, test: str) -> list[ET.Element]:
        """The junit entries of `test` (a short name: one test, or every parametrization of one function)."""
        junit = self.run_dir / "junit.xml"
        assert junit.is_file(), f"no junit report; pytest said:\n{self.output}"
        return [tc for tc in ET.parse(junit).getroot().iter("testcase")
                if features.matches(test, features.short_name(tc.get("name", "")))]

    def report(self) -> dict:
        path = self.run_dir / "conformance-report.yaml"
        assert path.is_file(), f"no conformance report; pytest said:\n{self.output}"
        return yaml.safe_load(path.read_text())

    def operator_objects(self) -> list[dict]:
        """The operator's objects as the run rendered and installed them."""
        path = self.run_dir / "operator-install.yaml"
        assert path.is_file(), f"the run installed no operator; pytest said:\n{self.output}"
        return [d for d in yaml.safe_load_all(path.read_text()) if d]


def derive_profile(tmp: Path, base: str, name: str, *, gates: dict | None = None, env: dict | None = None,
                   features: list[str] | None = None, patch: Path | None = None) -> Path:
    """A copy of profiles/<base>.yaml with other feature gates, operator env or claimed features, or with the
    operator built from its release patched with `patch` (running under its own image tag)."""
    p = yaml.safe_load((PROFILES / f"{base}.yaml").read_text())
    p["name"] = name
    p["featureGates"] = {**p.get("featureGates", {}), **(gates or {})}
    for prov in p["install"].values():
        prov["env"] = {**prov.get("env", {}), **(env or {})}
        if patch is not None:
            prov["source"] = {**prov["source"], "patch": str(Path(patch).resolve())}
    if features is not None:
        p["features"] = features
    out = tmp / f"{name}.yaml"
    out.write_text(yaml.safe_dump(p, sort_keys=False))
    return out


def run_suite(kubeconfig: Path, profile: str | Path, test: str | list[str], out: Path, *, timeout_scale: float = 1.0,
              samples: Path | None = None, timeout: float = 1800, force: bool = True,
              local_bed: str | None = None, extra: tuple[str, ...] = ()) -> SuiteRun:
    """Run the conformance test `test` (or several, in one session with one operator install): forced with
    --run-test (whatever the profile claims), or with `force=False` selected with -k, so it runs only when the
    profile claims its features. The suite sees the cluster as `existing`, or with `local_bed` (the bed's cluster
    definition) as the `local` provider attached to it (`--attach-kubeconfig`), for tests that need the local
    provider's capabilities. `timeout` is per test."""
    tests = [test] if isinstance(test, str) else list(test)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    if samples:
        env[ray.OVERRIDE_ENV] = str(samples)
    provider = ["--provider", "existing"] if local_bed is None else \
        ["--provider", "local", "--cluster", local_bed, "--attach-kubeconfig", str(kubeconfig)]
    argv = [sys.executable, "-m", "pytest", "conformance", "-p", "no:cacheprovider", *provider,
            "--operator-profile", str(profile),
            *(["--run-test", ",".join(tests)] if force else ["-k", " or ".join(tests)]),
            "--timeout-scale", str(timeout_scale),
            "--report-dir", str(out), "--run-id", RUN_ID, *extra]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout * len(tests))
    return SuiteRun(proc, out / RUN_ID)
