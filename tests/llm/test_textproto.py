"""The text tool protocol: rendering, tolerant parsing, and the TextProtocolModel wrapper."""

from __future__ import annotations

import json
import re
import time

import pytest

from copage.core.types import ToolCall
from copage.llm import (
    ChatRequest,
    ScriptedModel,
    TextProtocolModel,
    get_model,
    parse_reply,
    render_tools,
)
from copage.llm.chat_messages import assistant_message, tool_message

from .conftest import RECALL_TOOL

QUERY_RECALL = {
    "type": "function",
    "function": {
        "name": "recall",
        "parameters": {
            "type": "object",
            "properties": {"page": {"type": "string"}, "query": {"type": "string"}},
        },
    },
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TOOLS = (RECALL_TOOL, WEATHER)


def args(text: str, tools: tuple = TOOLS) -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    return [(c.name, json.loads(c.arguments)) for c in parse_reply(text, tools).tool_calls]


@pytest.mark.parametrize(
    "reply",
    [
        "RECALL p3",
        "recall p3",
        "  `RECALL p3`  ",
        "```\nRECALL p3\n```",
        "RECALL: 3",
        "Recall: P3.",
        "recall(p3)",
        'recall("p3")',
        "recall(page='p3')",
        'I should check my notes. recall(page="p3")',
        'TOOL recall {"page": "p3"}',
        'tool: recall {"page": "p3"}',
        '{"tool": "recall", "page": "p3"}',
        'Sure: {"name": "recall", "arguments": {"page": "p3"}}',
        '{"tool": "recall", "args": {"page": "p3"}}',
        '{"function": {"name": "recall", "arguments": "{\\"page\\": \\"p3\\"}"}}',
        "Let me look that up. RECALL p3",
        "**RECALL p3**",
    ],
)
def test_recall_variants(reply: str) -> None:
    assert args(reply) == [("recall", {"page": "p3"})]


@pytest.mark.parametrize(
    "reply",
    [
        "Recall that you said you love Thai food.",
        "I recall p3 was about budgets, but I'm not sure.",
        "Sure! The weather is nice.",
        '{"tool": "unknown_tool", "page": "p3"}',
        "",
    ],
)
def test_no_false_positives(reply: str) -> None:
    assert args(reply) == []


def test_free_text_query_and_generic_tool() -> None:
    assert args('RECALL "peanut allergy"', (QUERY_RECALL,)) == [
        ("recall", {"query": "peanut allergy"})
    ]
    assert args('TOOL get_weather {"city": "Paris"}') == [("get_weather", {"city": "Paris"})]
    assert args('get_weather("Oslo")') == [("get_weather", {"city": "Oslo"})]


def test_multiple_calls_in_order_and_remaining_text() -> None:
    parsed = parse_reply("Checking two pages.\nRECALL p2\nRECALL p5", TOOLS)
    assert [json.loads(c.arguments)["page"] for c in parsed.tool_calls] == ["p2", "p5"]
    assert parsed.text == "Checking two pages."
    assert len({c.id for c in parsed.tool_calls}) == 2
    assert (
        parse_reply("RECALL p2", TOOLS).tool_calls[0].id
        == parse_reply("RECALL p2", TOOLS).tool_calls[0].id
    )


def test_render_gives_one_call_syntax_per_tool_and_no_real_looking_page_id() -> None:
    text = render_tools(TOOLS)
    assert "- get_weather: Weather in a city." in text
    assert 'Call: TOOL get_weather {"city": ...}' in text
    assert "Call: RECALL <page id>" in text
    assert "TOOL recall" not in text  # one syntax for recall, not two
    assert not re.search(r"\bp\d+\b", text)  # no example id a model could copy


@pytest.mark.parametrize(
    "reply",
    [
        "RECALL page 3",
        "RECALL [p3]",
        "RECALL: [p3: peanut, satay]",
        'TOOL recall {"page": p3}',
        '<tool_call>\n{"name": "recall", "arguments": {"page": "p3"}}\n</tool_call>',
        '<tool_call>{"name": "recall", "arguments": {"page": p3}}</tool_call>',
        'Let me check.\n<tool_call>\n{"name": "recall", "arguments": {"page": "p3"}}',
    ],
)
def test_more_recall_forms(reply: str) -> None:
    parsed = parse_reply(reply, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [
        ("recall", {"page": "p3"})
    ]
    assert "tool_call" not in parsed.text and "RECALL" not in parsed.text


async def test_forced_choice_is_honoured_in_text_mode() -> None:
    inner = ScriptedModel().reply("RECALL p2")
    req = ChatRequest(
        ({"role": "user", "content": "What did I say about budgets?"},), tools=(RECALL_TOOL,),
        tool_choice={"type": "function", "function": {"name": "recall"}},
    )
    resp = await TextProtocolModel(inner).complete(req)
    assert [c.name for c in resp.tool_calls] == ["recall"]
    sent = inner.requests[0].messages
    assert "must be a call of recall" in sent[0]["content"]
    assert sent[-1]["role"] == "user" and "call recall now" in sent[-1]["content"].lower()


async def test_wrapper_converts_history_and_reply() -> None:
    inner = ScriptedModel().reply("I need an old page.\nRECALL p4")
    model = TextProtocolModel(inner)
    history = (
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Allergies?"},
        assistant_message("", [ToolCall("c1", "recall", '{"page": "p2"}')]),
        tool_message("c1", "p2: nothing relevant"),
        {"role": "user", "content": "Anything else?"},
    )
    resp = await model.complete(ChatRequest(history, tools=(RECALL_TOOL,), tool_choice="auto"))
    assert resp.finish_reason == "tool_calls" and resp.text == "I need an old page."
    assert [(c.name, json.loads(c.arguments)) for c in resp.tool_calls] == [
        ("recall", {"page": "p4"})
    ]
    sent = inner.requests[0]
    assert sent.tools == () and sent.tool_choice is None
    roles = [m["role"] for m in sent.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert sent.messages[0]["content"].startswith("You are helpful.\n\nYou can use tools.")
    assert sent.messages[2] == {"role": "assistant", "content": "RECALL p2"}
    assert (
        sent.messages[3]["content"] == "TOOL RESULT recall:\np2: nothing relevant\n\nAnything else?"
    )


async def test_spec_option_selects_text_protocol() -> None:
    model = get_model("scripted:tiny#text")
    assert isinstance(model, TextProtocolModel) and model.spec == "scripted:tiny#text"
    model.inner.reply("recall(p1)")  # type: ignore[attr-defined]
    resp = await model.complete(
        ChatRequest(({"role": "user", "content": "q"},), tools=(RECALL_TOOL,))
    )
    assert resp.tool_calls[0].name == "recall"
    plain = await TextProtocolModel(ScriptedModel().reply("RECALL p1")).complete(
        ChatRequest(({"role": "user", "content": "q"},), tools=(RECALL_TOOL,), tool_choice="none")
    )
    assert plain.tool_calls == () and plain.text == "RECALL p1"


@pytest.mark.parametrize("text", [
    "RECALL" + " " * 16000 + "x", "TOOL" + " " * 16000 + "x", "recall" + " " * 16000 + "x",
    "RECALL" + "\n " * 8000 + "x", "recall(" + "a" * 20000 + ")", '{"a' * 30000,
    "CALL:" + " " * 16000 + "recall" + " " * 16000,
])
def test_pathological_replies_parse_in_linear_time(text: str) -> None:
    """A guard against catastrophic backtracking: these parse in milliseconds, while the
    quadratic patterns took about 15 s on inputs this size (bound far from both, so a
    loaded machine does not make it flaky)."""
    start = time.perf_counter()
    parse_reply(text, TOOLS)
    assert time.perf_counter() - start < 2.0


def test_calls_beyond_the_scan_limit_stay_text() -> None:
    from copage.llm.textproto import MAX_SCAN

    text = "RECALL p2\n" + "x " * MAX_SCAN + "\nRECALL p5"
    parsed = parse_reply(text, TOOLS)
    assert [json.loads(c.arguments) for c in parsed.tool_calls] == [{"page": "p2"}]
    assert parsed.text.endswith("RECALL p5")


@pytest.mark.parametrize(
    "reply",
    [
        # Qwen2.5's template shows the call as {{"name": <function-name>, ...}}: copied verbatim
        '{{"name": "recall", "arguments": {"page": "p3"}}}',
        '{{"name": "recall", "arguments": {"page": "p3"}}}}',
        '{{"name": "recall", "arguments": {{"page": "p3"}}}}',
        '{{"name": "recall", "arguments": {"page": p3}}}',
        '{{ "name": "recall", "arguments": { "page": "p3" } }}',
        '<tool_call>\n{{"name": "recall", "arguments": {"page": "p3"}}}\n</tool_call>',
        'Let me check.\n{{"name": "recall", "arguments": {"page": "p3"}}}}',
    ],
)
def test_doubled_brace_calls(reply: str) -> None:
    parsed = parse_reply(reply, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [
        ("recall", {"page": "p3"})
    ]
    assert "{" not in parsed.text and "}" not in parsed.text and "tool_call" not in parsed.text
    assert parsed.text in ("", "Let me check.")


def test_doubled_braces_of_other_tools_and_prose_are_not_calls() -> None:
    assert args('{{"name": "search", "arguments": {"q": "x"}}}') == []
    assert args("Use {{name}} in the template.") == []
    assert args('{{"name": "get_weather", "arguments": {"city": "Oslo"}}}') == [
        ("get_weather", {"city": "Oslo"})
    ]
