"""Mapping OpenAI-format requests to Anthropic Messages API requests, and replies back.

System messages become the separate ``system`` prompt; assistant ``tool_calls``
become ``tool_use`` blocks; ``tool`` messages become ``tool_result`` blocks in a
user message, and consecutive messages of one role are merged (Anthropic wants
user and assistant to alternate). Tool-call-only assistant turns carry no text
block (Anthropic rejects empty text blocks).

Two shapes Anthropic rejects with HTTP 400 are repaired: a request **without
tools** whose history holds tool calls (the recall loop's last request after
its cap) gets those calls and results as plain text, and a conversation that
opens with an assistant turn gets a short user turn first
(:data:`OPENING_USER_TEXT`), since the Messages API must start with a user turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from copage.core.types import ToolCall
from copage.llm.chat_messages import call_names, text_of, tool_calls_of
from copage.llm.errors import BadResponse, EmptyReply
from copage.llm.model_types import ChatResponse, Message, ToolSpec, Usage
from copage.llm.prices import cost_of

#: The user turn put before a conversation that starts with an assistant turn.
OPENING_USER_TEXT = "(The conversation starts.)"

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


def _input_of(call: ToolCall) -> Any:
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {"arguments": call.arguments}  # keep malformed model output rather than fail
    return value if isinstance(value, dict) else {"value": value}


def _call_text(call: ToolCall) -> str:
    return f"[called {call.name}({call.arguments or '{}'})]"


def _blocks(message: Message, names: Mapping[str, str], tools: bool) -> tuple[str, list[dict[str, Any]]]:
    role = message.get("role")
    if role == "tool":
        content = text_of(message.get("content"))
        call_id = str(message.get("tool_call_id", ""))
        if not tools:
            name = names.get(call_id, "tool")
            return "user", [{"type": "text", "text": f"[result of {name}]\n{content}"}]
        return "user", [{"type": "tool_result", "tool_use_id": call_id, "content": content}]
    text = text_of(message.get("content"))
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if role == "assistant":
        for c in tool_calls_of(message):
            if tools:
                blocks.append(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": _input_of(c)}
                )
            else:
                blocks.append({"type": "text", "text": _call_text(c)})
        return "assistant", blocks
    if role == "user":
        return "user", blocks
    raise ValueError(f"anthropic: unsupported message role {role!r}")


def to_anthropic_messages(
    messages: Sequence[Message], *, tools: bool = True, cache: bool = True
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` in Anthropic shape.

    With ``tools=False`` (the request offers no tools) tool calls and results are
    written as text blocks, which Anthropic accepts without a ``tools`` list. With
    ``cache`` (the default) the end of the history is a prompt-cache breakpoint
    (:func:`mark_history`).
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    names = call_names(messages)
    for m in messages:
        if m.get("role") in ("system", "developer"):
            system.append(text_of(m.get("content")))
            continue
        role, blocks = _blocks(m, names, tools)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_USER_TEXT}]})
    if cache:
        mark_history(out)
    return ("\n\n".join(system) if system else None), out


CACHE_CONTROL = {"type": "ephemeral"}


def mark_history(messages: list[dict[str, Any]]) -> None:
    """Put Anthropic's prompt-cache breakpoint at the end of the latest assistant
    message: tools, system and history up to it are cached and read back by the next
    request; the per-turn rest (the new user message, a speculative fill after the
    history) is not written to the cache. No assistant message: no breakpoint."""
    at = next((i for i in range(len(messages) - 1, -1, -1)
               if messages[i]["role"] == "assistant" and messages[i]["content"]), None)
    if at is not None:
        block = messages[at]["content"][-1]
        messages[at]["content"][-1] = {**block, "cache_control": dict(CACHE_CONTROL)}


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI function tools as Anthropic tools (``input_schema``)."""
    out = []
    for t in tools:
        fn = t.get("function", t)
        if "name" not in fn:
            raise ValueError(f"anthropic: tool without a name: {t!r:.100}")
        tool: dict[str, Any] = {
            "name": fn["name"],
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
        }
        if fn.get("description"):
            tool["description"] = fn["description"]
        out.append(tool)
    return out


def to_anthropic_tool_choice(choice: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """OpenAI ``tool_choice`` as Anthropic's."""
    if choice is None:
        return None
    if isinstance(choice, str):
        mapped = {"auto": "auto", "none": "none", "required": "any"}.get(choice)
        if mapped is None:
            raise ValueError(f"anthropic: unknown tool_choice {choice!r}")
        return {"type": mapped}
    name = (choice.get("function") or {}).get("name") or choice.get("name")
    return {"type": "tool", "name": name}


def from_anthropic(data: Any, provider: str, model: str, raw: Any) -> ChatResponse:
    """An Anthropic ``Message`` (as a dict) as a :class:`ChatResponse`; ``BadResponse`` if malformed."""
    try:
        return _from_anthropic(data, provider, model, raw)
    except BadResponse:
        raise
    except (AttributeError, TypeError, ValueError, KeyError) as e:
        raise BadResponse(provider, f"malformed reply ({type(e).__name__}: {str(e)[:120]})") from None


def _from_anthropic(data: Any, provider: str, model: str, raw: Any) -> ChatResponse:
    if not isinstance(data, Mapping):
        raise BadResponse(provider, f"reply is not a JSON object: {data!r:.100}")
    content = data.get("content")
    if not isinstance(content, list):
        raise BadResponse(provider, "reply has no content list")
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, Mapping):
            raise BadResponse(provider, f"content block is not an object: {block!r:.100}")
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            if not block.get("name"):
                raise BadResponse(provider, "tool_use block without a name")
            args = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append(
                ToolCall(
                    id=str(block.get("id") or f"toolu_{len(calls)}"),
                    name=str(block["name"]),
                    arguments=args,
                )
            )
    reason = data.get("stop_reason")
    u = data.get("usage") or {}
    # input_tokens is only what follows the cache breakpoint: the prompt is all three
    read = int(u.get("cache_read_input_tokens") or 0)
    written = int(u.get("cache_creation_input_tokens") or 0)
    usage = Usage(int(u.get("input_tokens") or 0) + read + written,
                  int(u.get("output_tokens") or 0), read, written)
    response = ChatResponse(
        text="".join(text),
        tool_calls=tuple(calls),
        finish_reason=STOP_REASONS.get(str(reason), reason),
        usage=usage,
        cost_usd=cost_of(model, usage),
        logprobs=None,
        model=str(data.get("model") or model),
        raw=raw,
    )
    if not response.text and not calls:
        raise EmptyReply(provider, f"empty reply (stop_reason={reason!r})", response)
    return response
