"""The rayconformance conformance suite: tests by resource (raycluster, rayjob, rayservice)."""
