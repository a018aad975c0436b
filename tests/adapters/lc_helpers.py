"""A fake tool-calling chat model on langchain-core's FakeMessagesListChatModel."""

from __future__ import annotations

from typing import Any

from adapter_fixtures import PAGING, TURNS
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field

from copage import PagedMemory, PagerConfig
from copage.stores.inmemory import MemoryStore


class ToolCallingFake(FakeMessagesListChatModel):
    """Replies from ``responses`` in order; records every call's messages and tools."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[list[Any]] = Field(default_factory=list)
    pending_tools: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.pending_tools = list(tools)
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.i >= len(self.responses) or (self.seen and self.i == 0):
            raise AssertionError(f"fake model script exhausted after {len(self.seen)} calls")
        self.seen.append(list(messages))
        self.bound.append(list(self.pending_tools))
        return super()._generate(messages, stop, run_manager, **kwargs)


def recall(page: str, call_id: str = "call_recall") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "recall", "args": {"page": page},
                                              "id": call_id, "type": "tool_call"}])


def tool_names(tools: list[Any]) -> list[str]:
    out = []
    for t in tools:
        out.append(t["function"]["name"] if isinstance(t, dict) else t.name)
    return out


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def seeded_store(conversation_id: str) -> MemoryStore:
    """A store holding ``TURNS`` paged with ``PAGING`` under ``conversation_id``."""
    store = MemoryStore()
    mem = PagedMemory(store=store, conversation_id=conversation_id, config=PagerConfig(**PAGING))
    for role, text in TURNS:
        mem.add(role, text)
    return store
