"""Shared test setup: real network model calls are forbidden in every test
(loopback servers under the test's control are allowed)."""

pytest_plugins = ["copage.llm.testing"]

from typing import Any

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
