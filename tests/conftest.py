"""Shared test setup: real network model calls are forbidden in every test
(loopback servers under the test's control are allowed).

The fill's meaning channel is on by default wherever its model's files are installed
(docs/dense.md), as on CI. Tests pin it off (``COPAGE_DENSE=off``, inherited by the
servers they start) so that what they check does not depend on the machine; the tests
of the default itself (tests/dense/test_default_channel.py, tests/server/
test_edge_dense.py) lift the pin.
"""

pytest_plugins = ["copage.llm.testing"]

import os
from typing import Any

os.environ["COPAGE_DENSE"] = "off"

import pytest


@pytest.fixture
def otel_spans(monkeypatch: pytest.MonkeyPatch) -> Any:
    """OpenTelemetry on for one test: an SDK tracer provider whose spans go to the SDK's
    in-memory exporter (returned). The process's provider is put back afterwards (the
    API lets a provider be set only once, so it is swapped in place)."""
    api = pytest.importorskip("opentelemetry.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(api, "_TRACER_PROVIDER", provider)
    return exporter
