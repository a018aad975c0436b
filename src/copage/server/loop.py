"""The proxy's cooperative loop: recall calls served here, client tool calls returned.

Like :class:`copage.session.PagedChat`, but the client owns the conversation's
tools: copage's recall tool is offered beside the client's; recall calls are run
here (via :func:`copage.session.tools.execute`, i.e. ``PagedMemory.recall_result``)
and never reach the client; any other tool call ends the turn and goes back to
the client. Usage is summed over every upstream call of the turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.llm.messages import assistant_message, tool_message
from copage.llm.types import ChatModel, ChatRequest, ChatResponse, Message
from copage.memory import PagedMemory
from copage.server.request import ChatCall
from copage.session.report import RecallRecord
from copage.session.tools import execute, refuse

Complete = Callable[[ChatModel, ChatRequest], Awaitable[tuple[ChatResponse, float]]]
#: Provider label in errors a tenant may see (a model's spec can hold the upstream URL).
UPSTREAM = "upstream"


@dataclass(slots=True)
class Outcome:
    """What the turn returns to the client."""

    text: str
    tool_calls: list[ToolCall]
    finish_reason: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    latencies: list[float] = field(default_factory=list)
    recalls: list[RecallRecord] = field(default_factory=list)


def _choice(call: ChatCall, first: bool, capped: bool) -> Any:
    if capped:
        return "none"
    c = call.tool_choice
    if c in (None, "auto", "none"):
        return None
    if c == "required":
        return "required"
    return c if first else None  # a named tool is forced on the first call only


async def run_loop(
    mem: PagedMemory, model: ChatModel, call: ChatCall, complete: Complete, *,
    max_recalls: int,
) -> Outcome:
    """Run upstream calls until the model answers or calls a client tool."""
    ctx = mem.context()
    recall_name = mem.config.tool_name
    client_tools = [] if call.tool_choice == "none" else list(call.tools)
    tools: list[Mapping[str, Any]] = [*ctx.tools, *client_tools]
    messages: list[Message] = list(ctx.messages)
    out = Outcome("", [], "stop", model.name)
    seen: set[str] = set()
    after_cap = 0
    while True:
        capped = len(out.recalls) >= max_recalls
        offered: Sequence[Mapping[str, Any]] = tools if after_cap == 0 else client_tools
        choice = _choice(call, out.calls == 0, capped) if offered else None
        request = ChatRequest(
            messages=tuple(messages), tools=tuple(offered), tool_choice=choice,
            temperature=call.temperature, max_tokens=call.max_tokens, extra=call.extra,
        )
        response, latency = await complete(model, request)
        _check_text(response)
        out.calls += 1
        out.latencies.append(latency)
        out.prompt_tokens += response.usage.prompt_tokens
        out.completion_tokens += response.usage.completion_tokens
        out.model = response.model or out.model
        after_cap += capped
        recalls = [c for c in response.tool_calls if c.name == recall_name]
        client = [c for c in response.tool_calls if c.name != recall_name]
        if not recalls or client:
            for c in recalls:  # mixed reply: page in now, return the client's calls
                out.recalls.append(_serve(mem, c, out, max_recalls))
            out.text, out.tool_calls = response.text, client
            out.finish_reason = "tool_calls" if client else (response.finish_reason or "stop")
            return out
        if capped and after_cap >= 2:
            raise BadResponse(UPSTREAM, f"the model kept calling {recall_name}() after the "
                              f"cap of {max_recalls} recalls per turn")
        unique = [_unique(c, seen, out.calls) for c in recalls]
        messages.append(assistant_message(response.text, unique))
        for c in unique:
            text = _serve_text(mem, c, out, max_recalls)
            messages.append(tool_message(c.id, text))


def _check_text(response: ChatResponse) -> None:
    """A reply holding a lone surrogate cannot be stored or sent as UTF-8: a bad reply."""
    parts = [response.text, *(c.arguments for c in response.tool_calls),
             *(c.name for c in response.tool_calls), *(c.id for c in response.tool_calls)]
    for part in parts:
        try:
            str(part).encode("utf-8")
        except UnicodeEncodeError:
            raise BadResponse(UPSTREAM, "the reply contains a lone surrogate "
                              "(invalid Unicode text)") from None


def _serve_text(mem: PagedMemory, c: ToolCall, out: Outcome, cap: int) -> str:
    text, record = refuse(c, cap) if len(out.recalls) >= cap else execute(mem, c)
    out.recalls.append(record)
    return text


def _serve(mem: PagedMemory, c: ToolCall, out: Outcome, cap: int) -> RecallRecord:
    return refuse(c, cap)[1] if len(out.recalls) >= cap else execute(mem, c)[1]


def _unique(call: ToolCall, seen: set[str], n: int) -> ToolCall:
    """The call with an id unique within the turn (some servers reuse ids)."""
    cid = call.id
    if not cid or cid in seen:
        cid = f"call_copage_{n}_{len(seen)}"
        call = ToolCall(cid, call.name, call.arguments)
    seen.add(cid)
    return call
