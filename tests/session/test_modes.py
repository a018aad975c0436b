"""recall_mode (tool, choose, speculative, combinations, auto) and the prompt styles."""

from __future__ import annotations

import json
import re

import pytest
from session_helpers import TOPICS, new_memory

from copage.eval.methods.probe_driver import ask_probe
from copage.eval.runner.probe_metrics import right_page_rate, trigger_rate
from copage.llm import TextProtocolModel, get_model
from copage.llm.fake_server import FakeReply, FakeServer
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session import DEFAULT_RECALL_MODE, PagedChat, parse_mode


def completion(text: str) -> dict[str, object]:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}


# ------------------------------------------------------------- parsing modes
def test_mode_names_and_combinations() -> None:
    assert parse_mode("tool").name == "tool"
    assert parse_mode("tool+choose").name == "choose+tool"
    assert parse_mode("speculative+choose+tool").name == "speculative+choose+tool"
    assert parse_mode("tool", speculative=True).name == "speculative+tool"
    assert parse_mode("none").name == "none"
    with pytest.raises(ValueError, match="combine speculative, choose, tool"):
        parse_mode("guess")


def test_auto_picks_by_what_the_model_supports() -> None:
    assert PagedChat(new_memory(), ScriptedModel(), recall_mode="auto").recall_mode == (
        "choose+tool")
    text_model = TextProtocolModel(ScriptedModel())
    assert PagedChat(new_memory(), text_model, recall_mode="auto").recall_mode == "choose"


def test_speculative_option_is_the_speculative_mode() -> None:
    a = PagedChat(new_memory(), ScriptedModel(), recall_mode="tool", speculative=True)
    b = PagedChat(new_memory(), ScriptedModel(), recall_mode="speculative+tool")
    assert a.recall_mode == b.recall_mode == "speculative+tool"
    assert a.speculator is not None and b.speculator is not None
    assert PagedChat(new_memory(), ScriptedModel(), speculative=True).recall_mode == "speculative"


def test_the_default_mode_is_the_speculative_fill() -> None:
    """Chosen by measurement (docs/loop.md, "Choosing the default recall mode")."""
    chat = PagedChat(new_memory(), ScriptedModel())
    assert DEFAULT_RECALL_MODE == chat.recall_mode == "speculative"
    assert chat.speculator is not None and not chat.mode.tool


# ------------------------------------------------------------- choose
async def test_choose_pages_in_the_chosen_page_then_answers_without_tools() -> None:
    mem = new_memory()
    model = ScriptedModel().reply('{"page": "p3"}').reply("Tuesday at 9.")
    chat = PagedChat(mem, model, recall_mode="choose")
    rec = await ask_probe(chat, "When is my dentist appointment?", ["p3"], keep_pages=False)
    choose, answer = model.requests
    assert choose.tools == () and "p1" in choose.messages[-1]["content"]
    assert "When is my dentist appointment?" in choose.messages[-1]["content"]
    assert answer.tools == ()  # choose alone offers no tool
    assert any(m.get("content") == TOPICS[2] for m in answer.messages)  # p3 as messages
    assert "recall" not in answer.messages[0]["content"]  # nothing about a tool to imitate
    assert rec.answer == "Tuesday at 9."
    assert [(r.tool, r.page, r.status) for r in rec.recalls] == [("choose", "p3", "paged_in")]
    assert rec.triggered and rec.right_page
    assert trigger_rate([rec]).hits == 1 and right_page_rate([rec]).hits == 1
    assert rec.report is not None and rec.report.model_calls == 2
    assert rec.report.recall_mode == "choose"
    assert mem.evicted == ["p1", "p2", "p3", "p4"]  # keep_pages=False rolled back


@pytest.mark.parametrize(("reply", "expect"), [
    ('{"page": "none"}', []), ("none of them", []),
    ("It is p2, the laptop page.", [("p2", "paged_in")]),
    ("banana", [(None, "error")]),
])
async def test_choose_reply_parsing(reply: str, expect: list[tuple[str | None, str]]) -> None:
    model = ScriptedModel().reply(reply).reply("ok")
    rec = await ask_probe(PagedChat(new_memory(), model, recall_mode="choose"), "q")
    assert [(r.page, r.status) for r in rec.recalls] == expect
    assert rec.triggered == bool(expect)


async def test_choose_plus_tool_offers_the_tool_afterwards() -> None:
    model = ScriptedModel().reply('{"page": "p1"}').tool_call("recall", {"page": "p2"})
    model.reply("peanuts and 1200 dollars")
    report = await PagedChat(new_memory(), model, recall_mode="choose+tool").send("q")
    assert [r.page for r in report.recalls] == ["p1", "p2"]
    assert model.requests[1].tools and model.requests[1].tool_choice == "auto"


async def test_choose_sends_a_json_schema_to_openai_compatible_servers() -> None:
    with FakeServer(FakeReply(completion('{"page": "p4"}')), FakeReply(completion("Rust."))) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        report = await PagedChat(new_memory(), model, recall_mode="choose").send(
            "Which language for the side project?")
    fmt = srv.received[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["page"]["enum"] == [
        "p1", "p2", "p3", "p4", "none"]
    assert "response_format" not in srv.received[1] and "tools" not in srv.received[1]
    assert report.recalls[0].page == "p4" and report.answer == "Rust."


async def test_choose_falls_back_to_strict_parsing_when_the_schema_is_rejected() -> None:
    bad = {"error": {"message": "response_format is not supported"}}
    with FakeServer(FakeReply(bad, status=400), FakeReply(completion('{"page": "p4"}')),
                    FakeReply(completion("Rust."))) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        report = await PagedChat(new_memory(), model, recall_mode="choose").send("language?")
    assert "response_format" not in srv.received[1]
    assert report.recalls[0].page == "p4"


async def test_choose_with_nothing_evicted_makes_no_choose_call() -> None:
    mem = PagedMemory(boundary="fixed_5", resident_pages=5)
    mem.add("user", "hello")
    model = ScriptedModel().reply("hi")
    report = await PagedChat(mem, model, recall_mode="choose").send("q")
    assert report.model_calls == 1 and report.recalls == ()


# ------------------------------------------------------------- prompt styles
def dated_memory() -> PagedMemory:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1, conversation_id="d")
    dates = ["1:56 pm on 8 May, 2023", "1:56 pm on 8 May, 2023", "10:37 am on 25 May, 2023",
             "10:37 am on 25 May, 2023", "2:00 pm on 9 June, 2023", "2:00 pm on 9 June, 2023"]
    texts = ["I adopted a cat named Miso.", "Lovely name!", "I started pottery classes.",
             "Fun!", "We moved to Porto.", "Big change!"]
    for i, (d, t) in enumerate(zip(dates, texts, strict=True)):
        mem.add("user" if i % 2 == 0 else "assistant", t, timestamp=d, session=i // 2 + 1)
    return mem


async def test_paper_prompt_is_the_pagers_context_unchanged() -> None:
    mem = dated_memory()
    model = ScriptedModel().reply("ok")
    await ask_probe(PagedChat(mem, model, recall_mode="tool"), "When did I adopt a cat?")
    ctx = mem.context("When did I adopt a cat?")
    assert list(model.requests[0].messages) == ctx.messages
    assert list(model.requests[0].tools) == ctx.tools


async def test_compact_prompt_dates_bookmarks_reminds_and_shows_no_example_id() -> None:
    mem = dated_memory()
    model = ScriptedModel().reply("ok")
    await ask_probe(PagedChat(mem, model, prompt="compact", recall_mode="tool"),
        "When did I adopt a cat?")
    req = model.requests[0]
    system = req.messages[0]["content"]
    assert re.search(r"- p1 \(8 May, 2023\): .*cat", system), system
    assert "- p2 (25 May, 2023): " in system
    question = req.messages[-1]["content"]
    assert question.startswith("When did I adopt a cat?")
    assert question.endswith("call recall with the id of the evicted page most likely to hold it.)")
    listed = set(re.findall(r"^- (p\d+)", system, re.MULTILINE))
    outside = re.sub(r"^- p\d+.*$", "", system, flags=re.MULTILINE)
    assert listed == {"p1", "p2"} and not re.search(r"\bp\d+\b", outside)
    schema = json.dumps(req.tools)
    assert not re.search(r"\bp\d+\b", schema)
    assert len(req.tools) == 1 and req.tool_choice == "auto"


def test_bad_prompt_style() -> None:
    with pytest.raises(ValueError, match="paper, compact"):
        PagedChat(new_memory(), ScriptedModel(), prompt="tiny")


async def test_ask_probe_overrides_mode_and_prompt() -> None:
    model = ScriptedModel().reply('{"page": "p1"}').reply("peanuts").reply("ok")
    chat = PagedChat(new_memory(), model, recall_mode="tool")  # tool, paper
    rec = await ask_probe(chat, "allergy?", ["p1"], recall_mode="choose", keep_pages=False)
    assert rec.report is not None and rec.report.recall_mode == "choose"
    assert rec.recalls[0].tool == "choose" and rec.right_page
    await ask_probe(chat, "allergy?", prompt="compact")
    assert model.requests[2].messages[-1]["content"].endswith("most likely to hold it.)")
    assert chat.recall_mode == "tool"
    with pytest.raises(ValueError, match="paper, compact"):
        await ask_probe(chat, "q", prompt="tiny")
