"""The cooperative loop with a scripted model: recalls, pairs, cap and bad tool calls."""

from __future__ import annotations

import json

import pytest
from session_helpers import TOPICS, check_pairs, new_memory

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.llm.model_types import ChatResponse, Usage
from copage.llm.scripted import ScriptedModel
from copage.session import CALLS_AFTER_CAP, PagedChat, RecallLoopError


def test_setup_evicts() -> None:
    mem = new_memory()
    assert mem.evicted == ["p1", "p2", "p3", "p4"]
    assert mem.resident == ["p5", "p6"]


async def test_recall_round_trip() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("No satay: peanuts.")
    report = await PagedChat(mem, model, recall_mode="tool").send("What can't I eat?")

    assert report.answer == "No satay: peanuts."
    assert [(r.page, r.status) for r in report.recalls] == [("p1", "paged_in")]
    assert report.recalls[0].evicted == ("p5",)
    assert report.model_calls == 2 and len(report.prompt_tokens) == 2
    assert "p1" in mem.resident and "p1" not in mem.evicted
    first, second = model.requests
    assert first.tools and first.tools[0]["function"]["name"] == "recall"
    assert first.messages[-1] == {"role": "user", "content": "What can't I eat?"}
    assert "[p1:" in first.messages[0]["content"]  # bookmark of the evicted page
    check_pairs(second.messages)
    call, result = second.messages[-2], second.messages[-1]
    assert call["tool_calls"][0]["function"]["name"] == "recall"
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert TOPICS[0] in result["content"] and '<page id="p1">' in result["content"]
    # Only the user turn and the answer were stored: no tool turns.
    assert [(t.role, t.text) for t in mem.turns[-2:]] == [
        ("user", "What can't I eat?"), ("assistant", "No satay: peanuts.")]
    assert all(t.role in ("user", "assistant") for t in mem.turns)
    assert report.user_turn_id == mem.turns[-2].id and report.answer_turn_id == mem.turns[-1].id


async def test_next_turn_shows_recalled_page_as_messages() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("ok").reply("fine")
    chat = PagedChat(mem, model, recall_mode="tool")
    await chat.send("peanuts?")
    await chat.send("and now?")
    later = model.requests[-1].messages
    assert any(m.get("content") == TOPICS[0] for m in later)
    assert all(m["role"] != "tool" for m in later)


async def test_cap_enforced() -> None:
    mem = new_memory()
    model = ScriptedModel()
    for p in ("p1", "p2", "p3"):
        model.tool_call("recall", {"page": p})
    model.reply("done")
    report = await PagedChat(mem, model, max_recalls_per_turn=2, recall_mode="tool").send("all of it?")
    assert [r.status for r in report.recalls] == ["paged_in", "paged_in", "refused"]
    assert report.capped and report.answer == "done"
    assert model.requests[2].tool_choice == "none" and model.requests[2].tools
    # tool_choice "auto" is sent explicitly (local servers differ on the default)
    assert model.requests[0].tool_choice == "auto" and model.requests[1].tool_choice == "auto"
    assert "limit of 2 recall calls" in model.requests[3].messages[-1]["content"]
    check_pairs(model.requests[3].messages)
    assert "p3" in mem.evicted  # the refused call paged nothing in


async def test_endless_loop_raises_and_rolls_back() -> None:
    mem = new_memory()
    before = [t.id for t in mem.turns], mem.resident
    model = ScriptedModel()
    for _ in range(1 + CALLS_AFTER_CAP):
        model.tool_call("recall", {"page": "p1"})
    with pytest.raises(RecallLoopError, match="still calling tools"):
        await PagedChat(mem, model, max_recalls_per_turn=1, recall_mode="tool").send("loop?")
    assert ([t.id for t in mem.turns], mem.resident) == before
    assert model.requests[-1].tools == ()  # the last try offered no tools at all


async def test_several_calls_in_one_reply_keep_pairs() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_calls(
        [("recall", {"page": "p1"}), ("recall", {"page": "p2"}), ("recall", {"page": "p3"})]
    ).reply("ok")
    report = await PagedChat(mem, model, max_recalls_per_turn=2, recall_mode="tool").send("q")
    assert [r.status for r in report.recalls] == ["paged_in", "paged_in", "refused"]
    check_pairs(model.requests[1].messages)


@pytest.mark.parametrize(
    ("arguments", "expect"),
    [
        ("{page: p1", "must be a JSON object"),
        ("[1, 2]", "must be a JSON object"),
        ("{}", "needs arguments"),
        ('{"page": "p99"}', "there is no page p99"),
        ('{"page": "banana"}', "needs a page id"),
    ],
)
async def test_bad_arguments_answered_with_error(arguments: str, expect: str) -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", arguments).reply("sorry")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    (rec,) = report.recalls
    assert rec.status == "error" and rec.page is None
    result = model.requests[1].messages[-1]
    assert result["content"].startswith("error: ") and expect in result["content"]
    check_pairs(model.requests[1].messages)
    assert mem.evicted == ["p1", "p2", "p3", "p4"]
    assert mem.turns[-1].text == "sorry"


async def test_bare_string_argument_is_a_page() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", json.dumps("p2")).reply("ok")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert report.recalls[0].page == "p2" and report.recalls[0].status == "paged_in"


async def test_resident_page() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p6"}).reply("ok")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert [(r.page, r.status) for r in report.recalls] == [("p6", "resident")]
    assert "already in context" in model.requests[1].messages[-1]["content"]
    assert mem.resident == ["p5", "p6"]


async def test_unknown_tool() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("search", {"q": "x"}).reply("ok")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert report.recalls[0].status == "unknown_tool"
    assert "unknown tool 'search'" in model.requests[1].messages[-1]["content"]


async def test_duplicate_call_ids_made_unique() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_calls(
        [("recall", {"page": "p1"}), ("recall", {"page": "p2"})], ids=["same", "same"]
    ).reply("ok")
    await PagedChat(mem, model, recall_mode="tool").send("q")
    check_pairs(model.requests[1].messages)


async def test_empty_reply_retried_once_then_error() -> None:
    mem = new_memory()
    model = ScriptedModel().reply("").reply("second try")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert report.answer == "second try" and report.empty_retries == 1

    n = len(mem.turns)
    model = ScriptedModel().reply("").reply("  ")
    with pytest.raises(BadResponse, match="empty reply twice"):
        await PagedChat(mem, model, recall_mode="tool").send("q2")
    assert len(mem.turns) == n


async def test_truncated_reply_is_stored_and_flagged() -> None:
    mem = new_memory()
    cut = ChatResponse(text="The answer is", finish_reason="length")
    report = await PagedChat(mem, ScriptedModel().then(lambda _r: cut), recall_mode="tool").send("q")
    assert report.truncated and report.answer == "The answer is"
    assert mem.turns[-1].text == "The answer is"


async def test_force_recall_names_the_tool_on_first_call_only() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("ok")
    await PagedChat(mem, model, recall_mode="tool").send("q", force_recall=True)
    assert model.requests[0].tool_choice == {"type": "function", "function": {"name": "recall"}}
    assert model.requests[1].tool_choice == "auto"


async def test_enum_pages_lists_evicted_ids() -> None:
    mem = new_memory()
    model = ScriptedModel().reply("ok")
    await PagedChat(mem, model, enum_pages=True, recall_mode="tool").send("q")
    page = model.requests[0].tools[0]["function"]["parameters"]["properties"]["page"]
    assert page["enum"] == ["p1", "p2", "p3", "p4"]
    assert "enum" not in mem.context().tools[0]["function"]["parameters"]["properties"]["page"]


async def test_recall_by_query_passes_query() -> None:
    mem = new_memory(recall_by_query=True)
    model = ScriptedModel().tool_call("recall", {"query": "dentist appointment"}).reply("Tue")
    report = await PagedChat(mem, model, recall_mode="tool").send("when is it?")
    (rec,) = report.recalls
    assert (rec.page, rec.status, rec.query) == ("p3", "paged_in", "dentist appointment")
    assert "Zurich" in model.requests[1].messages[-1]["content"]


async def test_query_refused_without_recall_by_query() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"query": "dentist"}).reply("ok")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert report.recalls[0].status == "error"


def test_usage_and_cost_summed() -> None:
    mem = new_memory()
    model = ScriptedModel()
    call = (ToolCall("c1", "recall", '{"page": "p1"}'),)
    model.then(lambda _r: ChatResponse("", call, "tool_calls", Usage(100, 5), 0.01))
    model.then(lambda _r: ChatResponse("ok", (), "stop", Usage(300, 7), 0.02))
    report = PagedChat(mem, model, recall_mode="tool").send_sync("q")
    assert report.prompt_tokens == (100, 300) and report.total_prompt_tokens == 400
    assert report.completion_tokens == 12 and report.cost_usd == pytest.approx(0.03)


def test_bad_input() -> None:
    mem = new_memory()
    with pytest.raises(ValueError, match="max_recalls_per_turn"):
        PagedChat(mem, ScriptedModel(), max_recalls_per_turn=-1, recall_mode="tool")
    chat = PagedChat(mem, ScriptedModel(), recall_mode="tool")
    with pytest.raises(ValueError, match="must not be empty"):
        chat.send_sync("   ")
    with pytest.raises(TypeError, match="must be a str"):
        chat.send_sync(3)  # type: ignore[arg-type]


async def test_send_sync_inside_loop_fails_clearly() -> None:
    chat = PagedChat(new_memory(), ScriptedModel().reply("x"), recall_mode="tool")
    with pytest.raises(RuntimeError, match="running event loop"):
        chat.send_sync("q")
