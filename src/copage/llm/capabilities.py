"""What a chat model supports, for callers that adapt to it (``PagedChat(recall_mode="auto")``).

A model may declare ``capabilities`` (a collection of the names below); otherwise
they are inferred from its class, looking through wrappers (anything with an
``inner`` model): the text protocol has no native tools; the OpenAI-compatible
adapter has native tools, JSON-schema replies (``response_format``, which
OpenAI, vLLM and llama.cpp's server support) and real streaming; Anthropic has
native tools and real streaming, as has the Responses client.
"""

from __future__ import annotations

from typing import Any

TOOLS = "tools"
"""Native function calling."""
JSON_SCHEMA = "json_schema"
"""``response_format={"type": "json_schema", ...}`` constrains the reply."""
STREAM = "stream"
"""Real streaming (a ``stream()`` method that streams from the server)."""


def capabilities(model: Any) -> frozenset[str]:
    """The capabilities of ``model`` (declared, else inferred; see the module docstring)."""
    declared = getattr(model, "capabilities", None)
    if declared is not None:
        return frozenset(declared)
    from copage.llm.textmodel import TextProtocolModel

    if isinstance(model, TextProtocolModel):
        return capabilities(model.inner) - {TOOLS, STREAM}
    inner = getattr(model, "inner", None)
    if inner is not None:
        return capabilities(inner)
    kind = type(model).__name__
    if kind in ("OpenAIModel", "HttpChatModel"):
        return frozenset({TOOLS, JSON_SCHEMA, STREAM})
    if kind in ("AnthropicModel", "ResponsesModel"):
        return frozenset({TOOLS, STREAM})
    if kind == "ScriptedModel":
        return frozenset({TOOLS})
    return frozenset({TOOLS}) if hasattr(model, "complete") else frozenset()


def supports(model: Any, capability: str) -> bool:
    """True when ``model`` has ``capability``."""
    return capability in capabilities(model)
