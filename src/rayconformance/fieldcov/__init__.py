"""Field coverage: how much of the ray.io API the tests of a run set and assert, per CRD the operator installed.

- paths.py: the fields of a CRD's schema, of a created or patched body, and their `Kind:path` text
- record.py: what the running test sets (every ray.io create and patch) and declares it asserts
- assertions_file.py: conformance/field-assertions.yaml, the fields each test body asserts (declared beside the tests)
- copies.py: fields asserted through a copy (an owner's cluster spec a test checked reached its RayCluster unchanged)
- coverage.py: the report's `fieldCoverage` section, from the cluster's CRDs and every test's recording
- (report/field_coverage.py: the line per CRD a run ends with, the table in report.html, the `field-coverage`
  command's text)
- operator-keys.yaml: the rayStartParams keys and ray.io/* annotations the operator reads (counted as fields)
- exclusions.yaml: the fields no test can cover here, each with why

A field is *set* when some test's create or patch body contains it; it is *asserted* only when a test says it
checks the field's effect, which setting it does not:

    # conformance/field-assertions.yaml, for tests whose module is not to be edited (the break ledger keys
    # each verified case on its test module's text): counted as the marker is
    test_suspend_and_resume: [RayCluster:spec.suspend]

    @pytest.mark.covers("RayCluster:spec.suspend", "RayCluster:metadata.annotations[ray.io/ft-enabled]")
    def test_...(ctx): ...             # counted when the test ran (not skipped)

    ctx.covers("RayJob:spec.shutdownAfterJobFinishes")   # inside a test, where the assertion is

    @fieldcov.record.covers("RayCluster:spec.workerGroupSpecs[].replicas")   # on a must-hold helper:
    def pods_must_match_replicas(api, namespace, name, timeout): ...           # each call declares it

    ctx.covers_copied("RayJob:spec.rayClusterSpec", "RayCluster:spec", PATHS)   # or record.declare_copied:
    # the owner's values at PATHS (relative, e.g. "headGroupSpec.serviceType") reached the RayCluster unchanged;
    # each such owner field counts as asserted *through its copy* (reported apart from those asserted directly)
    # when the run asserts the field it was copied to (copies.py). Keep PATHS literal module-level data.

A declared field also covers the fields under it (`spec.autoscalerOptions` covers all its fields) and the node it
lies in (`...template.spec.nodeSelector` covers the pod template). Map keys are written `[key]`, array items `[]`.
"""
