"""rayservice conformance tests."""
