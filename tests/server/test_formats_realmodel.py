"""Every client format through the proxy to SmolLM2 (llama-server), with its official SDK;
the upstream speaking Chat Completions, and for one test Anthropic Messages.

A recording proxy between copage and llama-server captures what copage sent upstream.
Answer quality is never asserted: the model is tiny.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from formats import FORMATS, Client
from proxy_helpers import Proxy
from realmodel import LlamaServer, RecordingProxy, llama_server

from copage.core.config import PagerConfig
from copage.memory import PagedMemory
from copage.server.app import create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]
FACTS = ["I am allergic to peanuts.", "My budget is 900 dollars.", "My sister is Maria.",
         "I like hiking in the Alps."]


@pytest.fixture(scope="module")
def real_server() -> Iterator[LlamaServer]:
    with llama_server() as server:
        yield server


def _run(real_server: LlamaServer, tmp_path: Path, fmt: str, api: str) -> None:
    with RecordingProxy(real_server.base_url) as upstream:
        settings = ServeSettings(upstream=upstream.base_url, upstream_api=api,
                                 store=f"sqlite://{tmp_path}/{fmt}.db",
                                 paging=PagerConfig(boundary="fixed_2", resident_pages=1),
                                 upstream_timeout=120.0, max_recalls=1,
                                 recall_mode="tool")
        with ServerThread(create_app(settings)) as srv:
            c = Client(Proxy(srv, None), fmt, model="smollm2", max_tokens=24,  # type: ignore[arg-type]
                       stream=fmt == "responses")
            for text in FACTS:
                seen = c.say(text)
                assert isinstance(seen.text, str) and seen.text
            store = srv.server.config.app.state.proxy.store
            (conv,) = store.list_conversations(tenant="default")
            mem = PagedMemory(store=store, conversation_id=conv.id, create=False)
            assert [t.role for t in mem.turns if t.role != "tool"][:8] == [
                "user", "assistant"] * 4
            assert mem.stats().evicted >= 2
    path = {"chat": "/chat/completions", "responses": "/responses",
            "messages": "/messages"}[api]
    sent = [e for e in upstream.exchanges if e.path.endswith(path)]
    assert sent and all(e.status == 200 for e in sent), [e.reply for e in sent][-1:]
    last = json.dumps(sent[-1].body)
    assert "[p1:" in last, "the model is shown the evicted page's bookmark"
    assert FACTS[0] not in last, "the evicted first fact was sent anyway"
    assert "recall" in last


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_client_format_to_smollm2(real_server: LlamaServer, tmp_path: Path,
                                       fmt: str) -> None:
    _run(real_server, tmp_path, fmt, "chat")


def test_anthropic_client_to_smollm2_over_messages(real_server: LlamaServer,
                                                   tmp_path: Path) -> None:
    _run(real_server, tmp_path, "messages", "messages")


def test_chat_client_to_smollm2_over_responses(real_server: LlamaServer,
                                               tmp_path: Path) -> None:
    _run(real_server, tmp_path, "chat", "responses")
