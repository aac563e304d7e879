"""raycluster conformance tests."""
