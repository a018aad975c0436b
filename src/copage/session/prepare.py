"""One turn's preparation, shared by every front end: context -> style -> fill -> meter.

:func:`prepare` builds what the model is sent for a turn before the recall loop runs:
the paged context (:meth:`PagedMemory.context`, or messages the front end already
holds), the prompt style (:func:`copage.session.prompts.styled`), the speculative fill
(:mod:`copage.session.speculate`, placed by :func:`~copage.session.speculate.with_fill`)
and the meter (``PagedMemory.meter_request``: ``stats().prompt_cache`` counts the request
as sent, fill included). :class:`~copage.session.PagedChat`, the proxy
(:mod:`copage.server.proxy_loop`), the LangChain middleware, the Agents session and the
benchmark's offline path (:mod:`copage.eval.methods.bookmark`) all call it; no other
place plans a turn's fill or meters its request. :func:`plan_fill` is the fill on its
own, for a front end that plans it earlier in the turn (PagedChat plans it before the
``choose`` step, on the evicted set the message arrived with).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.llm.chat_messages import text_of
from copage.session import trace as tracing
from copage.session.prompts import styled
from copage.session.speculate import Speculation, Speculator, with_fill
from copage.session.trace import TurnTrace
from copage.session.view import PagedView

__all__ = ["Prepared", "plan_fill", "prepare"]

Message = dict[str, Any]
Count = Callable[[list[Message], list[Message]], int]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A turn's request before the recall loop.

    Attributes:
        messages: the messages to send (styled, fill included).
        tools: the tools to send (the recall tool when the mode offers it).
        fill: the speculative fill (None: the step did not run).
        tokens: ``count(messages, tools)`` when a ``count`` was given, else None.
    """

    messages: list[Message]
    tools: list[Message]
    fill: Speculation | None = None
    tokens: int | None = None

    @property
    def filled(self) -> tuple[str, ...]:
        """The pages the fill showed (none when nothing was paged in)."""
        return self.fill.paged_in if self.fill is not None else ()


def plan_fill(speculator: Speculator, pager: PagedView, text: str, *, tokens: int | None = None,
              record: bool = True, trace: TurnTrace = tracing.NULL) -> Speculation:
    """The speculative fill for ``text`` within ``tokens`` (default: the speculator's
    allowance). ``record``: recorded as a ``speculative`` event (``Speculator.page_in``,
    the runtime) and traced; otherwise only planned (the offline benchmark)."""
    if not record:
        return speculator.plan(pager, text, tokens)
    t0 = tracing.now_ns()
    spec = speculator.page_in(pager, text, tokens)
    trace.fill(spec, t0)
    return spec


def prepare(
    pager: PagedView, *, messages: Sequence[Mapping[str, Any]] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None, question: str | None = None,
    style: str = "paper", offer_tool: bool = True, enum_pages: bool = False,
    speculator: Speculator | None = None, fill_for: str | None = None,
    planned: Speculation | None = None, meter: bool = True, system_prompt: str | None = None,
    count: Count | None = None, trace: TurnTrace = tracing.NULL,
) -> Prepared:
    """Context, style, fill and meter of one turn (see module docstring).

    Args:
        pager: the conversation (a ``PagedMemory``; a bare pager when ``meter`` is off).
        messages: the context's messages; None: ``pager.context(question)``'s.
        tools: the context's tools; None: ``pager.context(question)``'s.
        question: a probe's question (the context's and the meter's).
        style: the prompt style (:data:`copage.session.prompts.PROMPT_STYLES`).
        offer_tool: the mode offers the recall tool.
        enum_pages: list the evicted page ids as an ``enum`` in the recall tool's schema.
        speculator: plan a fill with it (None: no fill, unless ``planned``).
        fill_for: the text the fill matches; None: the latest user message's text (no
            fill when it is blank).
        planned: a fill planned earlier in the turn (:func:`plan_fill`), placed here.
        meter: count the request as sent in ``stats().prompt_cache``.
        system_prompt: the front end's own system text sent before copage's (the
            LangChain agent's): metered so; not in :attr:`Prepared.messages`.
        count: tokens of the request (``Prepared.tokens``), e.g. the benchmark's bill.
        trace: gets the fill's span.
    """
    if messages is None or tools is None:
        context = pager.context(question, meter=False)  # type: ignore[attr-defined]
        messages = context.messages if messages is None else messages
        tools = context.tools if tools is None else tools
    tool_list = _enum_pages(pager, tools) if enum_pages else tools
    sent, sent_tools = styled(style, pager, messages, tool_list, offer_tool=offer_tool)
    spec = planned
    if spec is None and speculator is not None:
        text = fill_for if fill_for is not None else next(
            (text_of(m.get("content")) for m in reversed(sent) if m.get("role") == "user"), "")
        if text.strip():
            spec = plan_fill(speculator, pager, text, trace=trace)
    sent = with_fill(sent, spec)
    if meter:
        shown = sent if system_prompt is None else _with_system(sent, system_prompt)
        pager.meter_request(shown, sent_tools, question,  # type: ignore[attr-defined]
                            system_prompt=system_prompt)
    tokens = count(sent, sent_tools) if count is not None else None
    return Prepared(sent, sent_tools, spec, tokens)


def _enum_pages(pager: PagedView, tools: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """The tools with the evicted page ids as the recall tool's ``page`` enum."""
    evicted = pager.evicted
    if not evicted:
        return tools
    out = copy.deepcopy(list(tools))
    for t in out:
        fn = t.get("function", {})
        if fn.get("name") == pager.config.tool_name:
            fn["parameters"]["properties"]["page"]["enum"] = evicted
    return out


def _with_system(messages: list[Message], system_prompt: str) -> list[Message]:
    """``messages`` whose first (system) message has ``system_prompt`` before its text."""
    head = str(messages[0].get("content") or "") if messages else ""
    joined = "\n\n".join(p for p in (system_prompt, head) if p)
    return [{"role": "system", "content": joined}, *messages[1:]]
