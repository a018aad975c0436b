"""The bookmark methods' budget plan: the resident room (and a speculative fill's
allowance) such that a probe's whole bill fits the budget (see
:meth:`BudgetPlan._plan` and :mod:`copage.eval.methods.bookmark`)."""

from __future__ import annotations

from dataclasses import replace

from copage.core import prompt
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.types import page_index
from copage.eval.datasets.probes import Conversation
from copage.eval.methods.bookmark_pages import (
    BookmarkCache,
    Overhead,
    build_pager,
    measure,
    pager_config,
)
from copage.eval.methods.bookmark_variant import Variant
from copage.eval.methods.method import MethodSettings, message_tokens, request_tokens
from copage.session.choose import choose_request
from copage.session.prompts import REMINDER, styled
from copage.session.speculate import Speculator

__all__ = ["FILL_FRAME", "FINER", "BudgetPlan"]

FILL_FRAME = 8
"""Tokens of the speculative fill's message framing (role, separators), kept off its
allowance (:attr:`BookmarkConversation.fill`)."""
FINER: dict[str, tuple[str, ...]] = {"session": ("fixed_10", "fixed_5"), "fixed_10": ("fixed_5",)}
"""Finer page boundaries the budget plan falls back to, in order (see ``_plan``)."""


class BudgetPlan:
    """The budget plan of :class:`~copage.eval.methods.bookmark.BookmarkConversation`
    (its base): what it plans with, and the plan."""

    conversation: Conversation
    settings: MethodSettings
    variant: Variant
    cache: BookmarkCache
    speculator: Speculator
    question_tokens: int
    choose_kind: str | None
    tool_kind: str | None
    shrink: list[str]
    fill: int
    _least_fill: int

    def _plan(self) -> tuple[PagerConfig, Pager]:
        """The pager whose worst reference-path probe bills at most the budget.

        Rule (``docs/benchmark-methods.md``): every page resident when the whole
        conversation and the longest question fit in one call; else (or with
        ``resident_pages``, the paper's controlled setting) the resident room is
        shrunk until :meth:`worst` fits. When even no resident page leaves room,
        the fixed parts shrink in this order: bookmarks of fewer keywords (2, then
        1), then a recall reserve of the median page instead of the largest
        (recalls of larger pages then do not fit), then finer pages (:data:`FINER`:
        ``session`` -> ``fixed_10`` -> ``fixed_5``: smaller resident and recalled
        pages); a probe that still does not fit is "does not fit"
        (:data:`DOES_NOT_FIT`, a miss). What was shrunk is in :attr:`shrink`.

        Speculative variants split the room: ``speculative_window`` of it for the
        resident pages (at least one token), the rest is the fill's allowance
        (:attr:`fill`), billed in every answer call.
        """
        settings, variant = self.settings, self.variant
        budget, q = settings.budget, self.question_tokens
        base = pager_config(settings, variant)
        over = measure(self.conversation, base, self.cache)
        if settings.resident_pages is None and over.whole + q <= budget:
            config = pager_config(settings, variant, 10**9)
            return config, build_pager(self.conversation, config, self.cache)
        if settings.resident_pages is not None:
            config = replace(base, resident_pages=settings.resident_pages, resident_tokens=None)
            pager = build_pager(self.conversation, config, self.cache)
            if self.worst(pager, self._reserve(over)) <= budget:
                if self.variant.speculative:  # the room the resident pages leave
                    spare = (budget - self.worst(pager, self._reserve(over))) // self.answer_calls
                    self.fill = max(0, spare - FILL_FRAME)
                return config, pager
            self.shrink.append(f"resident_pages={settings.resident_pages} does not fit: "
                               "resident room planned in tokens")
        n = self.answer_calls
        last: tuple[PagerConfig, Pager] | None = None
        least = kept = 0
        for boundary in (base.boundary, *FINER.get(base.boundary, ())):
            for nk in dict.fromkeys((base.n_keywords, min(2, base.n_keywords), 1)):
                cfg = replace(base, boundary=boundary, n_keywords=nk)
                over = measure(self.conversation, cfg, self.cache)
                self._least_fill = self._one_page_fill(cfg)
                for reserve in dict.fromkeys((self._reserve(over), over.recall_median)
                                             if n == 2 else (0,)):
                    fixed = over.fixed if self.tool_kind else over.answer_only
                    choose = over.choose if self.choose_kind else 0
                    room = max(1, (budget - reserve - choose) // n - fixed - q)
                    pager = build_pager(self.conversation, replace(cfg, resident_tokens=self._split(room)),
                                        self.cache)
                    for _ in range(6):
                        excess = self.worst(pager, reserve) - budget
                        if excess <= 0 or room <= 1:
                            break
                        room = max(1, room - max(1, -(-excess // n)))
                        pager = build_pager(self.conversation, replace(cfg, resident_tokens=self._split(room)),
                                        self.cache)
                    worst = self.worst(pager, reserve)
                    resident = self._split(room)
                    if last is None or worst < least:  # the fallback: the least costly plan
                        last, least = (replace(cfg, resident_tokens=resident), pager), worst
                        kept = self.fill
                    if worst <= budget:
                        last = (replace(cfg, resident_tokens=resident), pager)
                        if boundary != base.boundary:
                            self.shrink.append(f"pages of {boundary} instead of {base.boundary}")
                        if nk != base.n_keywords:
                            self.shrink.append(f"bookmarks of {nk} keyword(s) instead of "
                                               f"{base.n_keywords}")
                        if n == 2 and reserve != self._reserve(over):
                            self.shrink.append(f"recall reserve of the median page ({reserve} "
                                               "tokens) instead of the largest")
                        return last
        self.shrink.append("the fixed part does not fit even shrunk: the least costly plan is "
                           "kept, and its probes over the budget do not fit")
        assert last is not None
        self.fill = kept
        return last

    def _split(self, room: int) -> int:
        """The resident pages' share of ``room``; a speculative variant's fill gets the
        rest (:attr:`fill`, its message framing taken off)."""
        if not self.variant.speculative:
            return room
        resident = max(1, int(room * self.settings.speculative_window))
        self.fill = max(room - resident - FILL_FRAME, self._least_fill)
        return resident

    def _one_page_fill(self, config: PagerConfig) -> int:
        """The allowance a fill of the largest page needs: a speculative variant's fill is
        never smaller (its resident room shrinks first), so one page always fits."""
        if not self.variant.speculative:
            return 0
        pager = build_pager(self.conversation, replace(config, resident_tokens=10**9), self.cache)
        return max((self.speculator.plan_cost(pager, [p.id]) for p in pager.pages), default=0)

    @property
    def answer_calls(self) -> int:
        """Answer calls the plan bills: two with the recall tool (the call after one
        recall), unless ``plan_recall`` is off (a probe whose recall then exceeds the
        budget does not fit); else one."""
        return 2 if self.tool_kind and self.settings.plan_recall else 1

    def _reserve(self, over: Overhead) -> int:
        r = self.settings.recall_reserve
        return r if r is not None else over.recall

    def worst(self, pager: Pager, reserve: int) -> int:
        """Billed tokens of the costliest reference-path probe of ``pager``'s state (an
        upper bound): the choose call, ``n`` answer calls with the largest page-ins
        (speculative, chosen) added and the longest question, and one recalled page of
        ``reserve`` tokens."""
        if not pager.evicted:
            return self._answer_tokens(pager) + self.question_tokens
        # an upper bound: the fill's whole allowance, and the largest page chosen with
        # nothing evicted for it
        grown = self.fill + FILL_FRAME if self.variant.speculative else 0
        if self.choose_kind is not None:
            largest = max(pager.evicted, key=lambda p: pager.pages[page_index(p)].tokens)
            grown += message_tokens(prompt.turn_messages(list(pager.pages[page_index(largest)].turns)),
                                    [], pager.tokenizer)
        answer = self._answer_tokens(pager) + grown + self.question_tokens
        total = answer
        if self.answer_calls == 2:
            total += answer + reserve
        if self.choose_kind:
            total += request_tokens(choose_request(pager, "", schema=False, temperature=None,
                                                   max_tokens=1), pager.tokenizer) + self.question_tokens
        return total

    def _answer_tokens(self, pager: Pager) -> int:
        """The answer call's prompt tokens of ``pager``'s state before the question, in the
        variant's mode and prompt style."""
        ctx = pager.context()
        messages, tools = styled(self.settings.prompt_style, pager, ctx.messages, ctx.tools,
                                 offer_tool=self.tool_kind is not None)
        n = message_tokens(messages, tools, pager.tokenizer)
        if self.settings.prompt_style == "compact" and self.tool_kind and pager.evicted:
            n += pager.tokenizer.count("\n\n" + REMINDER.format(tool=pager.config.tool_name))
        return n
