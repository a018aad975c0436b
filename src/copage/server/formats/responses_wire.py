"""The OpenAI Responses API's wire shapes: response ids, a parser and a renderer.

The endpoints are :mod:`copage.server.formats.responses`; this module is its format.

:func:`to_chat` turns a Responses body into the Chat Completions body the
service runs (:func:`copage.server.request.parse_call` validates it), and
:class:`Output` renders the turn's events as Responses stream events or, fed
the same events at once, as the whole ``response`` object (one path for both).

A response id names a point in a stored conversation: the answer stored by one
turn. It is made of the conversation id and the transcript chain hash through
that turn's request (:attr:`copage.server.events.Opened.point`), so it needs no
table, is the same when a retried request is answered from the store, and the
transcript index tells in one lookup whether it names the conversation's latest
answer (its ``prev``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.server.error_body import ProxyError, bad_request
from copage.server.events import Opened, TurnResult
from copage.server.proxy_loop import Outcome
from copage.session.engine import ClientToolDelta, TextDelta

ID_PREFIX = "resp_"
_DIGEST = 64
_HEX = re.compile(r"[0-9a-f]{64}\Z")
_TEXT_PARTS = ("input_text", "output_text", "text")
#: Responses fields that map onto a Chat Completions field of another name.
_RENAMED = {"max_output_tokens": "max_tokens"}
_COPIED = ("model", "temperature", "top_p", "parallel_tool_calls", "user", "seed",
           "stream", "safety_identifier")


@dataclass(frozen=True, slots=True)
class ResponseId:
    """What a response id names: a conversation and the chain through a request."""

    conversation_id: str
    point: str  # the chain (64 hex digits; see :func:`point_digest`)
    stored: bool

    @classmethod
    def of(cls, conversation_id: str, chain: str, stored: bool) -> ResponseId:
        return cls(conversation_id, point_digest(chain), stored)

    def names(self, chain: str) -> bool:
        """True when the answer stored after the request chained as ``chain`` is this one."""
        return point_digest(chain) == self.point

    def not_found(self) -> ProxyError:
        """The 400 of a ``previous_response_id`` naming no stored answer."""
        return not_found(str(self))

    def __str__(self) -> str:
        cid = base64.urlsafe_b64encode(self.conversation_id.encode()).decode().rstrip("=")
        return f"{ID_PREFIX}{'s' if self.stored else 'n'}{self.point}{cid}"

    @classmethod
    def parse(cls, text: str) -> ResponseId:
        """The parts of a response id made by this proxy, or a 400."""
        body = text[len(ID_PREFIX):] if text.startswith(ID_PREFIX) else ""
        flag, point, cid = body[:1], body[1:1 + _DIGEST], body[1 + _DIGEST:]
        try:
            name = base64.urlsafe_b64decode(cid + "=" * (-len(cid) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            name = ""
        if flag not in ("s", "n") or len(point) != _DIGEST or not name:
            raise not_found(text)
        return cls(name, point, flag == "s")


def point_digest(chain: str) -> str:
    """The response-id part naming the chain ``chain``: the chain hash itself (a
    conversation stored before chains were kept: a digest of its placeholder)."""
    return chain if _HEX.match(chain) else hashlib.sha256(chain.encode()).hexdigest()


def not_found(rid: str) -> ProxyError:
    return ProxyError(400, f"Previous response with id '{rid[:200]}' not found.",
                      code="previous_response_not_found", param="previous_response_id")


def missing(rid: str) -> ProxyError:
    """``GET /v1/responses/{id}`` of a response the caller cannot see (or never stored)."""
    return ProxyError(404, f"Response with id '{rid[:200]}' not found.",
                      code="response_not_found", param="response_id")


def stored_response(rid: str, text: str, calls: Sequence[Mapping[str, Any]],
                    rq: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response`` object of a stored answer (``GET /v1/responses/{id}``): its output
    items, status, model, usage and time as the turn stored them. The request's echo
    fields (``instructions``, ``tools``, ...) are not stored: they come back empty."""
    point = rid[len(ID_PREFIX) + 1:][:24]
    items: list[dict[str, Any]] = []
    if text:
        items.append({"type": "message", "id": f"msg_{point}", "status": "completed",
                      "role": "assistant", "content": [
                          {"type": "output_text", "text": text, "annotations": []}]})
    for i, c in enumerate(calls):
        fn = c.get("function") or {}
        items.append({"type": "function_call", "id": f"fc_{point}_{i}",
                      "call_id": str(c.get("id") or ""), "name": str(fn.get("name") or ""),
                      "arguments": str(fn.get("arguments") or ""), "status": "completed"})
    length = rq.get("finish") == "length"
    used = [int(n) for n in rq.get("usage") or (0, 0)][:2] + [0, 0]
    return {
        "id": rid, "object": "response", "created_at": int(float(rq.get("at") or 0)),
        "status": "incomplete" if length else "completed", "background": False,
        "error": None, "incomplete_details": {"reason": "max_output_tokens"} if length else None,
        "instructions": None, "max_output_tokens": None, "model": str(rq.get("model") or ""),
        "output": items, "parallel_tool_calls": True, "previous_response_id": None,
        "store": True, "temperature": None, "text": {"format": {"type": "text"}},
        "tool_choice": "auto", "tools": [], "top_p": None, "truncation": "disabled",
        "usage": {"input_tokens": used[0], "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": used[1], "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": used[0] + used[1]},
        "metadata": {}, "user": None,
    }


# ------------------------------------------------------------------ parsing
@dataclass(frozen=True, slots=True)
class ResponsesRequest:
    """A Responses body as the Chat Completions body the service runs, and the rest."""

    chat: dict[str, Any]  # model, messages (only this request's input), tools, ...
    previous: ResponseId | None
    store: bool
    echo: dict[str, Any]  # request fields the response object repeats


def to_chat(data: Mapping[str, Any]) -> ResponsesRequest:
    """Translate a Responses body (every problem a 400 naming the field)."""
    messages: list[dict[str, Any]] = []
    instructions = data.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise bad_request("instructions must be a string", param="instructions")
        messages.append({"role": "system", "content": instructions})
    raw = data.get("input")
    if isinstance(raw, str):
        messages.append({"role": "user", "content": raw})
    elif isinstance(raw, list) and raw:
        for i, item in enumerate(raw):
            _item(item, i, messages)
    else:
        raise bad_request("input must be a string or a non-empty list of items", param="input")
    chat: dict[str, Any] = {k: data[k] for k in _COPIED if data.get(k) is not None}
    chat.update({_RENAMED[k]: data[k] for k in _RENAMED if data.get(k) is not None})
    chat["messages"] = messages
    if data.get("tools") is not None:
        chat["tools"] = _tools(data["tools"])
    if data.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(data["tool_choice"])
    fmt = _format(data.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    reasoning = data.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, Mapping):
            raise bad_request("reasoning must be an object such as {\"effort\": \"low\"}",
                              param="reasoning")
        if reasoning.get("effort") is not None:
            chat["reasoning_effort"] = reasoning["effort"]
    prev = data.get("previous_response_id")
    if prev is not None and not isinstance(prev, str):
        raise bad_request("previous_response_id must be a string", param="previous_response_id")
    if data.get("conversation") is not None:
        raise bad_request("conversation objects are not supported: use previous_response_id "
                          "or resend the input", "unsupported_parameter", "conversation")
    store = data.get("store", True)
    if not isinstance(store, bool) and store is not None:
        raise bad_request("store must be a boolean", param="store")
    previous = ResponseId.parse(prev) if prev else None
    if previous is not None and not previous.stored:
        raise ProxyError(400, f"Previous response '{str(prev)[:200]}' was created with store=false "
                         "and cannot be continued: resend the whole input instead",
                         code="previous_response_not_stored", param="previous_response_id")
    echo = {k: data.get(k) for k in ("instructions", "temperature", "top_p", "tools",
                                     "tool_choice", "max_output_tokens", "metadata",
                                     "parallel_tool_calls")}
    return ResponsesRequest(chat, previous, store is not False, echo)


def _item(item: Any, i: int, out: list[dict[str, Any]]) -> None:
    """Append the chat message(s) of one input item."""
    if not isinstance(item, Mapping):
        raise bad_request(f"input[{i}] must be an object", param=f"input[{i}]")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise bad_request(f"input[{i}].role must be user, system, developer or assistant",
                              param=f"input[{i}].role")
        out.append({"role": role, "content": _content(item.get("content"), f"input[{i}]")})
    elif kind == "function_call":
        call_id, name, args = item.get("call_id"), item.get("name"), item.get("arguments", "")
        if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(args, str)):
            raise bad_request(f"input[{i}] (function_call) needs string call_id, name and "
                              "arguments", param=f"input[{i}]")
        call = {"id": call_id, "type": "function",
                "function": {"name": name, "arguments": args}}
        # Calls after an assistant message (or after calls) belong to that message.
        if out and out[-1]["role"] == "assistant":
            out[-1].setdefault("tool_calls", []).append(call)
        else:
            out.append({"role": "assistant", "content": "", "tool_calls": [call]})
    elif kind == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str):
            raise bad_request(f"input[{i}] (function_call_output) needs a string call_id",
                              param=f"input[{i}].call_id")
        text = output if isinstance(output, str) else _content(output, f"input[{i}].output")
        out.append({"role": "tool", "tool_call_id": call_id, "content": text})
    elif kind == "reasoning":
        return  # this proxy's answers carry none; another model's are not sent upstream
    else:
        raise bad_request(f"input[{i}]: item type {str(kind)[:40]!r} is not supported (message, "
                          "function_call, function_call_output)", param=f"input[{i}].type")


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or a list of parts", param=where)
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append(part["refusal"])
        else:
            raise bad_request(f"{where}: only text parts are supported (not {str(kind)[:40]!r}; "
                              "images and files are not)", "unsupported_content", where)
    return "".join(parts)


def _tools(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise bad_request("tools must be a list", param="tools")
    out = []
    for j, t in enumerate(raw):
        if not (isinstance(t, Mapping) and t.get("type") == "function"):
            raise bad_request(f"tools[{j}]: only function tools are supported",
                              "unsupported_tool", f"tools[{j}]")
        fn = {k: t[k] for k in ("name", "description", "parameters", "strict")
              if t.get(k) is not None}
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, Mapping) and choice.get("type") == "function" and isinstance(
            choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise bad_request("tool_choice must be 'auto', 'none', 'required' or "
                      "{'type': 'function', 'name': ...}", param="tool_choice")


def _format(text: Any) -> dict[str, Any] | None:
    fmt = text.get("format") if isinstance(text, Mapping) else None
    if not isinstance(fmt, Mapping) or fmt.get("type") in (None, "text"):
        return None
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise bad_request("text.format.type must be text, json_object or json_schema",
                      param="text.format")


# ------------------------------------------------------------------ rendering
def usage(out: Outcome) -> dict[str, Any]:
    return {"input_tokens": out.prompt_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": out.prompt_tokens + out.completion_tokens}


class Output:
    """A response's output items, built from the turn's events.

    :meth:`event` returns the Responses stream events of one turn event;
    :meth:`end` closes the open item and returns ``response.completed`` (its
    response holds the items as streamed); :meth:`whole` is the same response for a
    turn that was not streamed; :meth:`response` is the object itself.
    """

    def __init__(self, opened: Opened, req: ResponsesRequest, *, model: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.id = str(ResponseId.of(opened.conversation_id, opened.point, req.store))
        self.req, self.model, self.created = req, model, int(clock())
        self.items: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None  # the item being streamed
        self.seq = 0
        self.started = False

    # the stream
    def event(self, event: object) -> list[str]:
        if isinstance(event, TextDelta):
            if not event.text:
                return []
            out = self._start()
            if self.open is None or self.open["type"] != "message":
                out += self._close()
                out += self._open_message()
            part = self.open["content"][0] if self.open is not None else {}
            part["text"] += event.text
            return out + [self._sse("response.output_text.delta", item_id=self._item_id(),
                                    output_index=len(self.items) - 1, content_index=0,
                                    delta=event.text, logprobs=[])]
        if isinstance(event, ClientToolDelta):
            d = event.delta
            out = self._start()
            if d.id is not None or self.open is None or self.open["type"] != "function_call":
                out += self._close()
                item = {"type": "function_call", "id": "fc_" + secrets.token_hex(12),
                        "call_id": d.id or "call_" + secrets.token_hex(8), "name": d.name or "",
                        "arguments": "", "status": "in_progress"}
                self.items.append(item)
                self.open = item
                out.append(self._sse("response.output_item.added",
                                     output_index=len(self.items) - 1, item=dict(item)))
            assert self.open is not None
            self.open["arguments"] += d.arguments
            if d.arguments:
                out.append(self._sse("response.function_call_arguments.delta",
                                     item_id=self._item_id(), output_index=len(self.items) - 1,
                                     delta=d.arguments))
            return out
        return []

    def end(self, result: TurnResult) -> list[str]:
        out = self._start() + self._close()
        return out + [self._sse("response.completed", response=self.response(result.outcome))]

    def whole(self, result: TurnResult) -> dict[str, Any]:
        """The finished response of a turn that was not streamed: the open item closed
        (``status: completed``, as in ``response.completed``), no events."""
        self._close()
        return self.response(result.outcome)

    def response(self, outcome: Outcome | None) -> dict[str, Any]:
        """The ``response`` object: in progress (None) or completed with ``outcome``."""
        status = "in_progress"
        incomplete = None
        if outcome is not None:
            status = "incomplete" if outcome.finish_reason == "length" else "completed"
            if status == "incomplete":
                incomplete = {"reason": "max_output_tokens"}
        echo = self.req.echo
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "background": False, "error": None, "incomplete_details": incomplete,
            "instructions": echo["instructions"],
            "max_output_tokens": echo["max_output_tokens"], "model": self.model,
            "output": [] if outcome is None else [dict(i) for i in self.items],
            "parallel_tool_calls": echo["parallel_tool_calls"] is not False,
            "previous_response_id": str(self.req.previous) if self.req.previous else None,
            "store": self.req.store, "temperature": echo["temperature"],
            "text": {"format": {"type": "text"}}, "tool_choice": echo["tool_choice"] or "auto",
            "tools": echo["tools"] or [], "top_p": echo["top_p"], "truncation": "disabled",
            "usage": usage(outcome) if outcome is not None else None,
            "metadata": echo["metadata"] or {}, "user": None,
        }

    def _start(self) -> list[str]:
        if self.started:
            return []
        self.started = True
        body = self.response(None)
        return [self._sse("response.created", response=body),
                self._sse("response.in_progress", response=body)]

    def _open_message(self) -> list[str]:
        item: dict[str, Any] = {"type": "message", "id": "msg_" + secrets.token_hex(12),
                                "status": "in_progress", "role": "assistant", "content": []}
        self.items.append(item)
        self.open = item
        index = len(self.items) - 1
        added = self._sse("response.output_item.added", output_index=index,
                          item=dict(item, content=[]))
        item["content"] = [{"type": "output_text", "text": "", "annotations": []}]
        return [added, self._sse("response.content_part.added", item_id=item["id"],
                                 output_index=index, content_index=0,
                                 part={"type": "output_text", "text": "", "annotations": []})]

    def _close(self) -> list[str]:
        item, self.open = self.open, None
        if item is None:
            return []
        index = self.items.index(item)
        item["status"] = "completed"
        out = []
        if item["type"] == "message":
            part = item["content"][0]
            out += [self._sse("response.output_text.done", item_id=item["id"],
                              output_index=index, content_index=0, text=part["text"],
                              logprobs=[]),
                    self._sse("response.content_part.done", item_id=item["id"],
                              output_index=index, content_index=0, part=dict(part))]
        else:
            out.append(self._sse("response.function_call_arguments.done", item_id=item["id"],
                                 output_index=index, arguments=item["arguments"],
                                 name=item["name"]))
        return out + [self._sse("response.output_item.done", output_index=index,
                                item=json.loads(json.dumps(item)))]

    def error(self, error: ProxyError, clean: Callable[[str], str]) -> str:
        """A failure after the stream began: the Responses ``error`` event."""
        return self._sse("error", code=error.code, message=clean(error.message),
                         param=error.param)

    def _item_id(self) -> str:
        assert self.open is not None
        return str(self.open["id"])

    def _sse(self, kind: str, **fields: Any) -> str:
        body = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(kind, body)


def sse(kind: str, body: Mapping[str, Any]) -> str:
    """One named server-sent event."""
    return f"event: {kind}\ndata: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


def error_event(error: ProxyError, clean: Callable[[str], str]) -> str:
    """A failure after the stream began: the Responses ``error`` event."""
    return sse("error", {"type": "error", "code": error.code, "message": clean(error.message),
                         "param": error.param, "sequence_number": 0})
