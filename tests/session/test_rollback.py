"""A failed model call leaves the stored conversation exactly as it was before send()."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_helpers import check_pairs, new_memory, state_of

from copage.llm.errors import AuthError, ModelError, ModelTimeout, RateLimited, UpstreamError
from copage.llm.fake_server import FakeReply, FakeServer, completion
from copage.llm.model_types import ChatRequest, ChatResponse
from copage.llm.openai_model import OpenAIModel
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session import PagedChat


def _store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'chat.db'}"


def _reopen(url: str) -> PagedMemory:
    return PagedMemory(store=url, conversation_id="conv")


def serve() -> FakeServer:
    """A fake OpenAI server answering 500 once its script is empty."""
    return FakeServer(default=FakeReply({"error": {"message": "script empty"}}, status=500))


def _fail(_req: ChatRequest) -> ChatResponse:
    raise UpstreamError("scripted", "boom", status=500)


async def test_failure_after_recall_rolls_back_everything(tmp_path: Path) -> None:
    url = _store(tmp_path)
    mem = new_memory(url)
    before = state_of(_reopen(url))
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).then(_fail)
    with pytest.raises(UpstreamError, match="boom"):
        await PagedChat(mem, model, recall_mode="tool").send("what can't I eat?")
    assert "p1" in model.requests[1].messages[-1]["content"]  # the recall did happen
    assert state_of(_reopen(url)) == before
    assert state_of(mem) == before  # the live object was rolled back too
    # The conversation goes on normally after the failure.
    report = await PagedChat(mem, ScriptedModel().reply("fine"), recall_mode="tool").send("again")
    assert report.answer == "fine"
    assert [t.text for t in _reopen(url).turns[-2:]] == ["again", "fine"]


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (500, {"error": {"message": "internal"}}, UpstreamError),
        (429, {"error": {"message": "slow down"}}, RateLimited),
        (401, {"error": {"message": "Incorrect API key"}}, AuthError),
    ],
)
async def test_http_errors_roll_back(
    tmp_path: Path, status: int, body: dict[str, object], error: type[ModelError]
) -> None:
    url = _store(tmp_path)
    mem = new_memory(url)
    before = state_of(_reopen(url))
    with serve() as fake:
        fake.add(FakeReply(completion(calls=[("c1", "recall", '{"page": "p2"}')])))
        fake.add(FakeReply(body, status=status))
        model = OpenAIModel("fake", base_url=fake.url, max_retries=0)
        with pytest.raises(error):
            await PagedChat(mem, model, recall_mode="tool").send("budget?")
        assert len(fake.received) == 2
        check_pairs(fake.received[1]["messages"])
        assert fake.received[1]["messages"][-2]["content"] == ""  # local server convention
    assert state_of(_reopen(url)) == before
    assert state_of(mem) == before


async def test_timeout_rolls_back(tmp_path: Path) -> None:
    url = _store(tmp_path)
    mem = new_memory(url)
    before = state_of(_reopen(url))
    with serve() as fake:
        fake.add(FakeReply(completion("late"), delay=1.0))
        model = OpenAIModel("fake", base_url=fake.url, max_retries=0, timeout=0.2)
        with pytest.raises(ModelTimeout):
            await PagedChat(mem, model, recall_mode="tool").send("hello?")
    assert state_of(_reopen(url)) == before


async def test_round_trip_over_http(tmp_path: Path) -> None:
    url = _store(tmp_path)
    mem = new_memory(url)
    with serve() as fake:
        fake.add(FakeReply(completion(calls=[("c1", "recall", '{"page": "p2"}')])))
        fake.add(FakeReply(completion("1200 dollars")))
        model = OpenAIModel("fake", base_url=fake.url, max_retries=0)
        report = await PagedChat(mem, model, recall_mode="tool").send("budget?")
    assert report.answer == "1200 dollars" and report.recalled_pages == ("p2",)
    assert report.prompt_tokens == (10, 10)
    tool_msg = fake.received[1]["messages"][-1]
    assert tool_msg["tool_call_id"] == "c1" and "1200 dollars" in tool_msg["content"]
    again = _reopen(url)
    assert "p2" in again.resident and again.turns[-1].text == "1200 dollars"
