"""The conformance report: `results.py` (the tests' results and `conformance-report.yaml`, whose schema is
in `schema/`), `failures.py` and `diagnostics.py` (what a failed test left behind, linked from report.html),
`traffic_plot.py` (a traffic test's load drawn in report.html), `field_coverage.py` (the field-coverage section
as people read it: a line per CRD, a table, the `field-coverage` command), `summary.py` (the table a run ends
with), `baseline.py` (what regressed since an earlier report), `certify.py` and `tallies.py` (what makes a report
checkable, and `verify`), `signing.py` (a certifier's Ed25519 signature over a run's report files, `keygen`,
`verify --key`), `publish.py` (the published runs, one per operator release), `reproduce.py` (a run's selection run
again and the verdicts compared, `reproduce`).
Also `archive.py` (the run's portable archive), `counting.py` (how a report counts its tests), `release.py` (the suite's releases and versions), `page.py` (report.html). A sharded
run's reports are merged into one by run/merge.py."""
