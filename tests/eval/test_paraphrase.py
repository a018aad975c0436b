"""The paraphrase set (facts asked in other words) and its harness, on synthetic filler."""

from __future__ import annotations

import re

import pytest

from copage import PagedMemory
from copage.eval.paraphrase import (
    ACK,
    FACTS,
    Fact,
    classify,
    lines_of_conversations,
    run_fact,
    split,
    split_of,
    synthetic_lines,
    window,
)

# Function words a question may share with its statement (content words may not).
_STOP_WORDS = """a an the i i'm i've me my we we're our us you your is are am was were be been
do does did to of in on at for from with and or so but if that this these those it its
any every each all how what when where which who why would should can could will may
might must have has had now still since about after as by than too not no some much
many there here up out"""
STOP = frozenset(_STOP_WORDS.split())


def _words(text: str) -> set[str]:
    found = (w.strip(",:") for w in re.findall(r"[\w',:]+", text.lower().replace("’", "'")))
    return {w for w in found if w and w not in STOP}


def test_the_set_is_large_varied_and_its_ids_unique() -> None:
    assert len(FACTS) >= 40
    assert len({f.id for f in FACTS}) == len(FACTS)
    assert len({f.domain for f in FACTS}) >= 8
    assert {f.kind for f in FACTS} == {"synonym", "form", "indirect"}


@pytest.mark.parametrize("fact", FACTS, ids=lambda f: f.id)
def test_each_question_asks_in_other_words(fact: Fact) -> None:
    shared = _words(fact.statement) & _words(fact.question)
    assert not shared, f"{fact.id}: the question repeats {shared}"
    for word in fact.proof:
        pattern = rf"(?<!\w){re.escape(word)}(?!\w)"
        assert re.search(pattern, fact.statement, re.IGNORECASE), (fact.id, word)
        assert not re.search(pattern, fact.question, re.IGNORECASE), (fact.id, word)
        assert not re.search(pattern, ACK, re.IGNORECASE), (fact.id, word)


def test_the_split_is_deterministic_disjoint_and_about_sixty_forty() -> None:
    dev, final = split("dev"), split("final")
    assert {f.id for f in dev}.isdisjoint(f.id for f in final)
    assert len(dev) + len(final) == len(FACTS) == len(split("all"))
    assert 0.5 <= len(dev) / len(FACTS) <= 0.7 and len(final) >= 15
    assert split("dev") == dev and all(split_of(f) == "dev" for f in dev)
    # by a digest of the id, not by the order: reversing the set keeps each fact's split,
    # and so does adding or removing facts
    assert {f.id for f in split("dev", FACTS[::-1])} == {f.id for f in dev}
    assert {f.id for f in split("dev", FACTS[:-7])} == {f.id for f in dev if f in FACTS[:-7]}
    with pytest.raises(ValueError, match="unknown split"):
        split("test")


def test_a_short_chat_keeps_the_fact_resident() -> None:
    lines = synthetic_lines(60, seed=1)
    for fact in split("dev")[:3]:
        reach = run_fact(fact, window(lines, 0, 4), window(lines, 4, 34))
        assert reach.status == "resident" and reach.reached, reach
        assert reach.evicted_pages == 0 and reach.turns == 4 + 2 + 34 + 2
        assert reach.prompt_tokens > 0
        # nothing paged: the chat cost what the whole conversation costs (below caching)
        assert reach.cost_usd and all(full > 0 and paged == pytest.approx(full)
                                      for paged, full in reach.cost_usd.values())


def test_a_long_chat_evicts_the_fact_and_the_harness_tells_fill_from_missing() -> None:
    lines = synthetic_lines(400, seed=2)
    before, after = window(lines, 0, 10), window(lines, 10, 200)
    # the same words as the statement: the speculative fill brings it back
    echo = Fact("ctl-echo", "ctl", "form", "My sister Ana moved to Porto last spring.",
                "Did my sister Ana move to Porto last spring?", ("Porto",))
    # nothing in common, no proof word anywhere: it cannot reach the model
    lost = Fact("ctl-lost", "ctl", "synonym", "My sister Ana moved to Porto last spring.",
                "Quelle heure est-il?", ("Porto",))
    paged = lambda: PagedMemory(resident_pages=4)  # 200 turns fit the default budget
    got = run_fact(echo, before, after, memory=paged)
    assert got.evicted_pages > 0 and got.status == "filled" and got.reached
    assert run_fact(lost, before, after, memory=paged).status == "missing"


def test_classify_counts_only_the_statement_or_its_own_bookmark() -> None:
    fact = Fact("ctl-yoga", "ctl", "indirect", "I do yoga on Tuesday evenings.",
                "Which nights am I busy?", ("yoga",))
    q = fact.question
    chat = ["system text", "We talked about yoga retreats.", "Nice."]  # not the fact
    assert classify(fact, [*chat, q], filled=False) == "missing"
    assert classify(fact, [*chat, q], filled=False, bookmark="[p2: yoga retreats]") == "missing"
    assert classify(fact, [*chat, f"<page>{fact.statement}</page>", q],
                    filled=True) == "filled"
    assert classify(fact, [chat[0], fact.statement, q], filled=False) == "resident"
    shown = "[p1: yoga Tuesday evenings]"
    assert classify(fact, [f"Pages: {shown}", q], filled=False, bookmark=shown) == "bookmark"
    assert classify(fact, [f"Pages: {shown}", q], filled=False,
                    bookmark="[p1: Tuesday evenings]") == "missing"  # not shown, no word


def test_a_bookmark_shown_by_the_tool_mode_counts_when_it_names_the_proof() -> None:
    lines = synthetic_lines(400, seed=3)
    # said so often that the page's bookmark names it
    fact = Fact("ctl-tetras", "ctl", "synonym", "My neon tetras! Tetras, tetras, tetras: I love "
                "my tetras and my aquarium tetras.", "Quelle heure est-il?", ("tetras",))
    before, after = window(lines, 0, 10), window(lines, 10, 200)
    mem: list[PagedMemory] = []

    def made() -> PagedMemory:
        mem.append(PagedMemory(resident_pages=4))  # 200 turns fit the default budget
        return mem[-1]

    reach = run_fact(fact, before, after, memory=made, chat_options={"recall_mode": "tool"})
    page = next(p for p in mem[0].pages if any(t.text == fact.statement for t in p.turns))
    assert page.id in mem[0].evicted
    assert "tetras" in mem[0].bookmarks()[page.id].text.lower()
    assert reach.status == "bookmark" and reach.reached
    # the default mode shows no bookmarks: the same chat, nothing reaches the model
    assert run_fact(fact, before, after, memory=lambda: PagedMemory(resident_pages=4),
                    ).status == "missing"


def test_lines_of_conversations_map_each_conversations_speakers() -> None:
    from copage.eval.datasets import load_dataset

    convs = load_dataset("controlled").conversations[:2]
    lines = lines_of_conversations(convs)
    assert len(lines) == sum(len(c.turns) for c in convs)
    at = 0
    for conv in convs:  # each conversation's first speaker is the user
        assert lines[at].role == "user"
        at += len(conv.turns)
    assert {line.role for line in lines} == {"user", "assistant"}
