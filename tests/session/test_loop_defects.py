"""Defects of issue 8 part 2 in the loop: call-shaped text, sockets, cache, metrics, tool_choice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from session_helpers import check_pairs, new_memory

from copage.core.types import ToolCall
from copage.eval.methods.probe_driver import ask_probe
from copage.eval.runner.probe_metrics import right_page_rate, trigger_rate
from copage.llm import CachedModel, ResponseCache, TextProtocolModel, get_model
from copage.llm.fake_server import FakeReply, FakeServer
from copage.llm.model_types import ChatResponse, Usage
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat, RecallLoopError

COMPLETION = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}


def no_call_text(mem: object) -> None:
    for t in mem.turns:  # type: ignore[attr-defined]
        assert "RECALL" not in t.text and "tool_call" not in t.text, t.text


# ------------------------------------------------------------- call-shaped text
@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_recall_text_after_the_cap_is_never_the_answer(protocol: str) -> None:
    mem = new_memory()
    script = ScriptedModel().reply("RECALL p1").reply("RECALL p2").reply("You avoid peanuts.")
    model = TextProtocolModel(script) if protocol == "text" else script
    report = await PagedChat(mem, model, max_recalls_per_turn=1, recall_mode="tool").send("What can't I eat?")
    assert report.answer == "You avoid peanuts."
    assert [(r.page, r.status) for r in report.recalls] == [("p1", "paged_in"), (None, "refused")]
    assert mem.turns[-1].text == "You avoid peanuts."
    no_call_text(mem)
    assert "p2" in mem.evicted
    last = script.requests[-1]
    assert last.tools == () or protocol == "text"  # the last try offered no tools


async def test_recall_text_after_the_cap_twice_raises_and_stores_nothing() -> None:
    mem = new_memory()
    n = len(mem.turns)
    model = ScriptedModel().reply("RECALL p1").reply("RECALL p2").reply("RECALL p3")
    with pytest.raises(RecallLoopError):
        await PagedChat(mem, model, max_recalls_per_turn=1, recall_mode="tool").send("q")
    assert len(mem.turns) == n


async def test_text_around_a_call_after_the_cap_is_kept_without_the_call() -> None:
    mem = new_memory()
    model = ScriptedModel().reply("RECALL p1").reply("No satay for you.\nRECALL p2")
    report = await PagedChat(mem, model, max_recalls_per_turn=1, recall_mode="tool").send("q")
    assert report.answer == "No satay for you."
    no_call_text(mem)


@pytest.mark.parametrize(
    "reply",
    [
        "RECALL page 3",
        "RECALL [p3]",
        'TOOL recall {"page": p3}',
        '<tool_call>\n{"name": "recall", "arguments": {"page": "p3"}}\n</tool_call>',
        "RECALL p3",
        # Qwen2.5-Coder with tool_choice "required": its template's doubled braces, copied
        '{{"name": "recall", "arguments": {"page": "p3"}}}}',
        '{{"name": "recall", "arguments": {"page": "p3"}}}',
    ],
)
@pytest.mark.parametrize("protocol", ["text", "native"])
async def test_call_forms_in_text_are_calls_in_both_modes(reply: str, protocol: str) -> None:
    mem = new_memory()
    script = ScriptedModel().reply(reply).reply("Tuesday at 9.")
    model = TextProtocolModel(script) if protocol == "text" else script
    report = await PagedChat(mem, model, recall_mode="tool").send("When is the dentist?")
    assert [(r.page, r.status) for r in report.recalls] == [("p3", "paged_in")]
    assert report.answer == "Tuesday at 9." and mem.turns[-1].text == "Tuesday at 9."
    assert "Zurich" in str(script.requests[1].messages)  # the page reached the model
    if protocol == "native":
        check_pairs(script.requests[1].messages)


async def test_doubled_brace_call_is_never_streamed() -> None:
    mem = new_memory()
    script = ScriptedModel().reply('{{"name": "recall", "arguments": {"page": "p3"}}}}')
    script.reply("Tuesday at 9.")
    chat = PagedChat(mem, script, recall_mode="tool")
    async with chat.stream("When is the dentist?") as turn:
        shown = "".join([t async for t in turn.text()])
    assert shown.strip() == "Tuesday at 9."
    assert turn.report is not None and [r.page for r in turn.report.recalls] == ["p3"]


# ------------------------------------------------------------- tool_choice and forcing
async def test_tool_choice_auto_is_sent_explicitly() -> None:
    with FakeServer(FakeReply(COMPLETION)) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        await PagedChat(new_memory(), model, recall_mode="tool").send("hello")
    body = srv.received[0]
    assert body["tools"][0]["function"]["name"] == "recall"
    assert body["tool_choice"] == "auto"


async def test_force_recall_in_text_mode() -> None:
    script = ScriptedModel().reply("RECALL p1").reply("ok")
    report = await PagedChat(new_memory(), TextProtocolModel(script), recall_mode="tool").send(
        "q", force_recall=True)
    assert report.recalls[0].page == "p1"
    first = script.requests[0].messages
    assert "must be a call of recall" in first[0]["content"]


# ------------------------------------------------------------- measures
async def test_recall_of_a_resident_page_is_not_the_right_page() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p6"}).reply("ok")
    rec = await ask_probe(PagedChat(mem, model, recall_mode="tool"), "q", ["p1", "p6"], keep_pages=False)
    assert rec.recalls[0].status == "resident"
    assert rec.triggered and not rec.right_page
    assert right_page_rate([rec]).hits == 0


async def test_unknown_tool_call_is_not_a_trigger() -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("search", {"q": "peanuts"}).reply("ok")
    rec = await ask_probe(PagedChat(mem, model, recall_mode="tool"), "q", ["p1"], keep_pages=False)
    assert rec.recalls[0].status == "unknown_tool"
    assert not rec.triggered and trigger_rate([rec]).hits == 0


# ------------------------------------------------------------- cache accounting
async def test_cached_replies_are_not_paid(tmp_path: Path) -> None:
    mem = new_memory()
    reply = ChatResponse("peanuts", (), "stop", Usage(100, 5), 0.01)
    script = ScriptedModel().then(lambda _r: reply)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    chat = PagedChat(mem, CachedModel(script, cache), recall_mode="tool")
    first = await ask_probe(chat, "allergy?", keep_pages=False)
    second = await ask_probe(chat, "allergy?", keep_pages=False)  # same request: a cache hit
    cache.close()
    assert first.report is not None and second.report is not None
    assert first.report.cost_usd == pytest.approx(0.01) and first.report.cached_calls == 0
    assert second.report.cached_calls == 1
    assert second.report.cost_usd is None and second.report.saved_usd == pytest.approx(0.01)
    assert second.report.paid_prompt_tokens == 0 and second.report.paid_completion_tokens == 0
    assert second.report.prompt_tokens == (100,)  # the prompt's size is still reported


# ------------------------------------------------------------- sockets
@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_300_sync_turns_leave_a_bounded_number_of_descriptors() -> None:
    with FakeServer(default=FakeReply(COMPLETION)) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        chat = PagedChat(new_memory(), model, recall_mode="tool")
        chat.send_sync("warm up")
        before = len(os.listdir("/proc/self/fd"))
        for i in range(300):
            chat.send_sync(f"turn {i}")
        after = len(os.listdir("/proc/self/fd"))
        getattr(chat, "close", lambda: None)()
    assert after - before <= 5, f"{after - before} descriptors leaked over 300 turns"


async def test_pairs_hold_when_text_calls_follow_native_ones() -> None:
    mem = new_memory()
    call = (ToolCall("c1", "recall", '{"page": "p1"}'),)
    model = ScriptedModel().then(lambda _r: ChatResponse("", call, "tool_calls"))
    model.reply("RECALL p2").reply("done")
    report = await PagedChat(mem, model, recall_mode="tool").send("q")
    assert [r.page for r in report.recalls] == ["p1", "p2"]
    check_pairs(model.requests[2].messages)


@pytest.mark.parametrize("reply", ["p3", " `p3` ", "[p3]", "**P3**."])
async def test_a_reply_that_is_only_a_page_id_is_a_recall(reply: str) -> None:
    mem = new_memory()
    model = ScriptedModel().reply(reply).reply("Tuesday at 9.")
    report = await PagedChat(mem, model, recall_mode="tool").send("When is the dentist?")
    assert [(r.page, r.status) for r in report.recalls] == [("p3", "paged_in")]
    assert report.answer == "Tuesday at 9."


async def test_an_answer_mentioning_a_page_id_is_not_a_recall() -> None:
    model = ScriptedModel().reply("p3 was about the dentist.")
    report = await PagedChat(new_memory(), model, recall_mode="tool").send("q")
    assert report.recalls == () and report.answer == "p3 was about the dentist."


async def test_calls_while_recall_is_not_offered_are_refused_then_an_error() -> None:
    mem = new_memory()
    n = len(mem.turns)
    model = ScriptedModel().reply('{"page": "none"}').reply("RECALL p2").reply("RECALL p3")
    with pytest.raises(RecallLoopError, match="not offered"):
        await PagedChat(mem, model, recall_mode="choose").send("q")
    assert len(mem.turns) == n
    model = ScriptedModel().reply('{"page": "none"}').reply("RECALL p2").reply("Rust only.")
    report = await PagedChat(mem, model, recall_mode="choose").send("q")
    assert report.answer == "Rust only." and [r.status for r in report.recalls] == ["refused"]
    assert "p2" in mem.evicted
    no_call_text(mem)
