"""Per-model parameter rules: which request fields a model accepts.

Reasoning models (OpenAI's o-series and gpt-5 family) reject ``max_tokens``
(they take ``max_completion_tokens``) and any ``temperature`` but the default;
sending them would make every call fail with HTTP 400 (and LLM bookmarks fall
back to offline keywords). :func:`param_rule` picks the rule for a model name
from a small table (:func:`register_param_rule` adds to it); the OpenAI adapter
also learns a rule from the server's own ``unsupported_parameter`` /
``unsupported_value`` error and retries once (:func:`learn_from_error`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class ParamRule:
    """How a model takes the output limit, temperature and logprobs.

    Attributes:
        max_tokens_field: ``max_tokens`` or ``max_completion_tokens``.
        temperature: False when the model accepts no ``temperature`` (it is dropped).
        logprobs: False when the model accepts no ``logprobs`` (dropped).
    """

    max_tokens_field: str = "max_tokens"
    temperature: bool = True
    logprobs: bool = True


STANDARD = ParamRule()
"""Chat models: ``max_tokens``, ``temperature`` and ``logprobs`` as given."""

REASONING = ParamRule("max_completion_tokens", temperature=False, logprobs=False)
"""Reasoning models: ``max_completion_tokens``, no ``temperature``, no ``logprobs``."""

_BUILTIN: list[tuple[re.Pattern[str], ParamRule]] = [
    # o1, o3, o4-mini, gpt-5, gpt-5-mini, gpt-5-nano (with or without vendor/ prefix,
    # date suffix); gpt-5-chat-* is a chat model and takes the standard fields.
    (re.compile(r"(?:.*/)?(?:o\d(?:-[\w.-]+)?|gpt-5(?!-chat)(?:[\w.-]*)?)"), REASONING),
]
_user: list[tuple[re.Pattern[str], ParamRule]] = []


def register_param_rule(pattern: str, rule: ParamRule) -> None:
    """Use ``rule`` for model names fully matching the regex ``pattern`` (checked first)."""
    _user.insert(0, (re.compile(pattern), rule))


def param_rule(model: str) -> ParamRule:
    """The rule for ``model`` (registered rules first, then the built-in table)."""
    for pattern, rule in (*_user, *_BUILTIN):
        if pattern.fullmatch(model):
            return rule
    return STANDARD


_UNSUPPORTED = re.compile(r"(?i)unsupported (?:parameter|value)\W+'?(\w+)'?")


def learn_from_error(rule: ParamRule, message: str) -> ParamRule | None:
    """A rule fixing what an HTTP 400 ``message`` complains about, or None if it is not that.

    Reads OpenAI's wording, e.g. ``Unsupported parameter: 'max_tokens' is not
    supported with this model. Use 'max_completion_tokens' instead.`` or
    ``Unsupported value: 'temperature' does not support 0 with this model.``
    """
    m = _UNSUPPORTED.search(message)
    if not m:
        return None
    what = m.group(1).lower()
    if what == "max_tokens" and rule.max_tokens_field != "max_completion_tokens":
        return replace(rule, max_tokens_field="max_completion_tokens")
    if what == "temperature" and rule.temperature:
        return replace(rule, temperature=False)
    if what in ("logprobs", "top_logprobs") and rule.logprobs:
        return replace(rule, logprobs=False)
    return None
