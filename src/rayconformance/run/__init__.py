"""A conformance run, from its options to its end: `options.py` (the command line, validated into one
`Options`), `state.py` (what a conformance run is, and its state), `selection.py` (which tests run),
`ray_versions.py` (the features the run's Ray is too old for), `recipe.py` (what the report records to run it
again),
`shards.py` and `merge.py` (a run split across machines, and its reports merged into one), `workers.py` (how
many xdist workers), `serial.py` (tests that run alone), `signals.py` and `stopped_workers.py` (stopping as CI
stops a run), `pressure.py` and `foreign.py` (whether the machine was starved, and by what), `progress.py`
(the time left), `setup_needs.py` (what `make conformance` builds first), `environment.py` and `bringup.py`
(the cluster and the operator, brought up once), `finish.py` (the report written, the environment torn down,
the closing lines)."""
