"""rayconformance: the installed import package of the suite.

Here, a folder per job: `testing/` (what a conformance test works through: `ctx`, handles on its Ray resources, what
must hold, waiting, watches, Ray's APIs, traffic), `plugin/` (the pytest plugin, entry point
`rayconformance.plugin.wiring`, and the hooks offered to vendors), `run/` (a conformance run: options, selection,
shards, workers, bring-up, the end), `report/` (the conformance report, verify, publish), `kube/` (Kubernetes
access), `operator/` (the operator under test: profiles, install, Helm, source trees), `providers/` (how a run gets
its cluster), `fieldcov/` (field coverage) and `matrix/` (the version matrix); beside them the commands
(`__main__.py`) and the modules any layer may use, which import nothing of the project: `features/` (the
conformance features), `errors.py`, `describe.py` and `schemas.py` (the JSON Schemas of the files a user writes, and
their one-line check). Two folders of the repository install into it too (`pyproject.toml`, package-dir):
`fixtures/` as `rayconformance.fixtures` (the pytest fixtures) and `clusters/` as `rayconformance.clusters` (cluster
definitions and test beds). Nothing imports a top-level `fixtures` or `clusters`: those names belong to other
distributions.
"""
