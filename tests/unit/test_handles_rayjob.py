"""testing.handles.rayjob: a RayJob handle waits through testing.expect with its operation's default timeout,
or the one a test passes, and fails with the expect function's message."""
from __future__ import annotations

import pytest

from rayconformance.testing import ray
from rayconformance.testing.context import Context
from rayconformance.testing.expect import rayjob as expect
from rayconformance.testing.handles import rayjob as handle  # noqa: F401 - made before a test patches expect
from rayconformance.testing.waiting import Timeouts


@pytest.fixture
def ctx(monkeypatch) -> Context:
    monkeypatch.setattr(ray.RayResources, "__init__", lambda self, api, ns, kind: None)
    return Context(k8s=None, namespace="ns", ray_version="2.46.0", timeouts=Timeouts(1, 2, 3), provider=None,
                   measure=lambda *_: None, diagnostics=lambda: None, test="t", samples_declared=())


def test_timeouts_default_to_the_operation_and_a_test_may_pass_another(ctx, monkeypatch):
    seen = []
    monkeypatch.setattr(expect, "rayjob_must_finish", lambda api, ns, name, timeout, **kw: seen.append(timeout))
    monkeypatch.setattr(expect, "rayjob_must_be_suspended", lambda api, ns, name, timeout: seen.append(timeout))
    job = ctx.rayjob("j")
    job.must_finish(reason="AppFailed")
    job.must_finish(ctx.timeouts.medium, reason="AppFailed")
    job.must_be_suspended()
    assert seen == [ctx.timeouts.job, ctx.timeouts.medium, ctx.timeouts.gone]


def test_must_succeed_fails_with_the_expect_message(ctx, monkeypatch):
    observed = {"kind": "RayJob", "metadata": {"name": "j"},
                "status": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed", "rayClusterName": "c"}}
    monkeypatch.setattr(ray.RayResources, "get", lambda self, name: observed)
    job = ctx.rayjob("j")
    assert job.cluster().name == "c"
    with pytest.raises(AssertionError, match=r"expected RayJob j to end with jobStatus=SUCCEEDED, "
                                             r"jobDeploymentStatus=Complete in HTTPMode; observed jobStatus='FAILED'"):
        job.must_succeed(when="in HTTPMode")
