"""Keep copage's recall exchange out of LangGraph's ``stream_mode="messages"``.

LangGraph streams what a chat model emits through a callback handler
(``StreamMessagesHandler``) found in the run's config. Inside one model call of
the agent, :func:`held_stream` puts a :class:`HeldStream` in its place for one
round of the recall loop: text chunks pass through as they arrive (as the proxy
streams them); from the first chunk that carries a tool call on, the round's
chunks and its final message are held. When the round ends, the middleware calls
:meth:`HeldStream.finish`: a round whose recalls were served inside is dropped
(the caller never sees the recall call nor a result for it); the round that ends
the model call is released without its recall calls.

Text passes through the engine's :class:`~copage.session.textfilter.CallTextFilter`
(one filter for every front end): a recall written as text (``RECALL p3``,
``<tool_call>...``, a reply that is only ``p3``) is held back and never streamed;
what is held and is not a call is released when the round ends with an answer.
A round's first text after text streamed by earlier rounds opens with the blank
line the engine's answer puts between them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, BaseMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from copage.adapters.langchain.convert import without_calls
from copage.llm.model_types import ToolSpec
from copage.session.engine import separated
from copage.session.textfilter import CallTextFilter, text_calls

T = TypeVar("T")


class HeldStream(BaseCallbackHandler):
    """Stands for LangGraph's message-stream handler during one recall round."""

    run_inline = True  # like the handler it wraps: in order, on the caller's thread

    def __init__(self, inner: BaseCallbackHandler, tool_name: str,
                 tools: Sequence[ToolSpec] = (), before: str = "") -> None:
        self.inner, self.name = inner, tool_name
        self.tools = list(tools)
        self.before = before  # the text earlier rounds of the model call streamed
        self.shown = ""  # the text this round streamed
        self.held: dict[UUID, list[tuple[str, Any]]] = {}  # run -> events, in order
        self.names: dict[UUID, dict[int, str]] = {}  # run -> tool-call index -> name
        self.filters: dict[UUID, CallTextFilter] = {}  # run -> its text filter
        self.ids: dict[UUID, str | None] = {}  # run -> its message id

    # a streaming handler (so the model streams, as it would for LangGraph's)
    def tap_output_iter(self, run_id: UUID, output: Iterator[T]) -> Iterator[T]:
        return output

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]],
                            **kwargs: Any) -> Any:
        return self.inner.on_chat_model_start(serialized, messages, **kwargs)

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, run_id: UUID,
                         **kwargs: Any) -> Any:
        msg = getattr(chunk, "message", None)
        names = self.names.setdefault(run_id, {})
        for c in getattr(msg, "tool_call_chunks", None) or []:
            if c.get("name") and c.get("index") is not None:
                names[int(c["index"])] = str(c["name"])
        if run_id in self.held or getattr(msg, "tool_call_chunks", None):
            self.held.setdefault(run_id, []).append(("token", (token, chunk, kwargs)))
            return None
        text = token if isinstance(token, str) else ""
        if not text or not self.tools:
            return self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)
        filt = self.filters.setdefault(run_id, CallTextFilter(self.tools, self.name))
        self.ids[run_id] = getattr(msg, "id", None)
        shown = filt.feed(text)
        if shown == text and self._lead(shown) == shown:
            self.shown += shown
            return self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)
        if shown:  # part of the chunk is held back, or it opens a later round
            return self._text(run_id, shown, kwargs)
        return None

    def _lead(self, text: str) -> str:
        """``text`` set apart from the earlier rounds' text when it opens this round's
        (:func:`copage.session.engine.separated`, as the answer has it)."""
        return text if self.shown else separated(self.before, text)

    def _text(self, run_id: UUID, text: str, kwargs: dict[str, Any]) -> Any:
        text = self._lead(text)
        self.shown += text
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=text, id=self.ids.get(run_id)))
        return self.inner.on_llm_new_token(text, chunk=chunk, run_id=run_id, **kwargs)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> Any:
        self.held.setdefault(run_id, []).append(("end", (response, kwargs)))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> Any:
        self.held.pop(run_id, None)
        return self.inner.on_llm_error(error, run_id=run_id, **kwargs)

    def finish(self, *, keep: bool) -> None:
        """End the round: release its held events without recall calls, or drop them."""
        for run_id, filt in self.filters.items():
            rest = text_calls(filt.held(), self.tools, self.name, alone=not filt.released,
                              bare_id="call_bare").rest
            if keep and rest:  # held text that is no call: it belongs to the answer
                self._text(run_id, rest, {})
        for run_id, events in self.held.items():
            if not keep:  # tell the inner handler the run is over, with nothing to emit
                self.inner.on_llm_end(LLMResult(generations=[]), run_id=run_id)
                continue
            recalls = {i for i, n in self.names.get(run_id, {}).items() if n == self.name}
            for kind, payload in events:
                if kind == "token":
                    token, chunk, kwargs = payload
                    if isinstance(chunk, ChatGenerationChunk):
                        chunk = ChatGenerationChunk(message=_chunk_without(chunk.message,
                                                                           recalls),
                                                    generation_info=chunk.generation_info)
                    self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)
                else:
                    response, kwargs = payload
                    self.inner.on_llm_end(_result_without(response, self.name), run_id=run_id,
                                          **kwargs)
        self.held.clear()
        self.names.clear()
        self.filters.clear()


def _chunk_without(msg: BaseMessageChunk, recalls: set[int]) -> BaseMessageChunk:
    if not isinstance(msg, AIMessageChunk) or not recalls:
        return msg
    keep = [c for c in msg.tool_call_chunks if c.get("index") not in recalls]
    kwargs = dict(msg.additional_kwargs)
    if "tool_calls" in kwargs:
        kwargs["tool_calls"] = [c for c in kwargs["tool_calls"] if c.get("index") not in recalls]
        if not kwargs["tool_calls"]:
            del kwargs["tool_calls"]
    return AIMessageChunk(content=msg.content, id=msg.id, tool_call_chunks=keep,
                          additional_kwargs=kwargs, response_metadata=msg.response_metadata,
                          usage_metadata=msg.usage_metadata, name=msg.name)


def _result_without(response: LLMResult, name: str) -> LLMResult:
    gens = []
    for row in response.generations:
        out = []
        for g in row:
            if isinstance(g, ChatGeneration) and isinstance(g.message, AIMessage):
                g = ChatGeneration(message=without_calls(g.message, name),
                                   generation_info=g.generation_info)
            out.append(g)
        gens.append(out)
    return LLMResult(generations=gens, llm_output=response.llm_output, run=response.run)


def _is_stream_handler(h: object) -> bool:
    return type(h).__name__ == "StreamMessagesHandler"


@contextmanager
def held_stream(tool_name: str, tools: Sequence[ToolSpec] = (),
                before: str = "") -> Iterator[HeldStream | None]:
    """Within the block, model calls of this run stream through a :class:`HeldStream`
    (None when the run streams no messages); ``before``: the text earlier rounds of
    the model call streamed."""
    config = var_child_runnable_config.get()
    manager = (config or {}).get("callbacks")
    if not isinstance(manager, BaseCallbackManager):
        yield None
        return
    inner = next((h for h in manager.handlers if _is_stream_handler(h)), None)
    if inner is None:
        yield None
        return
    held = HeldStream(inner, tool_name, tools, before)
    copy = manager.copy()
    copy.handlers = [held if h is inner else h for h in manager.handlers]
    copy.inheritable_handlers = [held if h is inner else h
                                 for h in manager.inheritable_handlers]
    token = var_child_runnable_config.set({**(config or {}), "callbacks": copy})
    try:
        yield held
    finally:
        var_child_runnable_config.reset(token)
