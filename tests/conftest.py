"""Shared test setup: real network model calls are forbidden in every test
(loopback servers under the test's control are allowed)."""

pytest_plugins = ["copage.llm.testing"]
