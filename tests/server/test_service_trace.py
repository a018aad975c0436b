"""OpenTelemetry traces of the proxy's turns (the SDK's in-memory exporter, the proxy on a
loopback port, the official openai SDK as client)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, UPSTREAM_KEY, Proxy, free_port, script, spawn_worker, stats

from copage.llm.fake_server import FakeServer

FACTS = ["My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
         "My budget is 450 dollars.", "The meeting moved to Thursday."]


def chat(proxy: Proxy, history: list[dict[str, Any]], text: str, **kw: Any) -> Any:
    history.append({"role": "user", "content": text})
    raw = proxy.client().chat.completions.with_raw_response.create(
        model="fake-model", messages=history, **kw)
    comp = raw.parse()
    history.append({"role": "assistant", "content": comp.choices[0].message.content})
    return raw


def named(spans: Any, name: str) -> list[Any]:
    return [s for s in spans if s.name == name]


def test_each_turn_is_a_trace_with_its_steps(proxy: Proxy, otel_spans: Any) -> None:
    history: list[dict[str, Any]] = []
    raws = [chat(proxy, history, fact) for fact in FACTS]
    raw = chat(proxy, history, "Where does my sister live? RECALL p1")
    spans = otel_spans.get_finished_spans()
    turns = named(spans, "copage.turn")
    assert len(turns) == 5
    cid = raw.headers["x-copage-conversation"]
    assert {t.attributes["copage.conversation_id"] for t in turns} == {cid}
    assert {t.attributes["copage.tenant"] for t in turns} == {"alice"}
    assert {t.attributes["copage.front_end"] for t in turns} == {"proxy"}
    assert all(t.attributes["copage.turn.stored"] is True for t in turns)
    # the trace id of each turn is in its X-Copage-Stats
    ids = [stats(r.headers)["trace_id"] for r in [*raws, raw]]
    assert ids == [f"{t.context.trace_id:032x}" for t in turns]
    # ... and the inspector shows it with the turn's answer
    ui = httpx.get(f"{proxy.url}/ui/api/conversations/{cid}",
                   headers={"Authorization": f"Bearer {KEY_A}"}).json()
    answers = [t for p in ui["pages"] for t in p["turns"]] + ui["open_turns"]
    assert [t.get("trace_id") for t in answers if t["role"] == "assistant"] == ids
    last = turns[-1]
    kids = [s for s in spans if s.parent is not None and s.parent.span_id == last.context.span_id]
    assert sorted(s.name for s in kids if s.name != "copage.evict") == [
        "copage.recall", "copage.upstream", "copage.upstream"]
    (recall,) = named(kids, "copage.recall")
    assert recall.attributes["copage.recall.page"] == "p1"
    assert recall.attributes["copage.recall.status"] == "paged_in"
    ups = named(kids, "copage.upstream")
    assert [u.attributes["gen_ai.usage.input_tokens"] for u in ups] == [10, 10]
    # pages evicted by the turns' messages, by id
    evicted = [p for s in named(spans, "copage.evict") for p in s.attributes["copage.evict.pages"]]
    assert "p1" in evicted and "p2" in evicted
    # never message text, never a key
    wire = json.dumps([dict(s.attributes) for s in spans])
    assert not any(f in wire for f in FACTS) and "Marta" not in wire
    assert KEY_A not in wire and UPSTREAM_KEY not in wire


def test_the_speculative_fill_is_a_span(make_proxy: Any, otel_spans: Any) -> None:
    proxy = make_proxy(recall_mode="speculative")
    history: list[dict[str, Any]] = []
    for fact in FACTS:
        chat(proxy, history, fact)
    otel_spans.clear()
    chat(proxy, history, "Where does my sister Marta live? Remind me.")
    spans = otel_spans.get_finished_spans()
    (turn,) = named(spans, "copage.turn")
    assert turn.attributes["copage.recall_mode"] == "speculative"
    (fill,) = named(spans, "copage.page_in")
    assert fill.parent.span_id == turn.context.span_id
    assert "p1" in fill.attributes["copage.fill.pages"]
    assert fill.attributes["copage.fill.best"] == "p1"
    assert "Marta" in json.dumps(proxy.upstream.received[-1]["messages"])  # the fill was sent


def test_no_trace_id_when_off(proxy: Proxy) -> None:
    raw = chat(proxy, [], "Hello there.")
    assert "trace_id" not in stats(raw.headers)


class Collector:
    """A loopback OTLP/HTTP receiver: keeps the spans of every ``POST /v1/traces``."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        self.spans: list[Any] = []
        spans = self.spans

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


def test_serve_otel_exports_over_otlp(tmp_path: Any) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    collector = Collector()
    port = free_port()
    with FakeServer(script) as up:
        proc = spawn_worker(port, up.url, f"sqlite://{tmp_path / 's.db'}", "--otel",
                            collector.url, env={"OTEL_BSP_SCHEDULE_DELAY": "50"})
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY_A,
                                   max_retries=0)
            raw = client.chat.completions.with_raw_response.create(
                model="fake-model", messages=[{"role": "user", "content": "Hi there."}])
            trace_id = stats(raw.headers)["trace_id"]
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not any(
                    s.name == "copage.turn" for s in collector.spans):
                time.sleep(0.05)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            collector.httpd.shutdown()
    turns = [s for s in collector.spans if s.name == "copage.turn"]
    assert len(turns) == 1 and turns[0].trace_id.hex() == trace_id
    attrs = {a.key: a.value for a in turns[0].attributes}
    assert attrs["copage.tenant"].string_value == "alice"
    assert any(s.name == "copage.upstream" for s in collector.spans)
