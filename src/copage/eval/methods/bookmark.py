"""Bookmark + recall (copage, paper section 3) and copage's own variants.

The conversation is paged with a :class:`~copage.memory.PagedMemory`; evicted pages
appear as bookmarks and the model gets the ``recall`` tool (through
:class:`~copage.session.PagedChat`, probes asked with ``keep_pages=False`` so
each probe starts from the state after the whole conversation).

LLM-free *reference reader*: when a needed page is evicted, it recalls once the
page whose bookmark ranks first by BM25 against the question, with
:func:`copage.eval.routing.route` (the code path of ``copage simulate``'s
``routing_top1``); prompt tokens are counted after that page-in exactly as
``copage simulate`` counts them (:meth:`Pager.prompt_tokens`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from copage.core import prompt
from copage.core.cache import PageCache
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.policies import get_policy
from copage.core.tokens import default_tokenizer
from copage.core.types import PageId
from copage.eval.datasets.model import Conversation, Probe
from copage.eval.methods.base import (
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    RecallInfo,
)
from copage.eval.methods.calls import Recorder
from copage.eval.routing import route
from copage.llm.messages import tool_message
from copage.llm.types import ChatModel
from copage.memory import PagedMemory
from copage.session import PagedChat, Speculator


@dataclass(frozen=True, slots=True)
class Variant:
    """Which copage features a bookmark method uses."""

    by_query: bool = False
    speculative: bool = False
    copage: bool = False


def pager_config(settings: MethodSettings, variant: Variant) -> PagerConfig:
    """The paging settings of a variant."""
    if variant.copage:
        boundary, policy, keywords = (settings.copage_boundary, settings.copage_policy,
                                      settings.copage_keywords)
    else:
        boundary, policy, keywords = settings.boundary, settings.policy, settings.keywords
    if policy == "belady":
        raise ValueError("the bookmark methods cannot use the belady oracle policy "
                         "(it needs the future); use the paging experiment for it")
    return PagerConfig(boundary=boundary, policy=policy, resident_pages=settings.resident_pages,
                       keywords=keywords, bookmark_format=settings.format,
                       recall_by_query=variant.by_query)


class BookmarkConversation:
    """A conversation paged once; probes are asked from the state after its last turn."""

    def __init__(self, conversation: Conversation, settings: MethodSettings, variant: Variant) -> None:
        self.conversation, self.settings, self.variant = conversation, settings, variant
        self.memory = PagedMemory(store="memory://", config=pager_config(settings, variant))
        with self.memory.transaction() as mem:
            mem.add("system", INSTRUCTION)
            for t in conversation.turns:
                meta: dict[str, Any] = {"id": t.id, **dict(t.meta)}
                for key in ("speaker", "timestamp", "session"):
                    if getattr(t, key) is not None:
                        meta[key] = getattr(t, key)
                mem.add(t.role, t.text, **meta)
            mem.pager.close_open_page()
            mem.pager.refresh_all_bookmarks()  # placement end, as copage simulate does
        self.page_of = {tid: p.index for p in self.memory.pager.pages for tid in p.turn_ids}
        self.tokenizer = default_tokenizer()
        self.lock = asyncio.Lock()
        self.speculator = Speculator(settings.speculative_threshold)

    @property
    def pager(self) -> Pager:
        return self.memory.pager

    def needed(self, probe: Probe) -> tuple[PageId, ...]:
        """Pages holding the probe's evidence."""
        idx = sorted({self.page_of[e] for e in probe.evidence if e in self.page_of})
        return tuple(self.pager.pages[i].id for i in idx)

    def build(self, probe: Probe) -> MethodPrompt:
        """The reference reader's prompt: context, then one recall of the BM25-routed page."""
        pager = self.pager
        needed = self.needed(probe)
        resident = set(pager.resident)
        missing = [p for p in needed if p not in resident]
        ctx = pager.context(probe.question)
        visible = {t.id for p in pager.resident for t in pager.pages[int(p[1:]) - 1].turns}
        visible.update(t.id for t in pager.open_turns)
        paged: list[PageId] = []
        if self.variant.speculative and missing:
            best, score = self.speculator.score(pager, probe.question)
            if best is not None and score >= self.settings.speculative_threshold:
                paged.append(best)
        routed: PageId | None = None
        credit: float | None = None
        if any(p not in paged for p in missing):
            evicted = [p for p in pager.evicted if p not in paged]
            want = {i for i, p in enumerate(evicted) if p in needed}
            r = route(probe.question, [pager.bookmark(p).text for p in evicted], want)
            credit = r.credit
            if r.best >= 0:
                routed = evicted[r.best]
                paged.append(routed)
        messages = list(ctx.messages)
        for n, pid in enumerate(paged):
            page = pager.pages[int(pid[1:]) - 1]
            visible.update(page.turn_ids)
            call = {"id": f"ref_{n}", "type": "function", "function": {
                "name": pager.config.tool_name, "arguments": f'{{"page": "{pid}"}}'}}
            messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                         tool_message(f"ref_{n}", prompt.page_block(pid, page.text))]
        tokens = self._tokens_after(probe.question, paged, needed)
        return MethodPrompt(messages, list(ctx.tools), frozenset(visible), tokens, needed,
                            tuple(missing), routed, credit)

    def _tokens_after(self, question: str, paged: list[PageId], needed: tuple[PageId, ...]) -> int:
        """``Pager.prompt_tokens`` after paging in ``paged``, on a copy of the cache."""
        pager = self.pager
        n = pager.prompt_tokens(question)
        if not paged:
            return n
        cfg = pager.config
        cache = PageCache.restore(
            get_policy(cfg.policy, **dict(cfg.policy_options)), pager.cache.snapshot(),
            size_of=lambda pid: pager.pages[int(pid[1:]) - 1].tokens,
        )
        for page in pager.pages:
            cache.set_page_text(page.id, page.text)
        cache.set_query(question)
        for pid in paged:
            access = cache.access(pid, protect=needed)
            if not access.hit:
                n += pager.pages[int(pid[1:]) - 1].tokens - pager.bookmark(pid).tokens
            for victim in access.evicted:
                n += pager.bookmark(victim).tokens - pager.pages[int(victim[1:]) - 1].tokens
        return n

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """Ask through :class:`PagedChat` (recall loop); the page-ins are rolled back."""
        rec = Recorder(model, self.tokenizer)
        async with self.lock:
            chat = PagedChat(self.memory, rec, max_recalls_per_turn=self.settings.max_recalls,
                             speculative=self.variant.speculative,
                             speculative_threshold=self.settings.speculative_threshold,
                             temperature=self.settings.temperature,
                             max_tokens=self.settings.max_tokens)
            record = await chat.ask_probe(probe.question, self.needed(probe), keep_pages=False)
        infos = tuple(RecallInfo(r.tool, r.arguments, r.status, r.page) for r in record.recalls)
        return MethodAnswer(record.answer, tuple(rec.calls), record.needed, record.evicted,
                            infos, record.speculative)


@dataclass(frozen=True, slots=True)
class BookmarkMethod:
    """``bookmark_recall`` and its variants (``+query``, ``+speculative``, ``+copage``)."""

    name: str
    description: str
    variant: Variant = Variant()
    uses_bookmarks: bool = True

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> BookmarkConversation:
        """Page the whole conversation."""
        return BookmarkConversation(conversation, settings, self.variant)
