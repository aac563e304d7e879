"""Feature selection: which tests run, which are skipped and why, and what is a collection error."""
from __future__ import annotations

import pytest

from rayconformance import features
from rayconformance.run import ray_versions

from .conftest import SAMPLE_TESTS


def skip_reasons(result: pytest.RunResult) -> dict[str, str]:
    """test short name -> skip reason, from the reports of an in-process run."""
    reasons = {}
    for report in result.reprec.getreports("pytest_runtest_logreport"):
        if report.skipped:
            reasons[features.short_name(report.nodeid.rsplit("::", 1)[-1])] = report.longrepr[2].removeprefix("Skipped: ")
    return reasons


def test_profile_claiming_nothing_skips_everything_and_brings_up_no_cluster(suite):
    suite.tests()
    result = suite.run("--operator-profile=none")
    assert result.ret == 0
    result.assert_outcomes(skipped=5)
    assert skip_reasons(result)["provisioning"] == \
        "unsupported feature(s): RayClusterProvisioning (not claimed by profile none)"
    assert suite.provider_calls() == []
    core = suite.report()["resources"][0]["core"]  # not claimed: unsupported, no skip of the verdict
    assert (core["result"], core["statistics"]["skipped"], core["unsupportedTests"]) == \
        ("untested", 0, ["provisioning"]), core


def test_supported_features_override_the_profile(suite):
    suite.tests()
    result = suite.run("--supported-features=RayClusterProvisioning,RayJobK8sJobMode")
    result.assert_outcomes(passed=2, skipped=3)
    assert skip_reasons(result)["suspend"] == \
        "unsupported feature(s): RayClusterSuspend (not claimed by --supported-features)"


def test_exempt_features_are_subtracted(suite):
    suite.tests()
    result = suite.run("--all-features", "--exempt-features=RayClusterSuspend")
    result.assert_outcomes(passed=4, skipped=1)
    assert skip_reasons(result) == {"suspend": "unsupported feature(s): RayClusterSuspend (exempted by --exempt-features)"}


def test_skip_tests_by_short_name_or_parametrization(suite):
    suite.tests()
    result = suite.run("--all-features", "--skip-tests=suspend,autoscaler[v1]")
    result.assert_outcomes(passed=3, skipped=2)
    assert skip_reasons(result) == {"suspend": "skipped by --skip-tests", "autoscaler[v1]": "skipped by --skip-tests"}


def test_run_test_runs_one_test_whatever_the_features(suite):
    suite.tests()
    result = suite.run("--operator-profile=none", "--run-test=autoscaler")
    result.assert_outcomes(passed=2, deselected=3)
    assert [t["name"] for t in suite.report()["tests"]] == ["autoscaler[v1]", "autoscaler[v2]"]


def test_run_test_takes_several_names(suite):
    suite.tests()
    result = suite.run("--operator-profile=none", "--run-test=autoscaler[v2],provisioning")
    result.assert_outcomes(passed=2, deselected=3)
    assert sorted(t["name"] for t in suite.report()["tests"]) == ["autoscaler[v2]", "provisioning"]


@pytest.mark.parametrize("option", ["--run-test", "--skip-tests"])
def test_a_name_matching_no_collected_test_is_a_usage_error(suite, option):
    from .conftest import usage_error

    suite.tests()
    result = suite.run(f"{option}=provisioning,nothing,autoscaler[v3]")
    error = usage_error(result)
    assert f"{option} nothing,autoscaler[v3]: no collected test has those short names" in error, error
    assert suite.provider_calls() == [] and not result.reprec.getreports("pytest_runtest_logreport")


def test_a_name_deselected_by_k_still_names_a_collected_test(suite):
    suite.tests()
    result = suite.run("--all-features", "-k", "provisioning", "--skip-tests=suspend")
    assert result.ret == 0, result.stdout.lines


def test_a_name_matching_no_collected_test_is_a_usage_error_under_xdist(suite):
    from .conftest import usage_error

    suite.tests()
    error = usage_error(suite.run_subprocess("-n", "2", "--skip-tests=nothing"))
    assert "--skip-tests nothing: no collected test has that short name" in error, error
    assert suite.provider_calls() == []


def test_conformance_test_without_feature_marker_is_a_collection_error(suite):
    suite.tests(SAMPLE_TESTS + "\n\ndef test_unmarked(cluster):\n    pass\n")
    result = suite.run("--all-features")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting conformance/raycluster/test_sample.py*",
                                 "*test_unmarked: a conformance test needs @pytest.mark.feature(...)*"])
    assert suite.provider_calls() == [], "a run that stops at collection brings up no cluster"


def test_unknown_feature_in_a_marker_is_a_collection_error(suite):
    suite.tests("import pytest\n\n@pytest.mark.feature('Teleport')\ndef test_x():\n    pass\n")
    result = suite.run("--all-features")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*unknown feature(s) Teleport in @pytest.mark.feature; valid features:*"])


def test_collect_only_lists_features_without_a_cluster(suite, pytester):
    suite.tests()
    result = suite.run("--collect-only", "-q", "--operator-profile=kuberay-v1.6.1")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "rayconformance: tests and their features (operator profile kuberay-v1.6.1):",
        "  provisioning [[]RayClusterProvisioning[]] runs",
        "  autoscaler[[]v1[]] [[]RayClusterAutoscalerV1[]] skip: unsupported feature(s): RayClusterAutoscalerV1 (not "
        "claimed by profile kuberay-v1.6.1)",
        "  autoscaler[[]v2[]] [[]RayClusterAutoscalerV2[]] runs",
        "*test_sample.py::test_job",
    ])
    result.stdout.no_fnmatch_line("*RayServiceIncrementalUpgrade*")
    assert not (pytester.path / "reports").exists() and suite.provider_calls() == []


def test_classify_counts_a_test_in_each_profile_it_touches():
    assert features.classify(["RayClusterProvisioning"]) == {"RayCluster": "core"}
    assert features.classify(["RayServiceReady", "RayClusterGCSFaultTolerance"]) == \
        {"RayService": "extended", "RayCluster": "extended"}


def test_core_only_runs_core_features_only(suite):
    suite.tests()
    result = suite.run("--all-features", "--core-only")
    result.assert_outcomes(passed=2, skipped=3)
    skipped = {t["name"]: t.get("reason") for t in suite.report()["tests"] if t["outcome"] == "skipped"}
    assert set(skipped) == {"suspend", "autoscaler[v1]", "autoscaler[v2]"}
    assert skipped["suspend"] == "extended feature(s) RayClusterSuspend: --core-only runs Core features only"


TOKEN_AUTH_TESTS = '''
import pytest


@pytest.mark.feature("RayClusterTokenAuth")
def test_token(cluster):
    pass


@pytest.mark.feature("RayClusterProvisioning")
def test_provisioning(cluster):
    pass
'''
TOO_OLD = "unsupported feature(s): RayClusterTokenAuth (needs Ray >= 2.52.0; this run uses Ray 2.46.0)"


def test_feature_needing_a_newer_ray_is_skipped_as_unsupported(suite):
    suite.tests(TOKEN_AUTH_TESTS)
    result = suite.run("--ray-version=2.46.0")  # kuberay-v1.6.1 claims RayClusterTokenAuth
    result.assert_outcomes(passed=1, skipped=1)
    assert skip_reasons(result) == {"token": TOO_OLD}
    extended = suite.report()["resources"][0]["extended"]
    assert "RayClusterTokenAuth" in extended["unsupportedFeatures"]
    assert "RayClusterTokenAuth" not in extended["supportedFeatures"]


def test_feature_needing_a_newer_ray_is_skipped_whatever_selects_it(suite):
    suite.tests(TOKEN_AUTH_TESTS)
    for args in (["--all-features"], ["--supported-features=RayClusterTokenAuth"], ["--run-test=token"]):
        result = suite.run("--ray-version=2.46.0", *args)
        assert skip_reasons(result).get("token") == TOO_OLD, args


def test_feature_runs_with_a_new_enough_ray(suite):
    suite.tests(TOKEN_AUTH_TESTS)
    result = suite.run("--ray-version=2.60.0", "--run-test=token")
    result.assert_outcomes(passed=1, deselected=1)


def test_ray_version_reason():
    assert ray_versions.ray_release("2.52.0") == (2, 52, 0) and ray_versions.ray_release("2.100.1") > (2, 52, 0)
    assert ray_versions.ray_too_old(["RayClusterTokenAuth", "RayClusterSuspend"], "2.51.9") == ["RayClusterTokenAuth"]
    assert ray_versions.ray_too_old(["RayClusterTokenAuth"], "2.52.0") == []
    assert ray_versions.ray_too_old(["RayClusterTokenAuth"], None) == []  # unknown Ray version: nothing to say
    assert ray_versions.ray_version_reason(["RayClusterSuspend"], "2.46.0") is None
    assert ray_versions.ray_version_reason(["RayClusterTokenAuth"], "2.46.0") == TOO_OLD
    from rayconformance.operator.profiles import RAY_VERSION

    assert all(RAY_VERSION.match(f.min_ray) for f in features.FEATURES if f.min_ray is not None)


def test_the_report_says_whether_the_run_tested_everything_claimed(suite):
    suite.tests()
    suite.run()
    assert suite.report()["selection"] == {"full": True, "narrowedBy": []}
    suite.run("-k", "provisioning", "--skip-tests=suspend")
    assert suite.report()["selection"] == {"full": False, "narrowedBy": ["-k", "--skip-tests"]}
    suite.run("--all-features")
    assert suite.report()["selection"] == {"full": False, "narrowedBy": ["--all-features"]}
