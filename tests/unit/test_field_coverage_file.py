"""conformance/field-assertions.yaml (src/rayconformance/fieldcov/assertions_file.py): its entries count as `covers`
markers on the tests they name (a parametrization's entry on that one only, and only for a test whose call ran), and a
file that cannot be used stops the run in one line naming the entry."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from rayconformance.fieldcov import assertions_file, coverage

from .conftest import usage_error
from .test_field_coverage import READABLE_CRDS

LISTED = """
test_provisioning:
  - RayCluster:spec.workerGroupSpecs[].replicas
test_suspend: [RayCluster:spec.suspend]
test_autoscaler: [RayCluster:spec.enableInTreeAutoscaling]
test_autoscaler[v2]: [RayCluster:spec.autoscalerOptions.version]
"""
DEFINED = {"test_provisioning", "test_autoscaler", "test_versions"}


def item(name: str, base: str | None = None):
    return SimpleNamespace(name=name, originalname=base or name)


def listed(suite, text: str) -> None:
    suite.tests()  # conftest.SAMPLE_TESTS: test_provisioning, test_suspend (fails), test_job, test_autoscaler[v1|v2]
    (suite.pytester.path / "conformance" / assertions_file.FILENAME).write_text(text)


@pytest.fixture
def readable_crds(suite, monkeypatch):
    """The run reads the CRDs from a file (READABLE_CRDS); this process's `read_crds` is put back afterwards."""
    monkeypatch.setattr(coverage, "read_crds", coverage.read_crds)
    suite.pytester.makeconftest(READABLE_CRDS)


def test_a_test_gets_its_entry_and_its_parametrizations_entry():
    found = assertions_file.parse_entries({"test_versions": ["RayCluster:spec.suspend"],
                                           "test_versions[v2]": ["RayCluster:spec.autoscalerOptions.version"]},
                                          DEFINED)
    assert found.fields(item("test_versions[v1]", "test_versions")) == ["RayCluster:spec.suspend"]
    assert found.fields(item("test_versions[v2]", "test_versions")) == [
        "RayCluster:spec.suspend", "RayCluster:spec.autoscalerOptions.version"]
    assert found.fields(item("test_provisioning")) == []


@pytest.mark.parametrize("data, says", [
    (["test_versions"], "must map test names to lists of fields"),
    ({"versions": ["RayCluster:spec.suspend"]}, "entry 'versions' is not a test name"),
    ({"test_nosuch[v1]": ["RayCluster:spec.suspend"]}, "no conformance test is named test_nosuch"),
    ({"test_versions": "RayCluster:spec.suspend"}, "entry 'test_versions' must list the fields"),
    ({"test_versions": []}, "entry 'test_versions' must list the fields"),
    ({"test_versions": ["spec.suspend"]}, "entry 'test_versions': field 'spec.suspend' is not Kind:path"),
    ({"test_versions": [3]}, "entry 'test_versions': field 3 is not a string"),
])
def test_a_wrong_entry_is_one_line_naming_it(data, says):
    with pytest.raises(assertions_file.AssertionsFileError) as e:
        assertions_file.parse_entries(data, DEFINED)
    assert says in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith(assertions_file.WHERE)


def test_the_file_is_read_beside_the_tests_and_may_repeat_no_entry(tmp_path):
    assert assertions_file.load(tmp_path).entries == {}  # no file: nothing listed
    conformance = tmp_path / "conformance" / "raycluster"
    conformance.mkdir(parents=True)
    (conformance / "test_x.py").write_text("def test_versions(ctx, v):\n    pass\n")
    path = assertions_file.path_in(tmp_path)
    path.write_text("test_versions: [RayCluster:spec.suspend]\n")
    assert assertions_file.load(tmp_path).entries == {"test_versions": ("RayCluster:spec.suspend",)}
    path.write_text("test_versions: [RayCluster:spec.suspend]\ntest_versions: [RayCluster:spec.managedBy]\n")
    with pytest.raises(assertions_file.AssertionsFileError, match="entry 'test_versions' is there twice"):
        assertions_file.load(tmp_path)
    path.write_text("test_versions: [\n")
    with pytest.raises(assertions_file.AssertionsFileError, match="not readable YAML"):
        assertions_file.load(tmp_path)


def test_a_parameter_id_the_test_does_not_have_is_named_with_the_ids_it_has():
    found = assertions_file.parse_entries({"test_versions[v3]": ["RayCluster:spec.suspend"],
                                           "test_provisioning[v1]": ["RayCluster:spec.suspend"],
                                           "test_autoscaler[v1]": ["RayCluster:spec.suspend"]}, DEFINED)
    items = [item("test_versions[v1]", "test_versions"), item("test_versions[v2]", "test_versions"),
             item("test_provisioning")]
    assert found.parameter_problems(items) == [
        f"{assertions_file.WHERE}: entry 'test_versions[v3]': test_versions has no parametrization [v3]; its ids: "
        "v1, v2",
        f"{assertions_file.WHERE}: entry 'test_provisioning[v1]': test_provisioning has no parametrization [v1]; "
        "its ids: none (it is not parametrized)"]  # test_autoscaler is not among these items: another module's


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_run_counts_the_listed_fields_of_the_tests_that_ran(suite, readable_crds, xdist):
    listed(suite, LISTED)
    result = (suite.run_subprocess if xdist else suite.run)(*xdist, "--all-features", "--skip-tests", "autoscaler[v2]")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["field coverage RayCluster: * fields, * set (*%), 3 asserted (*%), 1 excluded"])
    (row,) = suite.report()["fieldCoverage"]["crds"]
    assert "spec.suspend" not in row["uncovered"]  # its test failed, but its call ran
    assert "spec.autoscalerOptions.version" in row["uncovered"]  # listed for [v2], which was skipped


def test_a_parametrizations_entry_counts_for_that_one(suite, readable_crds):
    listed(suite, LISTED)
    result = suite.run("--all-features", "-k", "autoscaler and v2")
    result.assert_outcomes(passed=1, deselected=4)
    (row,) = suite.report()["fieldCoverage"]["crds"]
    assert row["asserted"] == 2 and "spec.workerGroupSpecs[].replicas" in row["uncovered"]


@pytest.mark.parametrize("text, says", [
    ("test_nosuch: [RayCluster:spec.suspend]\n", "entry 'test_nosuch': no conformance test is named test_nosuch"),
    ("[test_provisioning]\n", "must map test names to lists of fields"),
])
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_file_that_cannot_be_used_stops_the_run_in_one_line(suite, text, says, xdist):
    listed(suite, text)
    line = usage_error((suite.run_subprocess if xdist else suite.run)(*xdist, "--all-features"))
    assert says in line and assertions_file.WHERE in line
    assert suite.provider_calls() == []  # stopped before anything was brought up


def test_an_unknown_parameter_id_fails_its_module_collection(suite):
    listed(suite, "test_autoscaler[v3]: [RayCluster:spec.suspend]\n")
    result = suite.run("--all-features")
    result.assert_outcomes(errors=1)
    assert (f"{assertions_file.WHERE}: entry 'test_autoscaler[v3]': test_autoscaler has no parametrization [v3]; its "
            "ids: v1, v2") in result.stdout.lines
    assert suite.provider_calls() == []

