"""The inspector's numbers agree with its page table and timeline: faults counted from the
same events, fills (the default mode's recall) shown beside recalls, and the list names a
conversation by its first message and time, not only its random id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from proxy_helpers import KEY_A, Proxy

AUTH = {"Authorization": f"Bearer {KEY_A}"}
FACTS = ["I live in Lisbon near the river.", "I like green tea.",
         "The meeting moved to Thursday.", "My budget is 450 dollars."]


def _talk(proxy: Proxy, last: str) -> str:
    client = proxy.client()
    history: list[dict[str, Any]] = []
    for text in [*FACTS, last]:
        history.append({"role": "user", "content": text})
        answer = client.chat.completions.create(model="m", messages=history)
        history.append({"role": "assistant", "content": answer.choices[0].message.content})
    (conv,) = httpx.get(f"{proxy.url}/ui/api/conversations", headers=AUTH).json()[
        "conversations"]
    assert conv["first_message"] == FACTS[0], conv
    assert conv["updated_at"] > 0
    return str(conv["id"])


def test_faults_in_the_summary_are_the_page_table_s(proxy: Proxy) -> None:
    cid = _talk(proxy, "Where do I live? RECALL p1")
    c = httpx.get(f"{proxy.url}/ui/api/conversations/{cid}", headers=AUTH).json()
    table = sum(p["faults"] for p in c["pages"])
    assert table >= 1 and c["counts"]["faults"] == table
    assert c["counts"]["recalls"] == sum(len(g["recalls"]) for g in c["recalls_by_turn"]) >= 1


def test_fills_are_counted_and_listed_turn_by_turn(make_proxy: Callable[..., Proxy]) -> None:
    proxy = make_proxy(recall_mode="speculative")
    cid = _talk(proxy, "Which city near the river do I live in?")
    c = httpx.get(f"{proxy.url}/ui/api/conversations/{cid}", headers=AUTH).json()
    fills = [e for e in c["events"] if e["kind"] == "speculative" and e["detail"].get("paged_in")]
    assert fills, "the default mode filled a page"
    assert c["counts"]["fills"] == len(fills)
    listed = [r for g in c["recalls_by_turn"] for r in g["recalls"]]
    assert [r for r in listed if r["kind"] == "speculative"] == fills
