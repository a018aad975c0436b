"""Value types and the ``ChatModel`` protocol shared by every model adapter.

Messages and tools are plain dicts in OpenAI chat format, so requests serialise
to JSON unchanged (the response cache keys on that JSON).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from copage.core.types import ToolCall

Message = Mapping[str, Any]
"""One chat message in OpenAI format (``{"role": ..., "content": ...}``)."""

ToolSpec = Mapping[str, Any]
"""One tool in OpenAI format (``{"type": "function", "function": {...}}``)."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call.

    ``prompt_tokens`` is all of the prompt; of it, ``cached_tokens`` were read from the
    provider's prompt cache and ``cache_write_tokens`` written to it (Anthropic), each
    billed at its own price (:func:`copage.llm.prices.cost_of`)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat completion request, provider-neutral (OpenAI shapes).

    Attributes:
        messages: the conversation, OpenAI chat format.
        tools: tool definitions, OpenAI format (empty: no tools).
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or an OpenAI named choice.
        temperature: sampling temperature (None: provider default).
        max_tokens: output token limit (None: provider default).
        logprobs: ask for per-token log-probabilities (where supported).
        extra: provider-specific body fields, passed through (JSON-serialisable).
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    logprobs: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.messages, list):
            object.__setattr__(self, "messages", tuple(self.messages))
        if isinstance(self.tools, list):
            object.__setattr__(self, "tools", tuple(self.tools))
        if not self.messages:
            raise ValueError("ChatRequest needs at least one message")
        for i, m in enumerate(self.messages):
            if not isinstance(m, Mapping) or "role" not in m:
                raise ValueError(f"message {i} must be a dict with a 'role', got {m!r:.80}")

    def to_json(self) -> dict[str, Any]:
        """The request as JSON-able data (used for cache keys)."""
        return {
            "messages": [dict(m) for m in self.messages],
            "tools": [dict(t) for t in self.tools],
            "tool_choice": self.tool_choice,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "logprobs": self.logprobs,
            "extra": dict(self.extra),
        }


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One model reply.

    Attributes:
        text: the reply text ("" when the reply holds only tool calls).
        tool_calls: tool calls, OpenAI shape (arguments as JSON text).
        finish_reason: ``stop``, ``tool_calls``, ``length`` ... (OpenAI vocabulary).
        usage: token counts.
        cost_usd: price of the call from the price table, None if the model is unknown.
        logprobs: per-token log-probabilities of the reply, if asked for and supported.
        model: the model name that answered.
        raw: the provider's raw reply (not cached, not compared).
        cached: True when served from the response cache.
    """

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = "stop"
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    logprobs: list[float] | None = None
    model: str = ""
    raw: Any = field(default=None, compare=False, repr=False)
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        """JSON-able data (without ``raw``)."""
        return {
            "text": self.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
            "finish_reason": self.finish_reason,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "cached_tokens": self.usage.cached_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
            },
            "cost_usd": self.cost_usd,
            "logprobs": self.logprobs,
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatResponse:
        """Inverse of :meth:`to_json`; raises ``KeyError``/``TypeError``/``ValueError`` on bad data."""
        calls = tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
            for c in data["tool_calls"]
        )
        usage = data["usage"]
        lp = data.get("logprobs")
        cost = data.get("cost_usd")
        return cls(
            text=str(data["text"]),
            tool_calls=calls,
            finish_reason=data.get("finish_reason"),
            usage=Usage(int(usage["prompt_tokens"]), int(usage["completion_tokens"]),
                        int(usage.get("cached_tokens") or 0),
                        int(usage.get("cache_write_tokens") or 0)),
            cost_usd=None if cost is None else float(cost),
            logprobs=None if lp is None else [float(x) for x in lp],
            model=str(data.get("model", "")),
        )

    def with_(self, **changes: Any) -> ChatResponse:
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call (OpenAI streaming shape)."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One streaming event: a text delta, a tool-call delta, or the final response.

    The last event of every stream has ``kind == "done"`` and carries the full
    :class:`ChatResponse`, built by the same code as the non-streaming path.
    """

    kind: Literal["text", "tool_call", "done"]
    text: str = ""
    tool_call: ToolCallDelta | None = None
    response: ChatResponse | None = None


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers chat requests."""

    @property
    def name(self) -> str:
        """Short model name (e.g. ``gpt-4o-mini``)."""
        ...

    @property
    def spec(self) -> str:
        """The model spec string (never holds a key), e.g. ``openai:gpt-4o-mini``."""
        ...

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request."""
        ...


def events_of(response: ChatResponse) -> list[StreamEvent]:
    """A whole reply as stream events: its text, its tool calls, then ``done``."""
    events = [StreamEvent("text", text=response.text)] if response.text else []
    for i, call in enumerate(response.tool_calls):
        delta = ToolCallDelta(i, id=call.id, name=call.name, arguments=call.arguments)
        events.append(StreamEvent("tool_call", tool_call=delta))
    events.append(StreamEvent("done", response=response))
    return events


async def fallback_stream(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
    """Stream for models without native streaming: the whole reply as one chunk."""
    response = await model.complete(request)
    for event in events_of(response):
        yield event


def stream(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
    """Stream a reply: the model's own ``stream`` if it has one, else one chunk."""
    native = getattr(model, "stream", None)
    if native is not None:
        result: AsyncIterator[StreamEvent] = native(request)
        return result
    return fallback_stream(model, request)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from synchronous code (on the shared loop of :mod:`copage.llm.runner`).

    Fails clearly inside a running loop. One long-lived loop serves every
    synchronous call, so model clients and their connections are reused instead
    of leaking one per call.
    """
    from copage.llm.runner import run_sync as _run

    return _run(coro)


def complete_sync(model: ChatModel, request: ChatRequest | Sequence[Message]) -> ChatResponse:
    """Answer one request from synchronous code (a message list is accepted too)."""
    if not isinstance(request, ChatRequest):
        request = ChatRequest(messages=tuple(request))
    return run_sync(model.complete(request))
