"""The fill's meaning channel (``FillSettings(dense=...)``): a question in other words
than the fact still brings the fact's turn back, BM25's places stay BM25's.

The encoder here is a test tool: words map to a few hand-made concept axes, so a
question and a statement that share no word can still point the same way. The real
encoder (all-MiniLM-L6-v2) is tested in tests/dense/.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from copage import FillSettings, PagedMemory
from copage.core.dense_rank import DenseRanker, turn_text
from copage.core.passages import PassageIndex, pick, runs_of
from copage.core.types import Page, PageId, Turn
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat, Speculator

CONCEPTS = {
    "peanut": 0, "peanuts": 0, "satay": 0, "nuts": 0, "allergic": 0,
    "sister": 1, "sibling": 1, "brother": 1,
    "boat": 2, "sailing": 2, "sail": 2, "yacht": 2,
}
STATEMENT = "I'm allergic to peanuts, so I always read food labels."
QUESTION = "Can I order the satay sauce at the Thai place tonight?"


class ConceptVectors:
    """Unit vectors over concept axes (axis 3+: one per other word, hashed); counts calls."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), 64), np.float32)
        for row, text in enumerate(texts):
            for w in re.findall(r"[a-z']+", text.lower()):
                axis = CONCEPTS.get(w)
                out[row, axis if axis is not None else 3 + sum(map(ord, w)) % 61] += (
                    4.0 if axis is not None else 0.2)
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out


class Gated(ConceptVectors):
    """Concept vectors that wait for ``gate`` before embedding more than one text (a
    long embedding the test holds back: tests/server/test_dense_warm.py,
    tests/adapters/test_mcp_dense.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Event()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1:
            self.started.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super().vectors(texts)


FILLER = [
    "We talked about the weather and the long drive to the coast.",
    "The meeting moved to Thursday afternoon after lunch.",
    "My cousin is painting the kitchen a pale green colour.",
    "The train was late again, so I read a novel on the platform.",
]


def chat_memory(n: int = 60) -> PagedMemory:
    """A chat whose early statement is evicted: fixed_4 pages, 2 resident."""
    mem = PagedMemory(boundary="fixed_4", resident_pages=2)
    mem.add("user", STATEMENT)
    mem.add("assistant", "Thanks for telling me, I'll keep that in mind.")
    for i in range(n):
        mem.add("user" if i % 2 == 0 else "assistant", FILLER[i % len(FILLER)] + f" ({i})")
    return mem


def statement_shown(text: str) -> bool:
    return "allergic to peanuts" in text


def test_a_question_in_other_words_reaches_the_fact_only_with_the_dense_channel() -> None:
    mem = chat_memory()
    assert mem.evicted and "p1" in mem.evicted
    lexical = Speculator(whole=False).plan(mem, QUESTION)
    assert not statement_shown(lexical.text)  # no shared word: BM25 cannot
    dense = Speculator(whole=False, dense=DenseRanker(ConceptVectors())).plan(mem, QUESTION)
    assert statement_shown(dense.text) and "p1" in dense.paged_in
    assert dense.by_meaning == ("p1",) and lexical.by_meaning == ()
    # a statement (not a question) keeps the lexical fill: the channel serves questions
    said = "Thai food tonight sounds lovely."
    assert (Speculator(dense=DenseRanker(ConceptVectors())).plan(mem, said).text
            == Speculator().plan(mem, said).text)


def test_dense_places_come_first_and_bm25_keeps_the_rest_within_the_allowance() -> None:
    mem = chat_memory()
    question = "Was the train late, and can I have the satay?"
    lexical = Speculator(whole=False).plan(mem, question)
    dense = Speculator(whole=False, dense=DenseRanker(ConceptVectors())).plan(mem, question)
    assert statement_shown(dense.text) and not statement_shown(lexical.text)
    assert any("train was late" in line for line in dense.text.splitlines())
    for tokens in (0, 40, 90, 200, 400):
        spec = Speculator(whole=False, tokens=tokens, dense=DenseRanker(ConceptVectors())
                          ).plan(mem, question)
        assert spec.tokens <= tokens


def test_fill_settings_and_paged_chat_carry_the_channel() -> None:
    mem = chat_memory()
    model = ScriptedModel(name="recorder")
    chat = PagedChat(mem, model, fill=FillSettings(dense=DenseRanker(ConceptVectors())))
    model.reply("ok")
    chat.send_sync(QUESTION)
    sent = " ".join(str(m.get("content")) for m in model.requests[-1].messages)
    assert "allergic to peanuts" in sent
    plain_mem, plain = chat_memory(), ScriptedModel(name="recorder")
    plain.reply("ok")
    PagedChat(plain_mem, plain).send_sync(QUESTION)
    assert "allergic to peanuts" not in " ".join(str(m.get("content"))
                                                 for m in plain.requests[-1].messages)


def test_turns_are_embedded_once_and_again_only_after_a_rebuild() -> None:
    vectors = ConceptVectors()
    ranker = DenseRanker(vectors)
    mem = chat_memory(20)
    spec = Speculator(whole=False, dense=ranker)
    spec.plan(mem, QUESTION)
    closed = len(mem.passages.turns)
    assert vectors.calls[0] == closed  # every closed turn once, in one call
    spec.plan(mem, QUESTION)
    assert vectors.calls[1:] == [1, 1]  # only the two questions since
    for i in range(8):
        mem.add("user" if i % 2 == 0 else "assistant", f"More about the coast, part {i}.")
    spec.plan(mem, QUESTION)
    assert vectors.calls[-2] == len(mem.passages.turns) - closed  # only the new ones
    index = PassageIndex().sync(mem.pages[:3])
    ranker.sync(index)
    assert vectors.calls[-1] == len(index.turns)


def test_top_keeps_to_allowed_pages_and_is_deterministic() -> None:
    turns = [Turn(id=f"t{i}", role="user", text=t) for i, t in enumerate(
        ["hello there", STATEMENT, "the weather", "a sail on a yacht", "more weather", "bye"])]
    pages = [Page(id=PageId("p1"), index=0, turns=tuple(turns[:3]), text="", tokens=0),
             Page(id=PageId("p2"), index=1, turns=tuple(turns[3:]), text="", tokens=0)]
    index = PassageIndex(width=2).sync(pages)
    ranker = DenseRanker(ConceptVectors(), slots=2)
    assert ranker.top(index, "Is my sibling ok on a boat?", {0, 1}) == [2, 3]  # the yacht turn
    assert ranker.top(index, "Can I eat satay?", {0, 1}, k=1) == [0]  # ties: the earlier
    assert ranker.top(index, "Can I eat satay?", {1}, k=1) == [2]  # p1 not allowed
    assert ranker.top(index, "   ", {0, 1}) == []
    assert ranker.top(index, "Can I eat satay?", set()) == []


def test_pick_offers_the_first_passages_under_the_same_rules() -> None:
    turns = [Turn(id=f"t{i}", role="user", text=f"turn {i} about topic{i}") for i in range(9)]
    pages = [Page(id=PageId(f"p{k + 1}"), index=k, turns=tuple(turns[3 * k:3 * k + 3]), text="",
                  tokens=0) for k in range(3)]
    index = PassageIndex(width=2).sync(pages)

    def cost(runs: list[tuple[int, int, int]]) -> int:
        return 10 * sum(end - start for _, start, end in runs)

    assert pick(index, [], {0, 1, 2}, 100, cost, first=[6]) == [6, 7]
    assert pick(index, ["topic1"], {0, 1, 2}, 100, cost, first=[6])[:2] == [6, 7]
    assert pick(index, ["topic1"], {0, 1, 2}, 20, cost, first=[6]) == [6, 7]  # room used up
    assert pick(index, [], {0, 1}, 100, cost, first=[6]) == []  # p3 not allowed
    assert runs_of(index, [6, 7]) == [(2, 6, 8)]


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="slots must be an int >= 1"):
        DenseRanker(ConceptVectors(), slots=0)
    with pytest.raises(TypeError, match="vectors"):
        DenseRanker(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unit='passages'"):
        Speculator(unit="pages", dense=DenseRanker(ConceptVectors()))
    with pytest.raises(TypeError, match="DenseRanker"):
        FillSettings(dense=3)  # type: ignore[arg-type]


def test_turn_text_adds_a_shared_image_caption() -> None:
    plain = Turn(id="t1", role="user", text="Look!")
    shared = Turn(id="t2", role="user", text="Look!", meta={"blip_caption": "a dog on a boat"})
    assert turn_text(plain) == "Look!"
    assert turn_text(shared) == "Look! [shares an image: a dog on a boat]"
