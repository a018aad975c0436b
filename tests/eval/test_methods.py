"""Methods: windows, top-k, token counts, evidence coverage, routing shared with simulate."""

from __future__ import annotations

import pytest

from copage.core.registry import UnknownNameError
from copage.core.tokens import default_tokenizer
from copage.core.types import Turn
from copage.eval.datasets import load_dataset
from copage.eval.datasets.model import Conversation, Dataset, Probe
from copage.eval.methods import (
    METHODS,
    MethodSettings,
    coverage,
    get_method,
    message_tokens,
    method_names,
    split_units,
)
from copage.eval.simulate import Cell, simulate

TOPICS = ["zanzibar ferry tickets", "quokka photography trip", "kombucha brewing class"]


def _conv() -> Conversation:
    turns = []
    for s in range(3):
        for j in range(10):
            role = "user" if j % 2 == 0 else "assistant"
            text = f"We talked about {TOPICS[s]} detail {j}." if j == 2 else f"Filler chat {s} {j} ok."
            turns.append(Turn(f"D{s + 1}:{j + 1}", role, text, speaker=None, session=s + 1))
    probes = (
        Probe("c/q0", "When are the zanzibar ferry tickets?", "x", 4, ("D1:3",)),
        Probe("c/q1", "Tell me about kombucha brewing and the ferry?", "x", 1, ("D1:3", "D3:9")),
        Probe("c/q2", "What about the quokka photography?", "x", 4, ("D2:3",)),
    )
    return Conversation("c", tuple(turns), probes)


SETTINGS = MethodSettings(full_window=12, window=5, top_k=1, boundary="session", resident_pages=2)


def test_units_by_session() -> None:
    units = split_units(_conv().turns, "session")
    assert [(u.start, u.end) for u in units] == [(0, 10), (10, 20), (20, 30)]


def test_full_context_and_truncation_windows() -> None:
    conv = _conv()
    tok = default_tokenizer()
    full = get_method("full_context").prepare(conv, SETTINGS).build(conv.probes[0])
    assert full.context_turn_ids == {t.id for t in conv.turns[-12:]}
    assert len(full.messages) == 1 + 12 + 1 and full.messages[-1]["content"] == conv.probes[0].question
    assert full.prompt_tokens == message_tokens(full.messages, [], tok)
    trunc = get_method("truncation").prepare(conv, SETTINGS).build(conv.probes[0])
    assert trunc.context_turn_ids == {t.id for t in conv.turns[-5:]}
    assert trunc.prompt_tokens < full.prompt_tokens
    assert not coverage(conv.probes[0], trunc.context_turn_ids).all


@pytest.mark.parametrize("name", ["bm25", "word_overlap"])
def test_retrieval_adds_top_k_evicted_units(name: str) -> None:
    conv = _conv()
    prep = get_method(name).prepare(conv, SETTINGS)
    built = prep.build(conv.probes[0])
    window = {t.id for t in conv.turns[-5:]}
    session1 = {t.id for t in conv.turns[:10]}
    assert built.context_turn_ids == window | session1  # top_k=1: only session 1
    assert "zanzibar" in built.messages[0]["content"]
    assert coverage(conv.probes[0], built.context_turn_ids).all
    wide = get_method(name).prepare(conv, MethodSettings(window=5, top_k=3, boundary="session"))
    assert len(wide.retrieve("ferry quokka kombucha")) == 3


def test_coverage_all_versus_any() -> None:
    conv = _conv()
    probe = conv.probes[1]  # evidence in session 1 and in the last 5 turns
    trunc = get_method("truncation").prepare(conv, SETTINGS).build(probe)
    cov = coverage(probe, trunc.context_turn_ids)
    assert (cov.all, cov.any) == (False, True)


def test_search_tool_reference_reader_searches_once() -> None:
    conv = _conv()
    built = get_method("search_tool").prepare(conv, SETTINGS).build(conv.probes[2])
    assert [t["function"]["name"] for t in built.tools] == ["memory_search"]
    assert built.messages[-1]["role"] == "tool" and "quokka" in built.messages[-1]["content"]
    assert coverage(conv.probes[2], built.context_turn_ids).all
    assert built.prompt_tokens == message_tokens(built.messages, built.tools, default_tokenizer())


def test_bookmark_recall_routes_to_the_right_page() -> None:
    conv = _conv()
    prep = get_method("bookmark_recall").prepare(conv, SETTINGS)
    assert prep.pager.resident == ["p2", "p3"] and prep.pager.evicted == ["p1"]
    built = prep.build(conv.probes[0])
    assert built.needed == ("p1",) and built.evicted_needed == ("p1",)
    assert built.routed == "p1" and built.routing == 1.0
    assert coverage(conv.probes[0], built.context_turn_ids).all
    assert built.messages[-1]["role"] == "tool"
    before = prep.pager.prompt_tokens(conv.probes[0].question)
    page, bm = prep.pager.pages[0], prep.pager.bookmark("p1")
    # p1 paged in, the LRU victim (p2) replaced by its bookmark: simulate's arithmetic.
    p2, bm2 = prep.pager.pages[1], prep.pager.bookmark("p2")
    assert built.prompt_tokens == before + page.tokens - bm.tokens + bm2.tokens - p2.tokens
    assert prep.pager.resident == ["p2", "p3"]  # build() changed nothing
    hit = prep.build(conv.probes[2])
    assert hit.routed is None and hit.prompt_tokens == prep.pager.prompt_tokens(conv.probes[2].question)


def test_registry_lists_names_and_rejects_unknown() -> None:
    assert {"full_context", "truncation", "bm25", "word_overlap", "search_tool",
            "bookmark_recall", "bookmark_recall+copage"} <= set(METHODS.names())
    with pytest.raises(UnknownNameError, match="bookmark_recall"):
        method_names("bm25,nope")
    with pytest.raises(ValueError, match="window"):
        MethodSettings(window=0)


def test_reference_reader_agrees_with_simulate_routing_top1() -> None:
    """Same probes, same settings: the reader's routing credit equals simulate's routing_top1.

    simulate carries the cache from probe to probe; the benchmark asks every probe from
    the state after the whole conversation, so each probe is simulated alone.
    """
    ds = load_dataset("controlled")
    settings = MethodSettings(boundary="fixed_5", resident_pages=2, policy="lru")
    method = get_method("bookmark_recall")
    credits: list[float] = []
    singles: list[Conversation] = []
    for conv in ds.conversations:
        prep = method.prepare(conv, settings)
        for probe in conv.probes:
            built = prep.build(probe)
            if built.routing is not None:
                credits.append(built.routing)
            singles.append(Conversation(f"{conv.id}|{probe.id}", conv.turns, (probe,)))
    cell = Cell("fixed_5", "lru", 2, "heuristic", "minimal", "end", "file", 0)
    row = simulate(Dataset("controlled-single", tuple(singles)), [cell])[0]
    assert row["faults"] == len(credits) > 0
    assert row["routing_top1"] == pytest.approx(sum(credits) / len(credits))
