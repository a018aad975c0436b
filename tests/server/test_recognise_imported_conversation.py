"""A conversation the proxy built on SQLite, exported and imported into PostgreSQL, is
continued by a proxy on PostgreSQL exactly: recognised from the resent history, and the
same next upstream request as the SQLite proxy sends."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from proxy_helpers import KEY_A, Proxy

from copage.cli.main import main
from copage.core.config import PagerConfig
from copage.stores import open_store


def test_proxy_continues_an_imported_conversation_exactly(
        make_proxy: Callable[..., Proxy], tmp_path: Path, pg_url: str) -> None:
    paging = PagerConfig(boundary="fixed_4", resident_pages=2)
    sqlite = f"sqlite://{tmp_path / 'proxy.db'}"
    a = make_proxy(store=sqlite, paging=paging, recall_mode="speculative+tool")
    client = a.client(KEY_A)
    history: list[dict[str, str]] = [{"role": "system", "content": "Be brief."}]
    for i in range(24):
        history.append({"role": "user", "content": f"note {i}: item {i * 7} goes in box {i % 5}"})
        reply = client.chat.completions.create(model="m", messages=history)  # transparent mode
        history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    store = a.state.store
    (conv,) = store.list_conversations(tenant="alice")
    assert conv.pages >= 10
    out = tmp_path / "moved.jsonl"
    assert main(["conversations", "export", conv.id, "--store", sqlite, "--tenant", "alice",
                 "-o", str(out)]) == 0
    assert main(["conversations", "import", str(out), "--store", pg_url,
                 "--tenant", "alice"]) == 0
    b = make_proxy(store=pg_url, paging=paging, recall_mode="speculative+tool")
    nxt = [*history, {"role": "user", "content": "which box holds item 14?"}]
    sent = []
    for proxy in (a, b):
        raw = proxy.client(KEY_A).chat.completions.with_raw_response.create(
            model="m", messages=nxt)
        assert raw.headers["x-copage-conversation"] == conv.id  # recognised, not new
        sent.append(json.dumps(proxy.upstream.received[-1]))
    assert sent[0] == sent[1]
    body = json.loads(sent[0])
    assert len(body["messages"]) < len(nxt) - 20  # the pages are evicted: state mattered
    pg = open_store(pg_url)
    # both stored the same new turns (the same chain of transcript hashes; only the
    # request times differ)
    shown = lambda st: [(t.id, t.role, t.text, t.meta.get("h"))
                        for t in st.load(conv.id, tenant="alice").turns]
    assert shown(pg) == shown(store)
    pg.close()
