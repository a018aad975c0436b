"""The pager and PagedMemory: paging, context, recall, stats."""

from __future__ import annotations

import json

import pytest

from copage import PagedMemory
from copage.core.config import PagerConfig
from copage.core.registry import UnknownNameError
from copage.core.types import ToolCall, parse_page_arg

TOPICS = [
    "I am allergic to peanuts and shellfish, keep that in mind for restaurants.",
    "My budget for the Lisbon trip is $1,200 including flights.",
    "The grant deadline is March 14 and I still need two letters.",
    "Dr. Okafor moved my dentist appointment to Thursday at 3pm.",
    "I only write Rust at work, no Python please.",
    "Call my sister Priya at 555-0199 if anything changes.",
    "Yoga class is every Tuesday and Friday at 7am.",
    "We adopted a beagle called Miso last spring.",
]


def fill(mem: PagedMemory, n: int) -> None:
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = TOPICS[(i // 2) % len(TOPICS)] if role == "user" else f"Noted, reply {i}."
        mem.add(role, text)


def test_pages_close_and_resident_set_is_bounded() -> None:
    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=2)
    fill(mem, 22)
    assert [p.id for p in mem.pages] == ["p1", "p2", "p3", "p4", "p5"]
    assert len(mem.resident) == 2 and mem.resident == ["p4", "p5"]
    assert mem.evicted == ["p1", "p2", "p3"]
    assert len(mem.pager.open_turns) == 2  # the open page is extra and always resident
    stats = mem.stats()
    assert stats.pages == 5 and stats.evicted == 3
    assert 0 < stats.prompt_tokens < stats.full_tokens + 2000


def test_context_has_preamble_bookmarks_resident_and_open_page() -> None:
    mem = PagedMemory(boundary="fixed_4", policy="fifo", resident_pages=1)
    fill(mem, 14)
    ctx = mem.context()
    system = ctx.messages[0]["content"]
    assert ctx.messages[0]["role"] == "system"
    index = system[system.index("Evicted pages"):]
    assert "recall" in system and "[p1:" in index and "[p2:" in index
    assert "[p3:" not in index  # p3 is resident
    texts = [m["content"] for m in ctx.messages[1:]]
    assert TOPICS[0] not in texts  # evicted text is absent
    assert len(ctx.messages) == 1 + 4 + 2  # resident page + open page
    assert ctx.tools[0]["function"]["name"] == "recall"
    assert ctx.tools[0]["function"]["parameters"]["required"] == ["page"]


@pytest.mark.parametrize("arg", ["p1", "P1", "1", 1, " p1 ", "[p1: peanuts]", "page 1"])
def test_recall_accepts_page_forms(arg: object) -> None:
    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=1)
    fill(mem, 12)
    assert "p1" in mem.evicted
    result = mem.recall_result(arg)
    assert result.status == "paged_in" and result.page == "p1"
    assert TOPICS[0] in result.text and '<page id="p1">' in result.text
    assert "p1" in mem.resident
    s = mem.stats()  # a recall page-in is not a fault (issue 11): counted apart
    assert (s.faults, s.recall_page_ins, s.page_ins, s.recalls) == (0, 1, 1, 1)


def test_recall_errors_are_text_not_exceptions() -> None:
    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=1)
    fill(mem, 12)
    for bad in ["p99", "banana", None, True, -3, {"page": 1}, ""]:
        r = mem.recall_result(bad)
        assert r.status == "error" and r.text.startswith("error:")
    assert "p99" in mem.recall("p99") and "Evicted pages: p1" in mem.recall("p99")
    resident = mem.resident[0]
    r = mem.recall_result(resident)
    assert r.status == "resident" and "already in context" in r.text
    s = mem.stats()  # recalls are not probe hits or faults
    assert (s.hits, s.faults, s.recalls, s.recall_errors, s.recall_page_ins) == (0, 0, 10, 9, 0)


def test_recall_by_query_finds_the_page() -> None:
    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=1, recall_by_query=True)
    fill(mem, 16)
    r = mem.recall_result(query="grant deadline letters")
    assert r.status == "paged_in" and "grant deadline" in r.text
    assert "query" in mem.context().tools[0]["function"]["parameters"]["properties"]
    assert mem.recall_result(query="zzzz qqqq").status == "error"
    assert mem.recall_result("p1", query="x").status == "error"


def test_query_without_option_is_refused() -> None:
    mem = PagedMemory(boundary="fixed_4", resident_pages=1)
    fill(mem, 12)
    assert mem.recall_result(query="peanuts").status == "error"


def test_tool_call_never_separated_from_results() -> None:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    mem.add("user", "what is on page 1?")
    call = ToolCall("call_1", "lookup", json.dumps({"q": 1}))
    mem.add("assistant", "", tool_calls=[call, ToolCall("call_2", "lookup", "{}")])
    assert len(mem.pages) == 0  # the cut would split the exchange: it waits
    mem.add("tool", "result one", tool_call_id="call_1")
    assert len(mem.pages) == 0
    mem.add("tool", "result two", tool_call_id="call_2")
    mem.add("assistant", "done")
    mem.add("user", "next")
    for page in mem.pages:
        roles = [t.role for t in page.turns]
        assert roles[0] != "tool"
        calls = {c.id for t in page.turns for c in t.tool_calls}
        results = {t.tool_call_id for t in page.turns if t.role == "tool"}
        assert calls == results
    msgs = mem.context().messages
    assert any(m.get("tool_calls") for m in msgs) or mem.evicted


def test_tool_calls_as_openai_dicts() -> None:
    mem = PagedMemory(boundary="fixed_10")
    mem.add("assistant", "", tool_calls=[{"id": "c1", "type": "function",
                                          "function": {"name": "f", "arguments": {"a": 1}}}])
    turn = mem.turns[0]
    assert turn.tool_calls[0].name == "f" and json.loads(turn.tool_calls[0].arguments) == {"a": 1}


def test_resident_tokens_budget() -> None:
    mem = PagedMemory(boundary="fixed_2", policy="lru", resident_tokens=60)
    fill(mem, 30)
    res_tokens = sum(p.tokens for p in mem.pages if p.id in mem.resident)
    assert res_tokens <= 60 or len(mem.resident) == 1
    assert mem.evicted


def test_system_turn_is_pinned_not_paged() -> None:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    assert mem.add("system", "You are a travel agent.") == "system"
    fill(mem, 10)
    assert mem.context().messages[0]["content"].startswith("You are a travel agent.")
    assert all(t.role != "system" for t in mem.turns)


def test_bad_input_errors() -> None:
    with pytest.raises(UnknownNameError, match="valid policies: .*lru"):
        PagedMemory(policy="nope")
    with pytest.raises(UnknownNameError, match="fixed_N"):
        PagedMemory(boundary="nope")
    with pytest.raises(UnknownNameError, match="heuristic"):
        PagedMemory(keywords="nope")
    with pytest.raises(UnknownNameError, match="minimal"):
        PagedMemory(bookmark_format="nope")
    with pytest.raises(ValueError, match="resident_pages"):
        PagedMemory(resident_pages=0)
    with pytest.raises(ValueError, match="future"):
        PagedMemory(policy="belady")
    mem = PagedMemory()
    with pytest.raises(ValueError, match="valid roles"):
        mem.add("robot", "hi")
    mem.add("user", "hi", id="x1")
    with pytest.raises(ValueError, match="duplicate turn id"):
        mem.add("user", "again", id="x1")
    with pytest.raises(ValueError, match="unknown option 'colour' for pager settings; valid options: boundary, "):
        PagerConfig.from_dict({"boundary": "fixed_5", "colour": "red"})


def test_single_huge_turn_becomes_a_page() -> None:
    mem = PagedMemory(boundary="tokens_50", resident_pages=1)
    mem.add("user", "word " * 2000)
    mem.add("assistant", "ok")
    mem.add("user", "short")
    assert mem.pages[0].tokens >= 2000 and len(mem.pages[0].turns) == 1


def test_parse_page_arg() -> None:
    assert parse_page_arg("p12") == 11 and parse_page_arg(3) == 2 and parse_page_arg(3.0) == 2
    for bad in ("p0", 0, "x", None, True, "p1p2", 2.5):
        assert parse_page_arg(bad) is None


def test_corpus_extractor_refreshes_bookmarks_incrementally() -> None:
    mem = PagedMemory(boundary="fixed_2", policy="lru", resident_pages=1, keywords="tfidf")
    fill(mem, 80)
    epochs = [mem.pager.books[i].epoch for i in range(len(mem.pages) - 1)]
    assert max(epochs) > min(epochs)  # old bookmarks were refreshed as the corpus grew
    assert all(b.text.startswith(f"[{pid}:") for pid, b in mem.bookmarks().items())


def test_stats_count_page_ins_by_cause_and_read_old_snapshots() -> None:
    from copage.core.pager import Counters

    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=1)
    fill(mem, 16)
    assert mem.access("p1") is False  # a demand use of an evicted page: a fault
    assert mem.access("p1") is True
    mem.recall("p2")
    mem.pager.access("p3", kind="speculative")
    s = mem.stats()
    assert (s.faults, s.hits, s.recall_page_ins, s.speculative_page_ins, s.page_ins) == (1, 1, 1, 1, 3)
    assert s.to_dict()["page_ins"] == 3 and s.to_dict()["resident"] == list(s.resident)
    # Snapshots written before the split stored [faults, hits, recalls, recall_errors, evictions].
    old = Counters.from_json([5, 2, 3, 1, 9])
    assert (old.faults, old.hits, old.recalls, old.recall_errors, old.evictions) == (5, 2, 3, 1, 9)
    assert Counters.from_json(Counters(1, 2, 3, 4, 5, 6, 7).to_json()) == Counters(1, 2, 3, 4, 5, 6, 7)


def test_segment_open_page_is_bounded_like_closed_pages() -> None:
    """A single-session chat: the open page (always resident) never exceeds max_len turns,
    the bound of the closed pages (issue 11: nothing was paged for 119 turns)."""
    mem = PagedMemory(boundary="segment", policy="lru", resident_pages=1)
    for i in range(130):
        mem.add("user" if i % 2 == 0 else "assistant", f"{TOPICS[(i // 20) % len(TOPICS)]} {i}")
        assert mem.stats().open_turns <= 40
    assert mem.stats().pages >= 3 and all(len(p.turns) <= 40 for p in mem.pages)
