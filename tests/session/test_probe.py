"""Probes (questions not stored) and speculative page-in."""

from __future__ import annotations

import pytest
from session_helpers import new_memory, state_of

from copage.eval.methods.probe_driver import ask_probe
from copage.eval.runner.probe_metrics import recall_precision, trigger_rate
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat, Speculator


async def test_probe_is_not_stored_but_recall_kept() -> None:
    mem = new_memory()
    n = len(mem.turns)
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("peanuts")
    rec = await ask_probe(PagedChat(mem, model, recall_mode="tool"), "What am I allergic to?", ["p1"])
    assert len(mem.turns) == n
    assert rec.answer == "peanuts" and rec.evicted == ("p1",) and rec.right_page
    assert rec.report is not None and rec.report.user_turn_id is None
    assert "p1" in mem.resident
    assert model.requests[0].messages[-1] == {"role": "user", "content": "What am I allergic to?"}
    assert trigger_rate([rec]).hits == 1 and recall_precision([rec]).hits == 1


async def test_probe_keep_pages_false_rolls_back() -> None:
    mem = new_memory()
    before = state_of(mem)
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("peanuts")
    rec = await ask_probe(PagedChat(mem, model, recall_mode="tool"),
        "allergy?", ["p1", "p6"], keep_pages=False)
    assert rec.evicted == ("p1",) and rec.recalls[0].status == "paged_in"
    assert state_of(mem) == before


async def test_probe_unknown_page() -> None:
    chat = PagedChat(new_memory(), ScriptedModel())
    with pytest.raises(ValueError, match=r"unknown needed page\(s\) \['p42'\]; pages are p1..p6"):
        await ask_probe(chat, "q", ["p42"])


def test_speculative_score_definition() -> None:
    mem = new_memory()
    spec = Speculator()
    best, score = spec.score(mem.pager, "peanut allergy satay")
    assert best == "p1" and score > 0.35
    best, score = spec.score(mem.pager, "what should I cook tonight for friends?")
    assert score < 0.35
    assert spec.score(mem.pager, "the a of") == (None, 0.0)


async def test_speculative_page_in_on() -> None:
    mem = new_memory()
    model = ScriptedModel().reply("No satay.")
    chat = PagedChat(mem, model, speculative=True)
    rec = await ask_probe(chat, "Can I eat peanut satay with my allergy?", ["p1"])
    # a first-person question, and the four evicted pages fit the allowance: all of
    # them, the best-matching first (``Speculator.whole``)
    assert rec.speculative[0] == "p1" and set(rec.speculative) == {"p1", "p2", "p3", "p4"}
    assert rec.speculative_hit and not rec.needs_recall
    assert rec.report is not None and rec.report.speculative_score is not None
    # The fill is shown for this probe only, just before the question; nothing is
    # paged in to the resident set (nothing evicted, the bookmarks unchanged).
    assert "p1" in mem.evicted and mem.resident == ["p5", "p6"]
    messages = model.requests[0].messages
    assert messages[-1] == {"role": "user", "content": "Can I eat peanut satay with my allergy?"}
    assert messages[-2]["role"] == "user" and '<page id="p1">' in messages[-2]["content"]
    assert "peanut allergy" in messages[-2]["content"]
    assert not any("peanut allergy" in str(m.get("content")) for m in messages[1:-2])


async def test_speculative_off_in_tool_mode_and_below_threshold() -> None:
    mem = new_memory()
    rec = await ask_probe(PagedChat(mem, ScriptedModel().reply("?"), recall_mode="tool"),
        "Can I eat peanut satay with my allergy?", ["p1"])
    assert rec.speculative == () and rec.needs_recall
    rec = await ask_probe(PagedChat(mem, ScriptedModel().reply("?")),  # the default mode
        "Can one eat peanut satay with that allergy?", ["p1"])
    # the best passage holds p1's turns (and, past its end, the next page's first turn)
    assert rec.speculative[0] == "p1" and rec.speculative_hit
    mem = new_memory()
    chat = PagedChat(mem, ScriptedModel().reply("?"), speculative=True, speculative_threshold=5.0)
    report = await chat.send("I could eat peanut satay despite my allergy.")
    assert report.speculative == () and report.speculative_score is not None
    assert "p1" in mem.evicted


async def test_speculative_neighbours_in_send() -> None:
    mem = new_memory(resident_pages=4)
    fill_more = [f"filler talk number {i} about weather" for i in range(10)]
    for i, t in enumerate(fill_more):
        mem.add("user" if i % 2 == 0 else "assistant", t)
    assert "p2" in mem.evicted and "p3" in mem.evicted
    chat = PagedChat(mem, ScriptedModel().reply("ok"), speculative=True, speculative_neighbours=1)
    # a statement (a question would see every evicted page while they all fit)
    report = await chat.send("Let us talk about the laptop budget in dollars.")
    assert report.speculative[0] == "p2" and set(report.speculative) == {"p1", "p2", "p3"}
    assert {"p1", "p2", "p3"} <= set(mem.evicted)  # shown for the turn, not made resident


async def test_speculative_event_recorded() -> None:
    mem = new_memory()
    chat = PagedChat(mem, ScriptedModel().reply("ok"), speculative=True)
    await chat.send("Can one eat peanut satay with that allergy?")
    kinds = [(e.kind, e.page_index, dict(e.detail)) for e in mem.store.events("conv")]
    spec = [k for k in kinds if k[0] == "speculative"]
    assert len(spec) == 1 and spec[0][1] == 0 and spec[0][2]["paged_in"][0] == "p1"
    assert spec[0][2]["tokens"] > 0
    assert ("fault", 0, {"by": "speculative"}) not in kinds  # a fill pages nothing in
