"""The Anthropic adapter (official ``anthropic`` SDK, Messages API).

Anthropic has no logprobs: ``ChatResponse.logprobs`` is always None.
:meth:`AnthropicModel.stream` passes the upstream's ``text_delta`` and
``input_json_delta`` events on as they come; its last event's response is built
from the assembled message by the same code as a whole reply. ``temperature`` goes
in the request body directly (the 2.x SDK dropped the keyword argument).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import anthropic

from copage.llm.adapter import NetworkModel, resolve_key, sdk_payload
from copage.llm.anthropic_convert import (
    from_anthropic,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from copage.llm.errors import BadResponse, UpstreamError, safe_url
from copage.llm.model_types import ChatRequest, ChatResponse, StreamEvent, ToolCallDelta

ANTHROPIC_URL = "https://api.anthropic.com"


class AnthropicModel(NetworkModel):
    """Chat model behind Anthropic's ``/v1/messages``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        default_max_tokens: int = 1024,
        spec: str | None = None,
        **options: Any,
    ) -> None:
        url = (base_url or ANTHROPIC_URL).rstrip("/")
        key = resolve_key("anthropic", api_key, api_key_env, url, ANTHROPIC_URL)
        self.default_max_tokens = default_max_tokens
        spec = spec or (f"anthropic:{model}" + (f"@{safe_url(url)}" if base_url else ""))
        super().__init__(
            provider="anthropic", model=model, base_url=url, spec=spec, api_key=key, **options
        )

    def _sdk(self) -> ModuleType:
        return anthropic

    def _make_client(self) -> Any:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout, max_retries=0
        )

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments sent to ``messages.create``."""
        system, messages = to_anthropic_messages(request.messages, tools=bool(request.tools))
        if not messages:
            raise ValueError("anthropic: the request has no user or assistant message")
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens or self.default_max_tokens,
        }
        if system:
            kw["system"] = system
        if request.tools:
            kw["tools"] = to_anthropic_tools(request.tools)
        choice = to_anthropic_tool_choice(request.tool_choice)
        if choice is not None and request.tools:
            kw["tool_choice"] = choice
        extra = dict(request.extra)
        if request.temperature is not None:
            # anthropic SDK 2.x has no `temperature` argument; send it in the body
            extra.setdefault("temperature", request.temperature)
        if extra:
            kw["extra_body"] = extra
        return kw

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (retried on 429/5xx/529/timeouts)."""
        kw = self.body(request)

        async def call() -> Any:
            return await self._client().messages.create(**kw)

        message = await self._send(call)
        return from_anthropic(sdk_payload(message), self.provider, self.model, message)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text and tool-input deltas; the last event holds the full response."""
        kw = {**self.body(request), "stream": True}

        async def call() -> Any:
            return await self._client().messages.create(**kw)

        events = await self._send(call)
        message: dict[str, Any] = {}
        blocks: dict[int, dict[str, Any]] = {}  # content block index -> the block so far
        calls: dict[int, int] = {}  # content block index -> the call's index among the calls
        stopped = False
        try:
            async for e in events:
                kind = getattr(e, "type", "")
                if kind == "message_start":
                    message = e.message.model_dump(warnings=False)
                elif kind == "content_block_start":
                    block = e.content_block.model_dump(warnings=False)
                    blocks[e.index] = block
                    if block.get("type") == "tool_use":
                        block["partial_json"] = ""
                        calls[e.index] = len(calls)
                        yield StreamEvent("tool_call", tool_call=ToolCallDelta(
                            calls[e.index], id=str(block.get("id") or ""),
                            name=str(block.get("name") or "")))
                    elif block.get("type") == "text" and block.get("text"):
                        yield StreamEvent("text", text=str(block["text"]))
                elif kind == "content_block_delta":
                    block, delta = blocks[e.index], e.delta
                    if delta.type == "text_delta":
                        block["text"] = str(block.get("text") or "") + delta.text
                        yield StreamEvent("text", text=str(delta.text))
                    elif delta.type == "input_json_delta" and e.index in calls:
                        block["partial_json"] += delta.partial_json
                        yield StreamEvent("tool_call", tool_call=ToolCallDelta(
                            calls[e.index], arguments=str(delta.partial_json)))
                elif kind == "message_delta":
                    message["stop_reason"] = e.delta.stop_reason
                    usage = dict(message.get("usage") or {})
                    usage.update({k: v for k, v in e.usage.model_dump(warnings=False).items()
                                  if v is not None})
                    message["usage"] = usage
                elif kind == "message_stop":
                    stopped = True
                elif kind == "error":
                    raise UpstreamError(self.provider, f"stream failed: {str(e)[:200]}")
        except anthropic.APIStatusError as err:
            if err.status_code != 200:
                raise self._error(err) from None
            # an `error` event after the stream began (overloaded_error, api_error, ...)
            body = err.body if isinstance(err.body, dict) else {}
            detail = (body.get("error") or {}).get("message") or "error event"
            raise UpstreamError(self.provider, f"stream failed: {str(detail)[:200]}") from None
        except self._failures() as err:
            raise self._error(err) from None
        if not stopped or not message:
            raise BadResponse(self.provider, "stream ended without message_stop")
        message["content"] = [_finished(blocks[i], self.provider) for i in sorted(blocks)]
        yield StreamEvent("done", response=from_anthropic(message, self.provider, self.model,
                                                          message))


def _finished(block: dict[str, Any], provider: str) -> dict[str, Any]:
    """A streamed content block with its tool input parsed from the joined JSON deltas."""
    if block.get("type") != "tool_use":
        return block
    raw = block.pop("partial_json", "")
    try:
        block["input"] = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise BadResponse(provider, f"tool_use input is not JSON: {raw[:100]!r}") from None
    return block
