"""Fingerprints of what decides a prompt: settings and the prompt templates themselves.

A model answer may be reused on resume only when the prompt that produced it
would be the same: the key of a logged row holds :func:`config_id` of every
setting that changes the prompt and of :func:`template_texts` (each template
rendered once with fixed sample values, so any change of wording or layout
changes the fingerprint). Judge verdicts carry :func:`judge_template_id`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from copage.core import prompt
from copage.core.types import Turn
from copage.eval.jsonsafe import dumps


def fingerprint(value: Any) -> str:
    """A short stable hash of a JSON-able value (sorted keys, strict JSON)."""
    return hashlib.sha256(dumps(value, sort_keys=True).encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=1)
def template_texts() -> dict[str, str]:
    """Every answering template rendered with sample values (instruction, tools, turns, pages)."""
    from copage.eval.methods.method import INSTRUCTION
    from copage.eval.methods.search import SEARCH_HINT, search_tool_schema
    from copage.eval.methods.window import RETRIEVED_HEADER

    turns = [Turn("a", "user", "hello", speaker="Ann", timestamp="1 May", session=1),
             Turn("b", "assistant", "hi", speaker="Bob", timestamp="1 May", session=1),
             Turn("c", "user", "later", speaker="Ann", timestamp="2 May", session=2)]
    return {
        "instruction": INSTRUCTION,
        "search_hint": SEARCH_HINT,
        "search_tool": dumps(search_tool_schema(), sort_keys=True),
        "retrieved_header": RETRIEVED_HEADER,
        "preamble": prompt.preamble("recall") + "|" + prompt.preamble("recall", by_query=True),
        "recall_tool": dumps([prompt.recall_tool("recall"), prompt.recall_tool("recall", by_query=True)],
                             sort_keys=True),
        "bookmarks": prompt.bookmarks_block(["[p1:a, b]"]) + "|" + prompt.bookmarks_block([]),
        "page": prompt.page_block("p1", "text"),
        "turns": dumps(prompt.turn_messages(turns), sort_keys=True),
    }


def template_id() -> str:
    """Fingerprint of :func:`template_texts`."""
    return fingerprint(template_texts())


@lru_cache(maxsize=1)
def judge_template_id() -> str:
    """Fingerprint of the judge prompts (every kind, rendered with sample values)."""
    from copage.eval.scoring import JUDGE_KINDS, build_judge_messages

    return fingerprint({k: build_judge_messages(k, "Q?", "G", "A") for k in JUDGE_KINDS})


@lru_cache(maxsize=1)
def session_template_texts() -> dict[str, str]:
    """The templates of :class:`~copage.session.PagedChat`'s prompt styles and ``choose``
    call (the bookmark methods' prompts depend on them when a style or mode uses them)."""
    from copage.session import choose, prompts

    return {
        "compact_preamble": prompts.COMPACT_PREAMBLE + "|" + prompts.COMPACT_QUERY_HINT,
        "answer_only": prompts.ANSWER_ONLY_PREAMBLE,
        "reminder": prompts.REMINDER,
        "page_description": prompts.PAGE_DESCRIPTION,
        "choose": choose.CHOOSE_SYSTEM + "|" + choose.CHOOSE_PROMPT,
        "compact_tools": dumps(prompts.compact_tools([prompt.recall_tool("recall")], "recall"),
                               sort_keys=True),
    }


def session_templates_id() -> str:
    """Fingerprint of :func:`session_template_texts`."""
    return fingerprint(session_template_texts())


def config_id(settings: Mapping[str, Any]) -> str:
    """The ``config`` key field: ``settings`` plus the answering templates."""
    return fingerprint({"settings": dict(settings), "templates": template_id()})
