"""``TextProtocolModel``: native tool calling on top of a model that only writes text.

The wrapper turns a request with tools into a plain-text request (instructions
in the system prompt, past tool calls and results as text, consecutive messages
of one role merged because strict chat templates demand alternation), and
parses the reply back into tool calls, so callers see the native interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from copage.llm.chat_messages import call_names, text_of, tool_calls_of
from copage.llm.model_types import ChatRequest, ChatResponse, Message
from copage.llm.textproto import format_call, parse_reply, render_tools
from copage.llm.wrapper import ModelWrapper


def to_text_messages(
    messages: Sequence[Message], tools: Sequence[Any], *, force: str | None = None
) -> list[dict[str, Any]]:
    """Messages with tool calls/results as text and the tool instructions in the system prompt.

    ``force`` (a tool name, or ``"required"``) says the reply must be a call: the
    instructions say so and the last user message ends with a reminder.
    """
    names = call_names(messages)
    out: list[dict[str, Any]] = []
    for m in messages:
        role = str(m.get("role"))
        text = text_of(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            lines = [text] if text else []
            lines += [format_call(c) for c in tool_calls_of(m)]
            msg = {"role": "assistant", "content": "\n".join(lines)}
        elif role == "tool":
            name = names.get(str(m.get("tool_call_id")), "tool")
            msg = {"role": "user", "content": f"TOOL RESULT {name}:\n{text}"}
        else:
            msg = {"role": role, "content": text}
        if out and out[-1]["role"] == msg["role"] and role != "system":
            out[-1]["content"] = f"{out[-1]['content']}\n\n{msg['content']}"
        else:
            out.append(msg)
    if tools:
        instructions = render_tools(tools, force=force)
        if force and out and out[-1]["role"] == "user":
            target = "a tool" if force == "required" else force
            out[-1]["content"] = f"{out[-1]['content']}\n\n(Call {target} now.)"
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{instructions}"
        else:
            out.insert(0, {"role": "system", "content": instructions})
    return out


def forced_tool(choice: Any) -> str | None:
    """The tool a ``tool_choice`` forces (``"required"``: any tool), else None."""
    if choice == "required":
        return "required"
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else None
    return None


class TextProtocolModel(ModelWrapper):
    """Wraps a text-only model so it accepts tools and returns tool calls."""

    @property
    def spec(self) -> str:
        return f"{self.inner.spec}#text"

    def __repr__(self) -> str:
        return f"TextProtocolModel({self.inner!r})"

    def to_inner(self, request: ChatRequest) -> ChatRequest:
        """The plain-text request sent to the inner model."""
        tools = () if request.tool_choice == "none" else request.tools
        msgs = to_text_messages(request.messages, tools, force=forced_tool(request.tool_choice))
        return replace(request, messages=tuple(msgs), tools=(), tool_choice=None)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer, with text-protocol tool calls parsed into ``tool_calls``."""
        response = await self.inner.complete(self.to_inner(request))
        if not request.tools or request.tool_choice == "none":
            return response
        parsed = parse_reply(response.text, request.tools)
        if not parsed.tool_calls:
            return response
        return response.with_(
            text=parsed.text, tool_calls=parsed.tool_calls, finish_reason="tool_calls"
        )
