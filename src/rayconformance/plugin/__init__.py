"""The pytest plugin: `wiring.py` is the `pytest11` entry point (`rayconformance.plugin.wiring`), which only
registers the options, the markers and each job's plugin object (run/, report/, fieldcov/) and the fixtures
(fixtures/session_fixtures.py, fixtures/pertest.py); `hooks.py` holds the hooks the suite offers to vendors'
plugins."""
