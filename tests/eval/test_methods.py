"""Methods at one token budget: windows, retrieval, search, bookmarks, readers, coverage."""

from __future__ import annotations

from dataclasses import replace

import pytest

from copage.core.registry import UnknownNameError
from copage.core.tokens import default_tokenizer
from copage.core.types import Turn
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.methods import (
    INSTRUCTION,
    METHODS,
    MethodSettings,
    coverage,
    evidence_groups,
    get_method,
    message_tokens,
    method_names,
    request_tokens,
    split_units,
)
from copage.eval.methods.bookmark_pages import build_memory, build_pager, pager_config
from copage.eval.methods.method import DOES_NOT_FIT
from copage.eval.methods.readers import TRIGGERS, page_reader
from copage.eval.methods.window import WHOLE
from copage.session.choose import choose_request

TOPICS = ["zanzibar ferry tickets", "quokka photography trip", "kombucha brewing class",
          "marathon training plan", "violin lesson schedule"]
ALL = ["full_context", "truncation", "bm25", "word_overlap", "search_tool", "bookmark_recall",
       "bookmark_recall+query", "bookmark_recall+speculative", "bookmark_recall+copage",
       "bookmark_recall+choose", "bookmark_recall+choose+tool", "bookmark_recall+choose+speculative"]
BOOKMARKS = [m for m in ALL if m.startswith("bookmark")]


#: Stopwords only: longer pages (so that paging pays off) with the same keywords.
PAD = " And so it was, as it is, and it was so." * 3


def _conv(pad: str = "") -> Conversation:
    turns = []
    for s in range(len(TOPICS)):
        for j in range(10):
            role = "user" if j % 2 == 0 else "assistant"
            text = (f"We talked about {TOPICS[s]} detail {j}." if j == 2 else
                    f"Filler chat {s} {j} ok.{pad}")
            turns.append(Turn(f"D{s + 1}:{j + 1}", role, text, speaker=None, session=s + 1))
    probes = (
        Probe("c/q0", "When are the zanzibar ferry tickets?", "x", 4, ("D1:3",)),
        Probe("c/q1", "Tell me about kombucha brewing and the ferry?", "x", 1, ("D1:3", "D5:9")),
        Probe("c/q2", "What about the quokka photography?", "x", 4, ("D2:3",)),
        Probe("c/q3", "Xylophone?", "x", 4, ("D1:3",)),  # shares no word with anything
    )
    return Conversation("c", tuple(turns), probes)


SETTINGS = MethodSettings(budget=10_000, window=5, boundary="session")
TOK = default_tokenizer()


def _tokens(conv: Conversation, start: int, question: str) -> int:
    from copage.core import prompt

    msgs = [{"role": "system", "content": INSTRUCTION}, *prompt.turn_messages(list(conv.turns[start:])),
            {"role": "user", "content": question}]
    return message_tokens(msgs, [], TOK)


def test_units_by_session() -> None:
    units = split_units(_conv().turns, "session")
    assert [(u.start, u.end) for u in units] == [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50)]


def test_full_context_takes_the_most_recent_turns_that_fit() -> None:
    conv = _conv()
    q = conv.probes[0].question
    budget = _tokens(conv, 38, q)  # exactly the last 12 turns
    settings = replace(SETTINGS, budget=budget)
    full = get_method("full_context").prepare(conv, settings).build(conv.probes[0])
    assert full.context_turn_ids == {t.id for t in conv.turns[38:]}
    assert full.prompt_tokens == budget == message_tokens(full.messages, [], TOK)
    assert full.limit is None
    one_less = get_method("full_context").prepare(conv, replace(settings, budget=budget - 1))
    assert one_less.build(conv.probes[0]).context_turn_ids == {t.id for t in conv.turns[39:]}
    whole = get_method("full_context").prepare(conv, SETTINGS).build(conv.probes[0])
    assert whole.context_turn_ids == {t.id for t in conv.turns} and whole.limit == WHOLE
    capped = get_method("full_context").prepare(conv, replace(SETTINGS, full_window=12))
    assert capped.build(conv.probes[0]).limit == "full_window=12 cap"


def test_truncation_keeps_its_window_and_says_it_cannot_spend_the_budget() -> None:
    conv = _conv()
    trunc = get_method("truncation").prepare(conv, SETTINGS).build(conv.probes[0])
    assert trunc.context_turn_ids == {t.id for t in conv.turns[-5:]}
    assert trunc.limit == "window of 5 turns" and trunc.prompt_tokens < SETTINGS.budget
    assert not coverage(conv.probes[0], trunc.context_turn_ids).all


@pytest.mark.parametrize("name", ["bm25", "word_overlap"])
def test_retrieval_adds_matching_units_while_they_fit(name: str) -> None:
    conv = _conv()
    built = get_method(name).prepare(conv, replace(SETTINGS, top_k=1)).build(conv.probes[0])
    window = {t.id for t in conv.turns[-5:]}
    session1 = {t.id for t in conv.turns[:10]}
    assert built.context_turn_ids == window | session1
    assert "zanzibar" in built.messages[0]["content"]
    assert coverage(conv.probes[0], built.context_turn_ids).all
    capped = get_method(name).prepare(conv, replace(SETTINGS, top_k=1)).build(conv.probes[1])
    assert capped.limit == "top_k=1 cap" and len(capped.routed.split(",")) == 1  # type: ignore[union-attr]
    free = get_method(name).prepare(conv, SETTINGS).build(conv.probes[1])
    assert free.limit == "no more units match"  # sessions 1 and 3 match; session 2 does not
    assert {"D1:1", "D3:1"} <= free.context_turn_ids and "D2:1" not in free.context_turn_ids
    # a budget with room for the window and one session, not two: the best one only
    tight = get_method(name).prepare(conv, replace(SETTINGS, budget=free.prompt_tokens - 5))
    part = tight.build(conv.probes[1])
    assert part.prompt_tokens <= free.prompt_tokens - 5 and part.limit is None
    assert len(part.routed.split(",")) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("budget", [260, 330, 420, 600, 900])
def test_every_method_stays_within_the_budget(name: str, budget: int) -> None:
    """Every call of the probe is billed (the first call, the call after a tool result,
    the choose call) and the billed total never exceeds the budget: a probe that cannot
    fit is "does not fit" (nothing sent, a miss)."""
    conv = _conv()
    prep = get_method(name).prepare(conv, replace(SETTINGS, budget=budget))
    triggers = TRIGGERS if name in BOOKMARKS else (None,)
    for probe in conv.probes:
        for trigger in triggers:
            built = prep.build(probe, trigger) if trigger else prep.build(probe)
            assert built.prompt_tokens <= budget, (name, budget, probe.id, trigger)
            assert built.prompt_tokens == sum(built.calls)
            if built.limit == DOES_NOT_FIT:
                assert not built.messages and not built.context_turn_ids
                continue
            assert built.calls[-1] == message_tokens(built.messages, built.tools, TOK)
            assert sum(built.parts.values()) == built.prompt_tokens
            tool_at = [i for i, m in enumerate(built.messages) if m.get("tool_calls")]
            if tool_at:  # the first call (everything before the tool call) is billed too
                first = built.messages[: tool_at[0]]
                assert built.calls[-2] == message_tokens(first, built.tools, TOK)
            if "choose" in name and prep.pager.evicted and built.limit != "every page resident":
                chosen = prep.state(()) if not name.endswith("speculative") else None
                if chosen is not None:
                    assert built.calls[0] == request_tokens(choose_request(
                        prep.pager, probe.question, schema=False, temperature=None,
                        max_tokens=1), TOK)
    if budget >= 600:
        assert all(prep.build(p).limit != DOES_NOT_FIT for p in conv.probes)


def test_coverage_all_any_and_acknowledgements() -> None:
    conv = _conv()
    probe = conv.probes[1]  # evidence in session 1 and in the last 5 turns
    trunc = get_method("truncation").prepare(conv, SETTINGS).build(probe)
    cov = coverage(probe, trunc.context_turn_ids)
    assert (cov.all, cov.any) == (False, True)
    # synthetic data: a fact's statement and the assistant's acknowledgement are one group
    groups = evidence_groups(conv, conv.probes[0], acknowledgements=True)
    assert groups == (frozenset({"D1:3", "D1:4"}),)
    assert coverage(groups, {"D1:4"}).all  # the acknowledgement alone carries the fact
    assert not coverage(evidence_groups(conv, conv.probes[0]), {"D1:4"}).any


def test_search_tool_reader_searches_once_with_the_question() -> None:
    conv = _conv()
    built = get_method("search_tool").prepare(conv, SETTINGS).build(conv.probes[2])
    assert [t["function"]["name"] for t in built.tools] == ["memory_search"]
    assert built.messages[-1]["role"] == "tool" and "quokka" in built.messages[-1]["content"]
    assert coverage(conv.probes[2], built.context_turn_ids).all
    bm25 = get_method("bm25").prepare(conv, SETTINGS).build(conv.probes[2])
    assert built.context_turn_ids == bm25.context_turn_ids  # by construction (see the docs)


def _budget_for(conv: Conversation, resident: int) -> int:
    """A budget that leaves room for ``resident`` sessions besides the fixed part, in both
    billed calls (the first call and the call after the recall), and a recall."""
    from copage.eval.methods.bookmark_pages import measure

    cfg = pager_config(SETTINGS, get_method("bookmark_recall").variant)  # type: ignore[attr-defined]
    over = measure(conv, cfg)
    q = max(TOK.count(p.question) for p in conv.probes)
    page = build_pager(conv, cfg).pages[0].tokens
    return 2 * (over.fixed + q + resident * page + 12 * resident) + over.recall


def test_bookmark_resident_pages_follow_the_budget() -> None:
    conv = _conv(PAD)  # bigger than the budgets: paged
    one = get_method("bookmark_recall").prepare(conv, replace(SETTINGS, budget=_budget_for(conv, 1)))
    two = get_method("bookmark_recall").prepare(conv, replace(SETTINGS, budget=_budget_for(conv, 1)))
    # (one resident page: with both calls billed, two resident sessions and a recall
    # take more than the whole five-session conversation, which then all fits)
    assert one.pager.resident == ["p5"] and two.pager.resident == ["p5"]
    built = two.build(conv.probes[0])
    assert built.needed == ("p1",) and built.evicted_needed == ("p1",)
    assert built.routed == "p1" and built.routing == 1.0
    assert coverage(conv.probes[0], built.context_turn_ids).all
    assert built.messages[-1]["role"] == "tool" and "zanzibar" in built.messages[-1]["content"]
    assert two.pager.resident == ["p5"]  # build() changed nothing
    everything = get_method("bookmark_recall").prepare(conv, SETTINGS).build(conv.probes[0])
    assert everything.limit == "every page resident"
    # the whole conversation fits: every page resident, no room held back for a recall
    whole = _tokens(conv, 0, conv.probes[0].question) + 200
    fits = get_method("bookmark_recall").prepare(conv, replace(SETTINGS, budget=whole))
    assert fits.pager.evicted == [] and fits.build(conv.probes[0]).prompt_tokens <= whole


@pytest.mark.parametrize("name", BOOKMARKS)
def test_bookmark_readers_never_look_at_the_gold_evidence(name: str) -> None:
    """The same question with other evidence gets exactly the same prompt."""
    conv = _conv()
    prep = get_method(name).prepare(conv, replace(SETTINGS, budget=_budget_for(conv, 1)))
    for probe in conv.probes:
        built = prep.build(probe)
        for ev in (("D5:9",), ("D2:3",), ("D1:3", "D2:3")):  # resident / evicted / both
            other = prep.build(replace(probe, evidence=ev))
            assert (other.messages, other.prompt_tokens, other.routed, other.context_turn_ids) == (
                built.messages, built.prompt_tokens, built.routed, built.context_turn_ids), (probe.id, ev)


def test_no_matching_bookmark_means_no_recall() -> None:
    conv = _conv(PAD)  # bigger than the budgets: paged
    prep = get_method("bookmark_recall").prepare(conv, replace(SETTINGS, budget=_budget_for(conv, 1)))
    built = prep.build(conv.probes[3])  # its evidence (p1) is evicted, but nothing matches
    assert built.routed is None and built.messages[-1]["role"] == "user"
    assert built.limit == "the reader made no call: recall reserve unused"
    assert not coverage(conv.probes[3], built.context_turn_ids).any
    assert page_reader("Xylophone?", [("p1", "[p1:zanzibar, ferry]")]) is None
    assert page_reader("the ferry?", [("p1", "[p1:quokka]"), ("p2", "[p2:ferry]")]) == {"page": "p2"}


def test_speculative_page_in_does_not_depend_on_the_evidence() -> None:
    conv = _conv()
    prep = get_method("bookmark_recall+speculative").prepare(
        conv, replace(SETTINGS, budget=_budget_for(conv, 1), speculative_threshold=0.0))
    probe = conv.probes[0]
    resident_case = prep.build(replace(probe, evidence=("D5:9",)))  # needs nothing evicted
    assert "D1:3" in resident_case.context_turn_ids  # paged in all the same
    assert resident_case.context_turn_ids == prep.build(probe).context_turn_ids


def test_the_offline_pager_is_the_stored_one() -> None:
    """build_pager (LLM-free view) and build_memory (model runs) give the same pages."""
    conv = _conv()
    for name in ("bookmark_recall", "bookmark_recall+copage"):
        variant = get_method(name).variant  # type: ignore[attr-defined]
        cfg = pager_config(SETTINGS, variant, 130)
        pager, mem = build_pager(conv, cfg), build_memory(conv, cfg).pager
        assert pager.resident == mem.resident and pager.evicted == mem.evicted
        assert [pager.bookmark(p.id).text for p in pager.pages] == \
            [mem.bookmark(p.id).text for p in mem.pages]
        assert pager.context("q").messages == mem.context("q").messages


def test_registry_lists_names_and_rejects_unknown() -> None:
    assert set(ALL) <= set(METHODS.names())
    with pytest.raises(UnknownNameError, match="bookmark_recall"):
        method_names("bm25,nope")
    with pytest.raises(ValueError, match="window"):
        MethodSettings(window=0)
    with pytest.raises(ValueError, match="budget"):
        MethodSettings(budget=0)
