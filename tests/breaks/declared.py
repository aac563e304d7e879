"""A pytest plugin for a collect-only pass over conformance/: writes each test's short name and the samples it
declares (its @pytest.mark.samples and its fixtures') as JSON to the file named by $RAYCONF_DECLARED_OUT. The
break harness reads it to tell which sample-mutating cases can share a suite session."""
from __future__ import annotations

import json
import os

DECLARED_ENV = "RAYCONF_DECLARED_OUT"


def pytest_collection_finish(session) -> None:
    from rayconformance.testing.context import declared_samples
    from rayconformance.features import short_name

    path = os.environ.get(DECLARED_ENV)
    if path:
        with open(path, "w") as f:
            json.dump({short_name(i.name): declared_samples(i) for i in session.items}, f)
