"""Anthropic Messages (``POST /v1/messages``): a parser and a renderer.

:func:`to_chat` turns a Messages body into the Chat Completions body the service
runs: ``system`` becomes the system message, a user message's ``tool_result``
blocks become tool messages (before its text), an assistant message's
``tool_use`` blocks its tool calls. :class:`Output` renders the turn's events as
Anthropic's stream (``message_start``, ``content_block_*``, ``message_delta``,
``message_stop``) or, fed the same events at once, as the whole ``message``.
Everything else about a request (keys, the body, the turn streamed or whole)
is :mod:`copage.server.edge`'s, as for the other formats; errors are answered in
Anthropic's error shape (:func:`error_body`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from copage.server import edge
from copage.server.body import Messages
from copage.server.callers import Caller
from copage.server.error_body import ProxyError, bad_request
from copage.server.events import Opened, TurnResult
from copage.server.proxy_loop import Outcome
from copage.server.request import USER_HEADER, parse_call
from copage.session.engine import ClientToolDelta, TextDelta

STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens",
        "content_filter": "refusal"}
#: Anthropic's error type for each status the proxy answers.
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 529: "overloaded_error"}
_REFUSED = ("image", "document", "search_result", "container_upload")


def to_chat(data: Mapping[str, Any]) -> dict[str, Any]:
    """Translate a Messages body (every problem a 400 naming the field)."""
    max_tokens = data.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise bad_request("max_tokens: a positive integer is required", param="max_tokens")
    out: list[dict[str, Any]] = []
    system = data.get("system")
    if system is not None:
        out.append({"role": "system", "content": _text_blocks(system, "system")})
    raw = data.get("messages")
    if isinstance(raw, Messages):  # the body parser keeps ``messages`` for Chat Completions
        raw = raw.all()
    if not isinstance(raw, list) or not raw:
        raise bad_request("messages must be a non-empty list", param="messages")
    for i, m in enumerate(raw):
        _message(m, i, out)
    chat: dict[str, Any] = {"messages": out, "max_tokens": max_tokens}
    for k in ("model", "temperature", "top_p", "stream"):
        if data.get(k) is not None:
            chat[k] = data[k]
    if data.get("stop_sequences") is not None:
        chat["stop"] = data["stop_sequences"]
    meta = data.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("user_id"), str):
        chat["safety_identifier"] = meta["user_id"]  # who asks (never sent upstream)
    if data.get("tools") is not None:
        chat["tools"] = _tools(data["tools"])
    choice = data.get("tool_choice")
    if choice is not None:
        chat.update(_tool_choice(choice))
    return chat


def _message(m: Any, i: int, out: list[dict[str, Any]]) -> None:
    where = f"messages[{i}]"
    if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
        raise bad_request(f"{where}.role must be 'user' or 'assistant'", param=f"{where}.role")
    content = m.get("content")
    if isinstance(content, str):
        out.append({"role": m["role"], "content": content})
        return
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or a list of blocks",
                          param=f"{where}.content")
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, block in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and m["role"] == "assistant":
            if not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)):
                raise bad_request(f"{at} (tool_use) needs a string id and name", param=at)
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"], "arguments": json.dumps(
                              block.get("input") or {}, ensure_ascii=False)}})
        elif kind == "tool_result" and m["role"] == "user":
            if not isinstance(block.get("tool_use_id"), str):
                raise bad_request(f"{at} (tool_result) needs a string tool_use_id", param=at)
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"],
                            "content": _text_blocks(block.get("content") or "", at)})
        elif kind in ("thinking", "redacted_thinking"):
            continue  # the model's own scratch work: not part of the transcript
        elif kind in _REFUSED:
            raise bad_request(f"{at}: {kind} blocks are not supported (text only)",
                              "unsupported_content", at)
        else:
            raise bad_request(f"{at}: block type {str(kind)[:40]!r} is not supported here",
                              "unsupported_content", at)
    out.extend(results)
    if calls:
        out.append({"role": "assistant", "content": "".join(texts), "tool_calls": calls})
    elif texts or not results:
        out.append({"role": m["role"], "content": "".join(texts)})


def _text_blocks(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for j, b in enumerate(value):
            kind = b.get("type") if isinstance(b, Mapping) else None
            if kind == "text" and isinstance(b.get("text"), str):
                parts.append(b["text"])
            else:
                raise bad_request(f"{where}[{j}]: only text blocks are supported (not "
                                  f"{str(kind)[:40]!r}; images are not)", "unsupported_content",
                                  where)
        return "".join(parts)
    raise bad_request(f"{where} must be a string or a list of text blocks", param=where)


def _tools(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise bad_request("tools must be a list", param="tools")
    out = []
    for j, t in enumerate(raw):
        if not (isinstance(t, Mapping) and t.get("type") in (None, "custom")
                and isinstance(t.get("name"), str)):
            raise bad_request(f"tools[{j}]: only client tools {{name, description, "
                              "input_schema}} are supported", "unsupported_tool", f"tools[{j}]")
        fn = {"name": t["name"], "parameters": t.get("input_schema") or {"type": "object"}}
        if t.get("description") is not None:
            fn["description"] = t["description"]
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: Any) -> dict[str, Any]:
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    mapped: Any
    if kind == "auto":
        mapped = "auto"
    elif kind == "any":
        mapped = "required"
    elif kind == "none":
        mapped = "none"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        mapped = {"type": "function", "function": {"name": choice["name"]}}
    else:
        raise bad_request("tool_choice must be {'type': 'auto' | 'any' | 'none'} or "
                          "{'type': 'tool', 'name': ...}", param="tool_choice")
    out: dict[str, Any] = {"tool_choice": mapped}
    if choice.get("disable_parallel_tool_use") is True and kind != "none":
        out["parallel_tool_calls"] = False
    return out


# ------------------------------------------------------------------ rendering
class Output:
    """The reply's content blocks, built from the turn's events (see module docstring)."""

    def __init__(self, model: str) -> None:
        self.id = "msg_" + secrets.token_hex(12)
        self.model = model
        self.blocks: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None
        self.args = ""
        self.started = False

    def event(self, event: object) -> list[str]:
        if isinstance(event, TextDelta):
            if not event.text:
                return []
            out = self._start()
            if self.open is None or self.open["type"] != "text":
                out += self._close() + self._open({"type": "text", "text": ""})
            assert self.open is not None
            self.open["text"] += event.text
            return out + [self._delta({"type": "text_delta", "text": event.text})]
        if isinstance(event, ClientToolDelta):
            d = event.delta
            out = self._start()
            if d.id is not None or self.open is None or self.open["type"] != "tool_use":
                out += self._close() + self._open({
                    "type": "tool_use", "id": d.id or "toolu_" + secrets.token_hex(8),
                    "name": d.name or "", "input": {}})
            self.args += d.arguments
            return out + ([self._delta({"type": "input_json_delta",
                                        "partial_json": d.arguments})] if d.arguments else [])
        return []

    def end(self, result: TurnResult) -> list[str]:
        out = self._start() + self._close()
        o = result.outcome
        return out + [
            sse("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": _stop(o), "stop_sequence": None},
                                  "usage": {"input_tokens": o.prompt_tokens,
                                            "output_tokens": o.completion_tokens}}),
            sse("message_stop", {"type": "message_stop"})]

    def message(self, outcome: Outcome) -> dict[str, Any]:
        """The whole ``message`` (the blocks as built)."""
        self._close()
        blocks = self.blocks or [{"type": "text", "text": ""}]
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": blocks, "stop_reason": _stop(outcome), "stop_sequence": None,
                "usage": {"input_tokens": outcome.prompt_tokens,
                          "output_tokens": outcome.completion_tokens}}

    def _start(self) -> list[str]:
        if self.started:
            return []
        self.started = True
        head: dict[str, Any] = {"id": self.id, "type": "message", "role": "assistant",
                                "model": self.model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0}}
        return [sse("message_start", {"type": "message_start", "message": head}),
                sse("ping", {"type": "ping"})]

    def _open(self, block: dict[str, Any]) -> list[str]:
        self.blocks.append(block)
        self.open, self.args = block, ""
        return [sse("content_block_start", {"type": "content_block_start",
                                            "index": len(self.blocks) - 1,
                                            "content_block": dict(block)})]

    def _delta(self, delta: dict[str, Any]) -> str:
        return sse("content_block_delta", {"type": "content_block_delta",
                                           "index": len(self.blocks) - 1, "delta": delta})

    def _close(self) -> list[str]:
        block, self.open = self.open, None
        if block is None:
            return []
        if block["type"] == "tool_use":
            try:
                value = json.loads(self.args) if self.args.strip() else {}
            except ValueError:
                value = {}
            block["input"] = value if isinstance(value, dict) else {}
        return [sse("content_block_stop", {"type": "content_block_stop",
                                           "index": self.blocks.index(block)})]


def _stop(out: Outcome) -> str:
    return STOP.get(out.finish_reason, "end_turn")


def sse(kind: str, body: Mapping[str, Any]) -> str:
    return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


def error_body(error: ProxyError, clean: Callable[[str], str]) -> dict[str, Any]:
    """Anthropic's error shape for a proxy error."""
    kind = ERROR_TYPES.get(error.status,
                           "invalid_request_error" if error.status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": clean(error.message)}}


def is_messages_path(path: str) -> bool:
    """True for ``/v1/messages`` and the paths under it (``/v1/messages/count_tokens``)."""
    return path == "/v1/messages" or path.startswith("/v1/messages/")


def error_for_path(path: str, status: int, code: str, message: str) -> dict[str, Any]:
    """The body of an error the proxy answers outside a handler (browser guard, no route,
    method not allowed): Anthropic's shape under ``/v1/messages``, OpenAI's elsewhere."""
    error = ProxyError(status, message, code=code)
    if is_messages_path(path):
        return error_body(error, lambda text: text)
    return error.body(lambda text: text)


def error_event(error: ProxyError, clean: Callable[[str], str]) -> str:
    """A failure after the stream began: Anthropic's ``error`` event."""
    return sse("error", error_body(error, clean))


# ------------------------------------------------------------------ the endpoint
def _caller(request: Request) -> Caller:
    """The caller behind ``Authorization: Bearer KEY`` or Anthropic's ``x-api-key``."""
    key = request.headers.get("x-api-key")
    auth = request.headers.get("authorization") or (f"Bearer {key}" if key else None)
    return edge.caller_for(request, auth, refused="invalid or missing proxy API key "
                          "(x-api-key: KEY, or Authorization: Bearer KEY)")


@edge.endpoint("messages", error_body)
async def create_message(request: Request) -> Response:
    """``POST /v1/messages``."""
    s = edge.state_of(request).settings
    who = _caller(request)
    incoming = await edge.read_body(request, who.tenant)
    call = parse_call(to_chat(incoming.body.data), max_messages=s.max_messages,
                      max_tools=s.max_tools, user=request.headers.get(USER_HEADER))

    def output_of(opened: Opened) -> Output:
        return Output(opened.model or call.model or "")

    def whole(output: Output, result: TurnResult) -> dict[str, Any]:
        return dict(output.message(result.outcome))

    return await edge.run_turn(request, who, call, edge.conversation_header(request), incoming,
                               name="messages", output_of=output_of, whole=whole,
                               error_event=error_event)


def routes() -> list[Route]:
    """This format's routes (added to the app by ``create_app``)."""
    return [Route("/v1/messages", create_message, methods=["POST"])]
