"""rayjob conformance tests."""
