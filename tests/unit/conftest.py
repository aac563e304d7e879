"""A throw-away suite for running the plugin under pytester, with a fake cluster provider.

The fake provider returns a Cluster whose kubeconfig points at a closed local port, so nothing touches a
network; it records `up`/`down` calls in <run dir>/fake-calls. Every conformance run here goes through
`Suite.run`, which passes the fake provider: the real default provider (local) would start, or tear down,
this machine's test bed.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

# Imported before any pytester run: a module first imported inside an in-process run is dropped from sys.modules
# when it ends, so a later `monkeypatch.setattr(toolcache, ...)` would patch a stale copy and the code under test
# would build into the real tool cache.
import rayconformance.clusters.toolcache  # noqa: F401

RUN_ID = "unit"

FAKE_PROVIDER = '''
from pathlib import Path

from rayconformance.providers import Cluster, ProviderError

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
"""


class FakeProvider:
    name = "fake"

    def __init__(self, name, definition, run_dir, keep=False, **kw):
        self.run_dir = Path(run_dir)

    def _record(self, what):
        with open(self.run_dir / "fake-calls", "a") as f:
            f.write(what + "\\n")

    def up(self):
        self._record("up")
        kubeconfig = self.run_dir / "kubeconfig"
        kubeconfig.write_text(KUBECONFIG)
        return Cluster(provider="local", name="fake-cluster", kubeconfig=kubeconfig, bringup_seconds=1.5,
                       extra={"fake": True})

    def down(self):
        self._record("down")

    def prepare_images(self, objects):  # the run's samples (e.g. the gateway fixture's): nothing to load here
        pass


class BrokenProvider(FakeProvider):
    def up(self):
        self._record("up")
        raise ProviderError("provider fake: the cluster is on fire; put it out and retry")
'''

SAMPLE_TESTS = '''
import time

import pytest


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    """A RayCluster comes up:
    head and workers Ready.

    Details that stay out of the report."""
    time.sleep(0.05)


@pytest.mark.feature("RayClusterSuspend")
def test_suspend(cluster):
    assert False, "the cluster did not suspend"


@pytest.mark.feature("RayJobK8sJobMode")
def test_job(cluster, measure):
    measure("traffic.requests", 42)


@pytest.mark.parametrize("v", [pytest.param("v1", marks=pytest.mark.feature("RayClusterAutoscalerV1")),
                               pytest.param("v2", marks=pytest.mark.feature("RayClusterAutoscalerV2"))])
def test_autoscaler(cluster, v):
    pass
'''


class Suite:
    """A pytester directory laid out like the repository: conformance/, a fake provider, reports/."""

    def __init__(self, pytester: pytest.Pytester):
        self.pytester = pytester
        pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
        pytester.makepyfile(fakeprovider=FAKE_PROVIDER)
        pytester.syspathinsert()
        self.run_dir = pytester.path / "reports" / RUN_ID

    def tests(self, source: str = SAMPLE_TESTS, path: str = "conformance/raycluster/test_sample.py") -> None:
        target = self.pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)

    def args(self, *args: str, factory: str = "FakeProvider") -> list[str]:
        return ["conformance", f"--provider-factory=fakeprovider:{factory}", f"--run-id={RUN_ID}", "-p",
                "no:cacheprovider", *args]

    def run(self, *args: str, factory: str = "FakeProvider") -> pytest.RunResult:
        return self.pytester.runpytest(*self.args(*args, factory=factory))

    def run_subprocess(self, *args: str, factory: str = "FakeProvider") -> pytest.RunResult:
        return self.pytester.runpytest_subprocess(*self.args(*args, factory=factory))

    def report(self) -> dict:
        return yaml.safe_load((self.run_dir / "conformance-report.yaml").read_text())

    def provider_calls(self) -> list[str]:
        path = self.run_dir / "fake-calls"
        return path.read_text().split() if path.exists() else []

    def profile(self, name: str, text: str) -> Path:
        path = self.pytester.path / f"{name}.yaml"
        path.write_text(text)
        return path


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Suite:
    return Suite(pytester)


def usage_error(result: pytest.RunResult) -> str:
    """The one `ERROR: ...` line of a run that stopped on bad input; asserts there is no traceback."""
    output = result.stdout.lines + result.stderr.lines
    errors = [line for line in output if line.startswith("ERROR: ")]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, "\n".join(output)
    assert len(errors) == 1, "\n".join(output)
    assert not any("Traceback" in line or "INTERNALERROR" in line for line in output), "\n".join(output)
    return errors[0]
