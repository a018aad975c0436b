"""``CopageSession.pop_item`` of an item that closed its page (issue 18: it rebuilt the
whole conversation). The session's own latest commit is taken back: after the pop, the
stored conversation (reopened by another session on the SQLite file) is the one that
never had the item, and it goes on the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from adapter_fixtures import PAGING

from copage.adapters.agents import CopageSession


def _item(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant",
            "content": f"item {i} about city{i % 5}, the number {i * 7} and topic{i % 3}"}


async def _view(session: CopageSession) -> Any:
    mem = session.memory()
    assert mem is not None
    stats = mem.stats().to_dict()
    del stats["prompt_cache"]  # the requests this object built
    del stats["savings"]  # read from prompt_cache
    # the latest request this object sent; the conversation's own figure is context()'s
    stats["prompt_tokens"] = mem.pager.stats().prompt_tokens
    events = [(e.seq, e.turn_seq, e.kind, e.page_index, dict(e.detail))
              for e in mem.store.events(mem.conversation_id)]
    return (await session.get_items(), [(t.id, t.role, t.text) for t in mem.turns],
            [(p.id, p.text) for p in mem.pages], {k: v.text for k, v in mem.bookmarks().items()},
            mem.resident, stats, events, mem.conversation_id)


async def test_popped_page_closing_item_leaves_the_conversation_without_it(
        tmp_path: Path) -> None:
    a = CopageSession("s", f"sqlite:///{tmp_path / 'a.db'}", **PAGING)
    ref = CopageSession("s", f"sqlite:///{tmp_path / 'ref.db'}", **PAGING)
    # batches of items (pages of 4 items); each batch's last item closes a page, is
    # popped, and ref never gets it
    n, pops = 0, 0
    for size in (4, 3, 2, 5, 1, 6):
        batch = [_item(n + k) for k in range(size)]
        n += size
        await a.add_items(batch)
        mem = a.memory()
        assert mem is not None
        if len(mem.turns) % 4:  # the last item did not close a page
            await ref.add_items(batch)
            continue
        popped = await a.pop_item()
        assert popped is not None and popped["content"] == batch[-1]["content"]
        pops += 1
        await ref.add_items(batch[:-1])
        other = CopageSession("s", a.store, **PAGING)  # another process on the file
        assert await _view(other) == await _view(ref)
    assert pops >= 3
    assert (a.memory() or pytest.fail()).conversation_id == "s"  # no rebuild under "s~pop"
    for session in (a, ref):
        await session.add_items([_item(100 + k) for k in range(7)])
    assert await _view(CopageSession("s", a.store, **PAGING)) == await _view(ref)
    assert await _view(a) == await _view(ref)
