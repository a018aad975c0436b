"""One conversation end to end through the proxy to SmolLM2 (llama-server), with the openai SDK.

A recording proxy between copage's proxy and llama-server captures what copage
sent upstream; the server's ``/apply-template`` shows what the model was given.
Answer quality is never asserted: the model is tiny.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from realmodel import LlamaServer, RecordingProxy, assert_verbatim, llama_server, shown_tools

from copage.core.config import PagerConfig
from copage.server.app import create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]
FACTS = ['I am allergic to peanuts & <shellfish>.', 'My budget is "900" dollars.',
         "My sister is Maria.", "I like hiking in the Alps."]
QUESTION = "What am I allergic to?"


@pytest.fixture(scope="module")
def real_server() -> Iterator[LlamaServer]:
    with llama_server() as server:
        yield server


def test_conversation_through_proxy(real_server: LlamaServer, tmp_path: Path) -> None:
    with RecordingProxy(real_server.base_url) as upstream:
        settings = ServeSettings(upstream=upstream.base_url, store=f"sqlite://{tmp_path}/r.db",
                                 paging=PagerConfig(boundary="fixed_2", resident_pages=1),
                                 upstream_timeout=120.0, max_recalls=1,
                                 recall_mode="tool")
        with ServerThread(create_app(settings)) as srv:
            client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
            history: list[dict[str, Any]] = []
            ids, stats = set(), []
            for text in [*FACTS, QUESTION]:
                history.append({"role": "user", "content": text})
                raw = client.chat.completions.with_raw_response.create(
                    model="smollm2", messages=history, max_tokens=32, temperature=0)
                comp = raw.parse()
                assert comp.choices[0].message.content is not None
                assert comp.usage is not None and comp.usage.prompt_tokens > 0
                ids.add(raw.headers["x-copage-conversation"])
                stats.append(json.loads(raw.headers["x-copage-stats"]))
                history.append({"role": "assistant", "content": comp.choices[0].message.content})
            stream = client.chat.completions.create(model="smollm2", messages=[
                *history, {"role": "user", "content": "Thanks."}], max_tokens=16, stream=True)
            streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert isinstance(streamed, str)
    assert len(ids) == 1, "transparent mode kept one conversation"
    assert stats[-1]["evicted_pages"] >= 2 and stats[-1]["pages"] >= 4
    assert stats[-1]["prompt_tokens"] > 0 and stats[-1]["upstream_calls"] >= 1

    # What the model was shown for the question: the recall tool and the bookmarks,
    # the resident turns as written, and not the evicted first fact.
    asked = [c for c in upstream.chats if QUESTION in str(c.body["messages"][-1].get("content"))]
    assert asked, "the question never went upstream"
    body = asked[0].body
    prompt = real_server.evaluated(body, asked[0].reply)
    assert body["tools"] and shown_tools(prompt) == body["tools"]
    assert_verbatim(body, prompt)
    assert "[p1:" in prompt  # the evicted first page's bookmark
    assert FACTS[0] not in prompt, "the evicted page was sent anyway"
    assert FACTS[-1] in prompt  # the resident page


def test_streaming_through_proxy_to_a_real_server(real_server: LlamaServer,
                                                   tmp_path: Path) -> None:
    """llama-server's own SSE stream passes through as several deltas; what was
    streamed is what was stored (no recording proxy in between: it buffers)."""
    import time

    settings = ServeSettings(upstream=real_server.base_url, store=f"sqlite://{tmp_path}/s.db",
                             paging=PagerConfig(boundary="fixed_2", resident_pages=1),
                             upstream_timeout=120.0, max_recalls=1,
                                 recall_mode="tool")
    with ServerThread(create_app(settings)) as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="smollm2", stream=True, max_tokens=48, temperature=0,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "Write two sentences about the sea."}])
        got: list[tuple[float, str]] = []
        usage = None
        for chunk in raw.parse():
            if chunk.choices and chunk.choices[0].delta.content:
                got.append((time.monotonic(), chunk.choices[0].delta.content))
            usage = chunk.usage or usage
        cid = raw.headers["x-copage-conversation"]
        stored = srv.server.config.app.state.proxy.store.load(cid, tenant="default")
    assert len(got) >= 5, "the answer arrived in one piece"
    assert got[-1][0] - got[0][0] > 0.05  # spread over the generation, not one burst
    assert usage is not None and usage.completion_tokens > 0
    assert stored.turns[-1].role == "assistant"
    assert stored.turns[-1].text == "".join(t for _, t in got)


def test_proxy_at_its_default_recall_mode_shows_the_matching_page(real_server: LlamaServer,
                                                                   tmp_path: Path) -> None:
    """``copage serve``'s default recall mode (speculative): no recall tool and no
    bookmark list go upstream; the evicted page matching the question is shown, for that
    request only, just before it; the model's server renders it as sent."""
    from copage.session.modes import DEFAULT_RECALL_MODE

    assert DEFAULT_RECALL_MODE == "speculative"
    with RecordingProxy(real_server.base_url) as upstream:
        settings = ServeSettings(upstream=upstream.base_url, store=f"sqlite://{tmp_path}/d.db",
                                 paging=PagerConfig(boundary="fixed_2", resident_pages=1),
                                 upstream_timeout=120.0)
        with ServerThread(create_app(settings)) as srv:
            client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
            history: list[dict[str, Any]] = []
            for text in [*FACTS, "Which peanuts and shellfish allergy did I mention?"]:
                history.append({"role": "user", "content": text})
                comp = client.chat.completions.create(model="smollm2", messages=history,
                                                      max_tokens=16, temperature=0)
                history.append({"role": "assistant",
                                "content": comp.choices[0].message.content or ""})
    body = upstream.chats[-1].body
    assert not body.get("tools")
    prompt = real_server.evaluated(body, upstream.chats[-1].reply)
    assert "[p1:" not in prompt  # no bookmark list in this mode
    texts = [str(m.get("content")) for m in body["messages"]]
    fill = next(i for i, t in enumerate(texts) if "peanuts &amp; &lt;shellfish&gt;" in t
                or "peanuts & <shellfish>" in t)
    assert fill == len(texts) - 2 and "allergy" in texts[-1]  # just before the question
    assert_verbatim(body, prompt)
