"""Model specs and the provider registry.

Spec syntax: ``provider:MODEL[@BASE_URL][#PROTOCOL]``, e.g. ``openai:gpt-4o-mini``,
``openai:local@http://127.0.0.1:8080/v1#text``, ``anthropic:claude-haiku-4-5``,
``deepseek:deepseek-chat``. ``@`` must be followed by ``http://`` or ``https://``
(model names may contain ``@`` and ``:``); ``#text`` / ``#native`` picks the
tool protocol (default native; the ``tool_protocol=`` option overrides).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copage.core.registry import Registry
from copage.llm.errors import MissingExtraError, safe_url
from copage.llm.model_types import ChatModel

PROVIDERS: Registry[ChatModel] = Registry("model provider")

SHORTCUTS: dict[str, tuple[str, str]] = {
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "glm": ("https://open.bigmodel.cn/api/paas/v4", "ZHIPUAI_API_KEY"),
}
_SPEC = re.compile(
    r"(?P<provider>[A-Za-z][\w\-]*):(?P<model>.+?)(?:@(?P<url>https?://[^#]+))?"
    r"(?:#(?P<proto>[\w\-]+))?"
)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec."""

    provider: str
    model: str
    base_url: str | None = None
    tool_protocol: str = "native"


def parse_spec(spec: str) -> ModelSpec:
    """Parse ``provider:MODEL[@BASE_URL][#PROTOCOL]``; raises ``ValueError`` clearly."""
    m = _SPEC.fullmatch(spec.strip())
    if not m:
        raise ValueError(
            f"bad model spec {spec!r}: expected provider:MODEL[@http(s)://BASE_URL][#text], "
            f"e.g. openai:gpt-4o-mini; providers: {', '.join(PROVIDERS.names())}"
        )
    proto = (m.group("proto") or "native").lower()
    if proto not in ("native", "text"):
        raise ValueError(f"bad tool protocol #{proto} in {spec!r}: use #native or #text")
    return ModelSpec(m.group("provider").lower(), m.group("model"), m.group("url"), proto)


def _missing(provider: str, package: str) -> MissingExtraError:
    return MissingExtraError(
        f"provider {provider!r} needs the {package!r} package: pip install 'copage[llm]'"
    )


def _openai_factory(provider: str) -> Any:
    def make(model: str, base_url: str | None = None, **options: Any) -> ChatModel:
        try:
            from copage.llm.openai_model import OpenAIModel
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] in ("openai", "httpx", "httpx2"):
                raise _missing(provider, "openai") from None
            raise
        if provider in SHORTCUTS:
            url, env = SHORTCUTS[provider]
            options.setdefault("api_key_env", env)
            options.setdefault("hosted", True)
            spec = f"{provider}:{model}" + (f"@{safe_url(base_url)}" if base_url else "")
            return OpenAIModel(
                model, provider=provider, base_url=base_url or url, spec=spec, **options
            )
        return OpenAIModel(model, provider=provider, base_url=base_url, **options)

    return make


def _anthropic(model: str, base_url: str | None = None, **options: Any) -> ChatModel:
    try:
        from copage.llm.anthropic_model import AnthropicModel
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] in ("anthropic", "httpx", "httpx2"):
            raise _missing("anthropic", "anthropic") from None
        raise
    return AnthropicModel(model, base_url=base_url, **options)


def _scripted(model: str, base_url: str | None = None, **options: Any) -> ChatModel:
    from copage.llm.scripted import ScriptedModel

    if base_url:
        raise ValueError("scripted models take no base URL")
    return ScriptedModel(name=model, **options)


for _name in ("openai", *SHORTCUTS):
    PROVIDERS.register(_name, _openai_factory(_name))
PROVIDERS.register("anthropic", _anthropic)
PROVIDERS.register("scripted", _scripted)


def get_model(
    spec: str,
    *,
    tool_protocol: str | None = None,
    cache: Any = None,
    max_concurrency: int | None = None,
    meter: Any = None,
    **options: Any,
) -> ChatModel:
    """Build the model named by ``spec``, wrapped as asked.

    Args:
        spec: ``provider:MODEL[@BASE_URL][#text]``.
        tool_protocol: ``"native"`` or ``"text"`` (overrides the spec's ``#...``).
        cache: a ``ResponseCache``, a path, True (default path) or None/False (no cache).
        max_concurrency: bound on requests in flight (None: unbounded).
        meter: a ``UsageMeter`` that records every response.
        **options: adapter options (``api_key``, ``timeout``, ``max_retries``,
            ``base_delay``, ``sleep``, ``rng``, ``null_content``, ...).
    """
    parsed = parse_spec(spec)
    PROVIDERS.check(parsed.provider)
    proto = (tool_protocol or parsed.tool_protocol).lower()
    if proto not in ("native", "text"):
        raise ValueError(f"tool_protocol must be 'native' or 'text', got {tool_protocol!r}")
    model = PROVIDERS.create(
        parsed.provider, model=parsed.model, base_url=parsed.base_url, **options
    )
    if proto == "text":
        from copage.llm.textmodel import TextProtocolModel

        model = TextProtocolModel(model)
    if max_concurrency is not None:
        from copage.llm.bounded import BoundedModel

        model = BoundedModel(model, max_concurrency)
    if cache is not None and cache is not False:
        from copage.llm.response_cache import CachedModel, ResponseCache

        if cache is True:
            store = ResponseCache()
        elif isinstance(cache, (str, Path)):
            store = ResponseCache(cache)
        else:
            store = cache
        model = CachedModel(model, store)
    if meter is not None:
        from copage.llm.meter import MeteredModel

        model = MeteredModel(model, meter)
    return model
