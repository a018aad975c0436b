"""Facts asked in other words: does a fact stated once reach the model when asked later?

Each fact of :data:`~copage.eval.paraphrase_facts.FACTS` is stated once by the user
in a long chat and asked about later in other words (synonyms, another word form,
an indirect question). :func:`run_fact` replays such a chat through copage at its
defaults exactly as an application does (``PagedChat(PagedMemory(), model)``, every
user turn sent with :meth:`~copage.session.PagedChat.send`), with a recording
:class:`~copage.llm.scripted.ScriptedModel` as the model: it answers with the chat's
next assistant turn and keeps every request, so the request sent for the question
shows what reached the model. It is a test tool; its replies are never a result.

A fact **reaches** the model when its statement is in that request: ``resident``
(in the pages the request carries), ``filled`` (in the speculative fill), or
``bookmark`` (the statement itself is absent, but the bookmark of the page holding
it is in the request and names all of the fact's proof words); else ``missing``.
Proof words found anywhere else (another turn of the chat that mentions yoga, say)
do not count: they are not the fact.

**Splits.** The facts are split deterministically by a digest of their id (not by
their order or content, and a fact's split does not change when facts are added):
a fact whose digest, read as a fraction, is below :data:`DEV_SHARE` is in the
``dev`` split (about 60% of them), for tuning and for looking at failures; the rest
are the ``final`` split, measured only to report a result. Nothing may be chosen by looking at the
``final`` figures (a setting, a threshold, a stemmer, a fact's wording): a change
made for them makes the split worthless, and a new final split is then needed.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from copage.llm.chat_messages import text_of
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session.loop import PagedChat

from .paraphrase_facts import FACTS, Fact

__all__ = [
    "ACK", "DEV_SHARE", "FACTS", "STATUSES", "Fact", "Line", "Reach", "classify",
    "lines_of_conversations", "run_fact", "split", "split_of", "synthetic_lines", "window",
]

DEV_SHARE = 0.6
"""Expected share of the facts in the ``dev`` split; the rest is ``final``."""
ACK = "Thanks for telling me, I'll keep that in mind."
"""The assistant's reply to a fact's statement (holds none of any fact's proof words)."""
STATUSES = ("resident", "filled", "bookmark", "missing")


class Line(NamedTuple):
    """One turn of a replayed chat: ``user`` or ``assistant``, and its text."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Reach:
    """Whether one fact reached the model, how, and what the question's request held."""

    fact: str
    split: str
    status: str
    turns: int
    prompt_tokens: int
    evicted_pages: int
    #: per priced model, the whole chat's input cost as sent and as full context would
    #: have cost, caching priced (``stats().savings``)
    cost_usd: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def reached(self) -> bool:
        """The statement (or all its proof words) was in the question's request."""
        return self.status != "missing"


def _fraction(fact: Fact) -> float:
    """The digest of the fact's id as a number in [0, 1)."""
    return int.from_bytes(hashlib.blake2b(fact.id.encode(), digest_size=8).digest()) / 2**64


def split(name: str, facts: Sequence[Fact] = FACTS) -> tuple[Fact, ...]:
    """The facts of split ``name`` (``dev``, ``final`` or ``all``), in the set's order."""
    if name == "all":
        return tuple(facts)
    if name not in ("dev", "final"):
        raise ValueError(f"unknown split {name!r}; valid: dev, final, all")
    return tuple(f for f in facts if (_fraction(f) < DEV_SHARE) == (name == "dev"))


def split_of(fact: Fact, facts: Sequence[Fact] = FACTS) -> str:
    """``dev`` or ``final``."""
    return "dev" if fact in split("dev", facts) else "final"


def lines_of_conversations(conversations: Sequence[Any]) -> list[Line]:
    """The turns of LoCoMo-format conversations (``copage.eval.datasets``), one after the
    other; in each, its first speaker is the user and the other the assistant."""
    out: list[Line] = []
    for conv in conversations:
        if not conv.turns:
            continue
        first = conv.turns[0].speaker or conv.turns[0].role
        out.extend(Line("user" if (t.speaker or t.role) == first else "assistant", t.text)
                   for t in conv.turns)
    return out


def synthetic_lines(n: int, seed: int = 0) -> list[Line]:
    """``n`` turns of the synthetic generator's filler chat (for tests: no dataset needed)."""
    from copage.eval.synthetic.filler import labelled_filler

    out: list[Line] = []
    for item in labelled_filler(random.Random(seed), n, revisit=True):
        out.append(Line("user", item.exchange.user))
        if item.exchange.assistant:
            out.append(Line("assistant", item.exchange.assistant))
    return out[:n]


def window(lines: Sequence[Line], start: int, n: int) -> list[Line]:
    """``n`` lines from ``start``, wrapping around (a long chat from a shorter source)."""
    if not lines:
        raise ValueError("no chat lines to build a conversation from")
    return [lines[(start + i) % len(lines)] for i in range(n)]


def run_fact(
    fact: Fact, before: Sequence[Line], after: Sequence[Line], *, split_name: str = "",
    memory: Callable[[], PagedMemory] = PagedMemory, chat_options: dict[str, Any] | None = None,
) -> Reach:
    """Replay ``before``, the fact's statement (and :data:`ACK`), ``after``, then ask the
    fact's question; whether the statement reached the model (module docstring).

    ``memory`` makes the conversation (default: ``PagedMemory()``, the defaults, in
    memory); ``chat_options`` are :class:`PagedChat` keywords (default: none)."""
    mem = memory()
    model = ScriptedModel(name="recorder")
    chat = PagedChat(mem, model, **(chat_options or {}))
    lines = [*before, Line("user", fact.statement), Line("assistant", ACK), *after]
    _replay(chat, model, lines)
    model.reply("ok")
    sent_before = len(model.requests)
    metered = _metered(mem)
    report = chat.send_sync(fact.question)
    request = model.requests[sent_before]  # the question's first (in speculative, only) call
    messages = [text_of(m.get("content")) for m in request.messages]
    status = classify(fact, messages, filled=bool(report.speculative),
                      bookmark=_bookmark_of(mem, fact.statement))
    cost = {m: (s.paged_usd, s.full_usd) for m, s in mem.stats().savings.items()}
    return Reach(fact.id, split_name, status, len(mem.turns),
                 _metered(mem) - metered, len(mem.evicted), cost)


def _metered(mem: PagedMemory) -> int:
    """Prompt tokens of every request sent so far, as copage's prompt meter counts them."""
    return int((mem.stats().prompt_cache or {}).get("prompt_tokens", 0))


def _replay(chat: PagedChat, model: ScriptedModel, lines: Sequence[Line]) -> None:
    """Send each user line (the model answers with the next assistant line, or ``ok``);
    an assistant line no user line precedes is added as it is."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.role != "user":
            chat.memory.add("assistant", line.text)
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        answered = nxt is not None and nxt.role == "assistant"
        model.reply(nxt.text if answered and nxt is not None else "ok")
        chat.send_sync(line.text)
        i += 2 if answered else 1


def _bookmark_of(mem: PagedMemory, statement: str) -> str | None:
    """The bookmark text of the closed page holding ``statement`` (None: still open)."""
    for page in mem.pages:
        if any(t.text == statement for t in page.turns):
            return mem.bookmarks()[page.id].text
    return None


def classify(fact: Fact, messages: Sequence[str], *, filled: bool,
             bookmark: str | None = None) -> str:
    """Where the statement is in a request's message texts (the question last; with a
    fill, the fill just before it): ``resident``, ``filled``, ``bookmark`` (the
    statement's page's ``bookmark`` is shown and names every proof word) or ``missing``."""
    history = messages[:-1]
    fill = history[-1] if filled and history else None
    if fill is not None and fact.statement in fill:
        return "filled"
    if any(fact.statement in m for m in history):
        return "resident"
    if bookmark and any(bookmark in m for m in history):
        words = [re.compile(rf"(?<!\w){re.escape(w)}(?!\w)", re.IGNORECASE) for w in fact.proof]
        if all(p.search(bookmark) for p in words):
            return "bookmark"
    return "missing"
