"""OpenTelemetry traces of copage's turns: one span per turn, a child per step.

Every front end (``PagedChat``, the proxy, the adapters) opens a :class:`TurnTrace` for
a turn with :func:`turn` and reports its steps to it; the engine
(:func:`copage.session.engine.run_recall_loop`) reports each upstream call and each
recall. The spans, through the OpenTelemetry *API* only:

* ``copage.turn``: the turn (``copage.conversation_id``, ``copage.tenant``,
  ``copage.front_end``, ``copage.recall_mode``, resident/evicted page counts, the
  turn's token counts, whether it was stored);
* ``copage.page_in``: the speculative fill (``copage.fill.pages``, ``.best``, ``.score``,
  ``.tokens``);
* ``copage.evict``: pages evicted by storing the turn's messages (``copage.evict.pages``);
* ``copage.recall``: one recall served (``copage.recall.page``, ``.status``, ``.evicted``);
* ``copage.upstream``: one model call (``gen_ai.usage.input_tokens``,
  ``gen_ai.usage.output_tokens``, ``gen_ai.response.finish_reasons``).

Page ids, counts, scores and ids only: message text is never put on a span unless
asked (:func:`configure` ``content=True``, or ``COPAGE_OTEL_CONTENT=1``), and then only
the turn's question and answer. Keys and headers never are.

Off unless configured: spans are made only when the ``opentelemetry-api`` package is
installed *and* a tracer provider has been set in the process (by the application, by
``opentelemetry-instrument``, or by :func:`setup`, which ``copage serve --otel`` and a
set ``OTEL_EXPORTER_OTLP_ENDPOINT`` call). Otherwise :func:`turn` returns
:data:`NULL`, whose methods do nothing, and nothing of OpenTelemetry is imported
(``pip install 'copage[otel]'`` brings the API, the SDK and the OTLP exporter).

Spans are started and ended with explicit parents and times, never made "current":
a turn runs across the yields of async generators and across threads (the proxy's
lock is taken in one and released in another), where an attached context would
leak into whichever task resumes next.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from copage.session.records import RecallRecord
from copage.session.speculate import Speculation

__all__ = ["NULL", "TRACER_NAME", "OtelMissing", "TurnTrace", "active", "configure",
           "now_ns", "setup", "setup_from_env", "turn"]

TRACER_NAME = "copage"
ENV_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_settings: dict[str, bool] = {"content": False}


class OtelMissing(RuntimeError):
    """The OpenTelemetry packages are not installed (the message names the extra)."""


def configure(*, content: bool | None = None) -> None:
    """Process-wide trace settings: ``content`` puts the turn's question and answer on its
    span (off by default: message text stays out of traces)."""
    if content is not None:
        _settings["content"] = bool(content)


def _content() -> bool:
    return _settings["content"] or os.environ.get("COPAGE_OTEL_CONTENT", "") in ("1", "true")


_missing: list[bool] = []  # the API's import failed once: not tried on every turn again


def _api() -> Any:
    """The ``opentelemetry.trace`` module, or None when the API is not installed."""
    if _missing:
        return None
    try:
        from opentelemetry import trace as api
    except ImportError:
        _missing.append(True)
        return None
    return api


def active() -> bool:
    """Whether turns are traced: the API is installed and a tracer provider was set."""
    api = _api()
    if api is None:
        return False
    provider = api.get_tracer_provider()
    return not isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider)


def setup(endpoint: str | None = None, *, service_name: str = "copage",
          exporter: Any = None) -> Any:
    """Set the process's tracer provider: the SDK's, exporting in batches over OTLP/HTTP to
    ``endpoint`` (default: the standard ``OTEL_EXPORTER_OTLP_*`` variables, else
    ``http://localhost:4318``), or to ``exporter`` when given (tests pass the SDK's
    in-memory exporter, with a simple processor). Returns the provider.

    Raises:
        OtelMissing: ``opentelemetry-sdk`` (or the OTLP exporter) is not installed.
    """
    try:
        from opentelemetry import trace as api
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as e:
        raise OtelMissing("OpenTelemetry traces need the 'otel' extra: "
                          "pip install 'copage[otel]'") from e
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as e:
            raise OtelMissing("OTLP export needs the 'otel' extra: "
                              "pip install 'copage[otel]'") from e
        url = endpoint
        if url is not None and not url.rstrip("/").endswith("/v1/traces"):
            url = url.rstrip("/") + "/v1/traces"  # the base endpoint, as the variable gives it
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    api.set_tracer_provider(provider)
    return provider


def setup_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """:func:`setup` when a standard OTLP endpoint variable or ``COPAGE_OTEL=1`` is set (and
    no provider is yet); returns whether traces are on."""
    env = os.environ if environ is None else environ
    if active():
        return True
    if not any(env.get(name) for name in ENV_ENDPOINTS) and \
            env.get("COPAGE_OTEL", "") not in ("1", "true"):
        return False
    setup()  # the exporter reads the variables itself
    return True


def _now() -> int:
    return time.time_ns()


class TurnTrace:
    """The spans of one turn (see module docstring); :data:`NULL` when traces are off.

    Args:
        conversation_id: the turn's conversation.
        tenant: its owner.
        front_end: who runs the turn (``library``, ``proxy``, ``litellm``, ``langchain``, ...).
        recall_mode: the recall mode's name.
        start_ns: when the turn began (default: now), in ns since the epoch.
    """

    enabled = True

    def __init__(self, conversation_id: str, *, tenant: str = "default",
                 front_end: str = "library", recall_mode: str = "",
                 start_ns: int | None = None) -> None:
        api = _api()
        self._api = api
        self._tracer = api.get_tracer(TRACER_NAME)
        self.start_ns = start_ns or _now()
        self._span = self._tracer.start_span("copage.turn", start_time=self.start_ns,
                                             attributes={
                                                 "copage.conversation_id": conversation_id,
                                                 "copage.tenant": tenant,
                                                 "copage.front_end": front_end,
                                                 "copage.recall_mode": recall_mode})
        self._parent = api.set_span_in_context(self._span)
        self._ended = False
        self.upstream_calls = 0

    @property
    def trace_id(self) -> str:
        """The turn's trace id (32 hex digits), as OTLP backends show it."""
        return f"{self._span.get_span_context().trace_id:032x}"

    def _child(self, name: str, start: int, end: int | None,
               attributes: Mapping[str, Any]) -> None:
        span = self._tracer.start_span(name, context=self._parent, start_time=start,
                                       attributes={k: v for k, v in attributes.items()
                                                   if v is not None})
        span.end(end_time=end or _now())

    def fill(self, spec: Speculation | None, start_ns: int, end_ns: int | None = None) -> None:
        """The speculative fill's span (nothing when the step did not run)."""
        if spec is None:
            return
        self._child("copage.page_in", start_ns, end_ns, {
            "copage.fill.pages": list(spec.paged_in), "copage.fill.best": spec.best,
            "copage.fill.score": round(spec.score, 4), "copage.fill.tokens": spec.tokens})

    def evictions(self, before: Iterable[str], after: Sequence[str], start_ns: int,
                  end_ns: int | None = None, *, cause: str = "add") -> None:
        """The span of the pages evicted between two views of the evicted set (none: no span)."""
        old = set(before)
        new = [p for p in after if p not in old]
        if new:
            self._child("copage.evict", start_ns, end_ns, {
                "copage.evict.pages": new, "copage.evict.count": len(new),
                "copage.evict.cause": cause})

    def recall(self, record: RecallRecord, start_ns: int, end_ns: int | None = None) -> None:
        """One recall served (or refused)."""
        self._child("copage.recall", start_ns, end_ns, {
            "copage.recall.page": record.page, "copage.recall.status": record.status,
            "copage.recall.tool": record.tool, "copage.recall.evicted": list(record.evicted)})

    def upstream(self, start_ns: int, end_ns: int | None = None, *, model: str | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None,
                 finish_reason: str | None = None, error: BaseException | None = None) -> None:
        """One model call (its tokens as the provider counted them)."""
        self.upstream_calls += 1
        attrs: dict[str, Any] = {
            "gen_ai.request.model": model, "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else None,
            "error.type": type(error).__name__ if error is not None else None}
        span = self._tracer.start_span("copage.upstream", context=self._parent,
                                       start_time=start_ns,
                                       attributes={k: v for k, v in attrs.items()
                                                   if v is not None})
        if error is not None:
            span.set_status(self._api.Status(self._api.StatusCode.ERROR, type(error).__name__))
        span.end(end_time=end_ns or _now())

    def text(self, question: str | None = None, answer: str | None = None) -> None:
        """The turn's question and answer, only when content is asked for (:func:`configure`)."""
        if not _content():
            return
        if question is not None:
            self._span.set_attribute("copage.question", question)
        if answer is not None:
            self._span.set_attribute("copage.answer", answer)

    def set(self, **attributes: Any) -> None:
        """More attributes on the turn's span (``copage.`` + the name; None: skipped)."""
        for key, value in attributes.items():
            if value is not None:
                self._span.set_attribute(f"copage.{key}", value)

    def end(self, *, stored: bool, error: BaseException | None = None,
            end_ns: int | None = None) -> None:
        """End the turn's span (once; later calls do nothing)."""
        if self._ended:
            return
        self._ended = True
        self._span.set_attribute("copage.turn.stored", stored)
        if error is not None:
            self._span.set_attribute("error.type", type(error).__name__)
            self._span.set_status(self._api.Status(self._api.StatusCode.ERROR,
                                                   type(error).__name__))
        self._span.end(end_time=end_ns or _now())


class _NullTrace(TurnTrace):
    """A turn that is not traced: every method does nothing (and nothing is imported)."""

    enabled = False

    def __init__(self) -> None:
        self.upstream_calls = 0

    @property
    def trace_id(self) -> str:
        return ""

    def fill(self, spec: Speculation | None, start_ns: int, end_ns: int | None = None) -> None:
        return

    def evictions(self, before: Iterable[str], after: Sequence[str], start_ns: int,
                  end_ns: int | None = None, *, cause: str = "add") -> None:
        return

    def recall(self, record: RecallRecord, start_ns: int, end_ns: int | None = None) -> None:
        return

    def upstream(self, start_ns: int, end_ns: int | None = None, *, model: str | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None,
                 finish_reason: str | None = None, error: BaseException | None = None) -> None:
        return

    def text(self, question: str | None = None, answer: str | None = None) -> None:
        return

    def set(self, **attributes: Any) -> None:
        return

    def end(self, *, stored: bool, error: BaseException | None = None,
            end_ns: int | None = None) -> None:
        return


NULL: TurnTrace = _NullTrace()
"""The trace of a turn when traces are off."""


def turn(conversation_id: str, *, tenant: str = "default", front_end: str = "library",
         recall_mode: str = "", start_ns: int | None = None) -> TurnTrace:
    """A :class:`TurnTrace` for a turn starting now, or :data:`NULL` when traces are off."""
    if not active():
        return NULL
    return TurnTrace(conversation_id, tenant=tenant, front_end=front_end,
                     recall_mode=recall_mode, start_ns=start_ns)


def now_ns() -> int:
    """The clock spans are timed with (ns since the epoch)."""
    return _now()
