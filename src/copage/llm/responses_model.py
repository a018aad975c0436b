"""A chat model behind an OpenAI Responses API endpoint (``POST /v1/responses``).

The request's chat messages become Responses input items (system messages the
``instructions``, tool calls ``function_call`` items, tool results
``function_call_output`` items) and the reply's output items a
:class:`ChatResponse`. Nothing is stored upstream (``store: false``): copage keeps
the conversation. :meth:`ResponsesModel.stream` passes the upstream's text and
function-call argument deltas on as they come; its last event's response is
built from ``response.completed`` by the same code as a whole reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import openai

from copage.core.types import ToolCall
from copage.llm.adapter import NetworkModel, resolve_key, sdk_payload
from copage.llm.chat_messages import text_of, tool_calls_of
from copage.llm.errors import BadResponse, EmptyReply, UpstreamError, safe_url
from copage.llm.model_types import (
    ChatRequest,
    ChatResponse,
    Message,
    StreamEvent,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from copage.llm.openai_model import OPENAI_URL
from copage.llm.prices import cost_of


def to_input(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """The instructions (system messages joined) and the input items of ``messages``."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        text = text_of(m.get("content"))
        if role == "system":
            system.append(text)
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": str(m.get("tool_call_id")),
                          "output": text})
        elif role == "assistant":
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            items += [{"type": "function_call", "call_id": c.id, "name": c.name,
                       "arguments": c.arguments} for c in tool_calls_of(m)]
        else:
            items.append({"type": "message", "role": "user", "content": text})
    return ("\n\n".join(system) if system else None), items


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """OpenAI chat function tools as Responses function tools (flat)."""
    out = []
    for t in tools:
        fn = t.get("function", t)
        tool = {"type": "function", "name": fn["name"],
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}}}
        if fn.get("description"):
            tool["description"] = fn["description"]
        out.append(tool)
    return out


def to_tool_choice(choice: str | Mapping[str, Any] | None) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    name = (choice.get("function") or {}).get("name") or choice.get("name")
    return {"type": "function", "name": name}


def from_response(data: Any, provider: str, model: str, raw: Any) -> ChatResponse:
    """A Responses ``response`` (as a dict) as a :class:`ChatResponse`."""
    if not isinstance(data, Mapping) or not isinstance(data.get("output"), list):
        raise BadResponse(provider, "reply has no output list")
    text: list[str] = []
    calls: list[ToolCall] = []
    for item in data["output"]:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "message":
            text += [str(p.get("text") or "") for p in item.get("content") or ()
                     if isinstance(p, Mapping) and p.get("type") == "output_text"]
        elif kind == "function_call":
            calls.append(ToolCall(id=str(item.get("call_id") or f"call_{len(calls)}"),
                                  name=str(item.get("name") or ""),
                                  arguments=str(item.get("arguments") or "{}")))
    finish = "tool_calls" if calls else (
        "length" if data.get("status") == "incomplete" else "stop")
    u = data.get("usage") or {}
    details = u.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
    usage = Usage(int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0),
                  int(cached or 0))
    response = ChatResponse(text="".join(text), tool_calls=tuple(calls),
                            finish_reason=finish, usage=usage, cost_usd=cost_of(model, usage),
                            logprobs=None, model=str(data.get("model") or model), raw=raw)
    if not response.text and not calls:
        raise EmptyReply(provider, f"empty reply (status={data.get('status')!r})", response)
    return response


class ResponsesModel(NetworkModel):
    """Chat model behind a Responses API endpoint (OpenAI's, llama.cpp's, ...)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", spec: str | None = None,
                 **options: Any) -> None:
        url = (base_url or OPENAI_URL).rstrip("/")
        key = resolve_key("openai", api_key, api_key_env, url, OPENAI_URL)
        spec = spec or (f"responses:{model}" + (f"@{safe_url(url)}" if base_url else ""))
        super().__init__(provider="openai", model=model, base_url=url, spec=spec, api_key=key,
                         **options)

    def _sdk(self) -> ModuleType:
        return openai

    def _make_client(self) -> Any:
        return openai.AsyncOpenAI(api_key=self._api_key(), base_url=self.base_url,
                                  timeout=self.timeout, max_retries=0)

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments sent to ``responses.create``."""
        instructions, items = to_input(request.messages)
        if not items:
            raise ValueError("responses: the request has no user or assistant message")
        kw: dict[str, Any] = {"model": self.model, "input": items, "store": False}
        if instructions is not None:
            kw["instructions"] = instructions
        if request.tools:
            kw["tools"] = to_tools(request.tools)
            if request.tool_choice is not None:
                kw["tool_choice"] = to_tool_choice(request.tool_choice)
        if request.max_tokens is not None:
            kw["max_output_tokens"] = request.max_tokens
        if request.temperature is not None:
            kw["temperature"] = request.temperature
        if request.extra.get("reasoning_effort") is not None:
            kw["reasoning"] = {"effort": request.extra["reasoning_effort"]}
        extra = {k: v for k, v in request.extra.items() if k in ("top_p", "parallel_tool_calls",
                                                                 "user")}
        if extra:
            kw["extra_body"] = extra
        return kw

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (retried on 429/5xx/timeouts)."""
        kw = self.body(request)

        async def call() -> Any:
            return await self._client().responses.create(**kw)

        response = await self._send(call)
        return from_response(sdk_payload(response), self.provider, self.model, response)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text and function-call deltas; the last event holds the full response."""
        kw = {**self.body(request), "stream": True}

        async def call() -> Any:
            return await self._client().responses.create(**kw)

        events = await self._send(call)
        calls: dict[int, int] = {}  # output index -> the call's index among the calls
        final: Any = None
        try:
            async for e in events:
                kind = getattr(e, "type", "")
                if kind == "response.output_text.delta":
                    yield StreamEvent("text", text=str(e.delta))
                elif kind == "response.output_item.added" and e.item.type == "function_call":
                    calls[e.output_index] = len(calls)
                    yield StreamEvent("tool_call", tool_call=ToolCallDelta(
                        calls[e.output_index], id=e.item.call_id, name=e.item.name))
                elif kind == "response.function_call_arguments.delta":
                    yield StreamEvent("tool_call", tool_call=ToolCallDelta(
                        calls[e.output_index], arguments=str(e.delta)))
                elif kind in ("response.completed", "response.incomplete"):
                    final = e.response
                elif kind in ("response.failed", "error"):
                    detail = getattr(e, "message", None) or getattr(
                        getattr(e, "response", None), "error", None)
                    raise UpstreamError(self.provider, f"stream failed: {str(detail)[:200]}")
        except self._failures() as err:
            raise self._error(err) from None
        if final is None:
            raise BadResponse(self.provider, "stream ended without response.completed")
        data = final.model_dump(warnings=False)
        yield StreamEvent("done", response=from_response(data, self.provider, self.model, final))
