"""copage.llm: chat model adapters chosen by a spec string (``provider:MODEL[@URL][#text]``).

Vendor SDKs are imported only when a provider is built; see ``docs/models.md``.
"""

from copage.llm.bounded import BoundedModel
from copage.llm.chat_messages import assistant_message, tool_call_dict, tool_message
from copage.llm.errors import (
    AuthError,
    BadResponse,
    ContextOverflow,
    EmptyReply,
    MissingExtraError,
    ModelError,
    ModelTimeout,
    NetworkForbidden,
    OutOfFileDescriptors,
    RateLimited,
    RequestRejected,
    UpstreamError,
)
from copage.llm.guard import check_url, forbid_network, network_forbidden
from copage.llm.meter import MeteredModel, UsageMeter, UsageTotals
from copage.llm.model_types import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    StreamEvent,
    ToolCallDelta,
    Usage,
    complete_sync,
    stream,
)
from copage.llm.prices import PRICES_AS_OF, cost_of, price_of, register_price
from copage.llm.providers import PROVIDERS, ModelSpec, get_model, parse_spec
from copage.llm.response_cache import CachedModel, ResponseCache, default_cache_path, request_key
from copage.llm.retry import RetryPolicy
from copage.llm.scripted import ScriptedModel, ScriptExhausted
from copage.llm.textmodel import TextProtocolModel
from copage.llm.textproto import ParsedReply, parse_reply, render_tools

__all__ = [
    "PRICES_AS_OF",
    "PROVIDERS",
    "AuthError",
    "BadResponse",
    "BoundedModel",
    "CachedModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ContextOverflow",
    "EmptyReply",
    "MeteredModel",
    "MissingExtraError",
    "ModelError",
    "ModelSpec",
    "ModelTimeout",
    "NetworkForbidden",
    "OutOfFileDescriptors",
    "ParsedReply",
    "RateLimited",
    "RequestRejected",
    "ResponseCache",
    "RetryPolicy",
    "ScriptExhausted",
    "ScriptedModel",
    "StreamEvent",
    "TextProtocolModel",
    "ToolCallDelta",
    "UpstreamError",
    "Usage",
    "UsageMeter",
    "UsageTotals",
    "assistant_message",
    "check_url",
    "complete_sync",
    "cost_of",
    "default_cache_path",
    "forbid_network",
    "get_model",
    "network_forbidden",
    "parse_reply",
    "parse_spec",
    "price_of",
    "register_price",
    "render_tools",
    "request_key",
    "stream",
    "tool_call_dict",
    "tool_message",
]
