"""One conversation client per wire format, driven by the official SDKs (tests/server).

Each client keeps its own transcript the way its API expects (the whole history
resent, or for the Responses API optionally ``previous_response_id``) and returns
what the client sees of a turn: the answer text, the client tool calls, the
conversation the proxy put it in, its ``X-Copage-Stats``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
from proxy_helpers import KEY_A, Proxy

FORMATS = ["chat", "responses", "responses-prev", "messages"]


@dataclass
class Seen:
    text: str
    calls: list[tuple[str, str, dict[str, Any]]]  # (id, name, arguments)
    conversation_id: str | None
    stats: dict[str, Any] = field(default_factory=dict)
    raw: Any = None


class Client:
    """A conversation through one format; ``stream`` uses the SDK's streaming helper."""

    def __init__(self, proxy: Proxy, fmt: str, *, key: str = KEY_A, stream: bool = False,
                 tools: bool = False, max_retries: int = 0, timeout: float = 30.0,
                 system: str | None = "Be brief.", model: str = "fake-model",
                 max_tokens: int | None = None, tool_name: str = "get_weather") -> None:
        self.proxy, self.fmt, self.stream, self.system = proxy, fmt, stream, system
        self.model, self.max_tokens = model, max_tokens
        self.tools, self.tool_name = tools, tool_name
        self.history: list[Any] = []
        self.previous: str | None = None
        if fmt == "messages":
            self.anthropic = anthropic.Anthropic(base_url=proxy.url, api_key=key,
                                                 max_retries=max_retries, timeout=timeout)
        else:
            self.openai = openai.OpenAI(base_url=proxy.url + "/v1", api_key=key,
                                        max_retries=max_retries, timeout=timeout)

    # one turn -----------------------------------------------------------
    def say(self, text: str) -> Seen:
        if self.fmt == "chat":
            return self._chat({"role": "user", "content": text})
        if self.fmt.startswith("responses"):
            return self._responses({"role": "user", "content": text})
        return self._messages({"role": "user", "content": text})

    def tool_result(self, call_id: str, output: str) -> Seen:
        if self.fmt == "chat":
            return self._chat({"role": "tool", "tool_call_id": call_id, "content": output})
        if self.fmt.startswith("responses"):
            return self._responses({"type": "function_call_output", "call_id": call_id,
                                    "output": output})
        return self._messages({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": output}]})

    # the formats ----------------------------------------------------------
    def _chat(self, msg: dict[str, Any]) -> Seen:
        if not self.history and self.system:
            self.history.append({"role": "system", "content": self.system})
        self.history.append(msg)
        kw: dict[str, Any] = {"model": self.model, "messages": self.history}
        if self.max_tokens:
            kw["max_tokens"] = self.max_tokens
        if self.tools:
            kw["tools"] = [{"type": "function", "function": {
                "name": self.tool_name, "parameters": {"type": "object", "properties": {
                    "city": {"type": "string"}}}}}]
        if self.stream:
            with self.openai.chat.completions.stream(**kw) as s:
                comp = s.get_final_completion()
            headers: Any = {}
        else:
            raw = self.openai.chat.completions.with_raw_response.create(**kw)
            comp, headers = raw.parse(), raw.headers
        m = comp.choices[0].message
        self.history.append(m.model_dump(exclude_none=True))
        calls = [(c.id, c.function.name, json.loads(c.function.arguments))
                 for c in m.tool_calls or []]
        return _seen(m.content or "", calls, headers, comp)

    def _responses(self, item: dict[str, Any]) -> Seen:
        prev = self.fmt == "responses-prev"
        if prev:
            self.history = []
        self.history.append(item)
        kw: dict[str, Any] = {"model": self.model, "input": self.history}
        if self.max_tokens:
            kw["max_output_tokens"] = self.max_tokens
        if self.system:
            kw["instructions"] = self.system
        if prev and self.previous:
            kw["previous_response_id"] = self.previous
        if self.tools:
            kw["tools"] = [{"type": "function", "name": self.tool_name, "strict": False,
                            "parameters": {"type": "object", "properties": {
                                "city": {"type": "string"}}}}]
        if self.stream:
            with self.openai.responses.stream(**kw) as s:
                resp = s.get_final_response()
            headers: Any = {}
        else:
            raw = self.openai.responses.with_raw_response.create(**kw)
            resp, headers = raw.parse(), raw.headers
        self.previous = resp.id
        calls = []
        for out in resp.output:
            self.history.append(out.model_dump(exclude_none=True))
            if out.type == "function_call":
                calls.append((out.call_id, out.name, json.loads(out.arguments)))
        return _seen(resp.output_text, calls, headers, resp)

    def _messages(self, msg: dict[str, Any]) -> Seen:
        self.history.append(msg)
        kw: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens or 256,
                              "messages": self.history}
        if self.system:
            kw["system"] = self.system
        if self.tools:
            kw["tools"] = [{"name": self.tool_name, "description": "a client tool",
                            "input_schema": {"type": "object", "properties": {
                                "city": {"type": "string"}}}}]
        if self.stream:
            with self.anthropic.messages.stream(**kw) as s:
                message = s.get_final_message()
            headers: Any = {}
        else:
            raw = self.anthropic.messages.with_raw_response.create(**kw)
            message, headers = raw.parse(), raw.headers
        blocks = [b.model_dump(exclude_none=True) for b in message.content]
        self.history.append({"role": "assistant", "content": blocks})
        text = "".join(b.text for b in message.content if b.type == "text")
        calls = [(b.id, b.name, dict(b.input)) for b in message.content if b.type == "tool_use"]
        return _seen(text, calls, headers, message)


def _seen(text: str, calls: list[Any], headers: Any, raw: Any) -> Seen:
    cid = headers.get("x-copage-conversation") if headers else None
    st = json.loads(headers["x-copage-stats"]) if headers and "x-copage-stats" in headers \
        else {}
    return Seen(text, calls, cid, st, raw)
