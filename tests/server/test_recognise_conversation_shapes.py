"""What each shape of ``messages`` does, retries and LangChain tool round trips (issue 9, #2-#4).

All through the official ``openai`` SDK (and ``langchain-openai``), as real clients send them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from proxy_helpers import Proxy, stats

from copage.llm.fake_server import Reply, echo

DATA = Path(__file__).parent / "data"


def _send(c: openai.OpenAI, msgs: list[dict[str, Any]], cid: str | None = None,
          **headers: str) -> tuple[str, str, dict[str, Any]]:
    """(answer text, conversation id, stats) of one SDK call."""
    extra = {"X-Copage-Conversation": cid} if cid else {}
    raw = c.chat.completions.with_raw_response.create(
        model="fake-model", messages=msgs, extra_headers={**extra, **headers})  # type: ignore[arg-type]
    return (raw.parse().choices[0].message.content or "", raw.headers["x-copage-conversation"],
            stats(raw.headers))


def _send_maybe_streamed(c: openai.OpenAI, msgs: list[dict[str, Any]], stream: bool
                         ) -> tuple[str, str]:
    """(answer text, conversation id) of one SDK call, streamed or not."""
    if not stream:
        text, cid, _ = _send(c, msgs)
        return text, cid
    raw = c.chat.completions.with_raw_response.create(
        model="fake-model", messages=msgs, stream=True)  # type: ignore[arg-type]
    text = "".join(ch.choices[0].delta.content or "" for ch in raw.parse() if ch.choices)
    return text, raw.headers["x-copage-conversation"]


def _roles_texts(proxy: Proxy, cid: str) -> list[tuple[str, str]]:
    conv = proxy.state.store.load(cid, tenant="alice")
    return [(t.role, t.text) for t in conv.turns]


def _u(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _a(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def _count(proxy: Proxy, text: str) -> int:
    """Upstream calls whose last message was ``text``."""
    return sum(1 for b in proxy.upstream.received if b["messages"][-1].get("content") == text)


@pytest.fixture
def numbered(proxy: Proxy) -> Proxy:
    """Answers carry a call counter, so a replay and a new answer can be told apart."""
    n = {"i": 0}

    def respond(body: dict[str, Any]) -> Reply:
        n["i"] += 1
        return Reply(text=f"{echo(body).text} #{n['i']}")

    proxy.upstream.responder = respond
    return proxy


# ------------------------------------------------------------- header mode
def test_header_shapes_never_duplicate(numbered: Proxy) -> None:
    proxy = numbered
    c = proxy.client()
    a1, _, _ = _send(c, [_u("u1")], "h")
    a2, _, _ = _send(c, [_u("u1"), _a(a1), _u("u2")], "h")  # exact continuation
    a3, _, _ = _send(c, [_u("u3")], "h")  # only the new message
    a4, _, _ = _send(c, [_u("u3"), _a(a3), _u("u4")], "h")  # overlap: a suffix, then new
    assert _roles_texts(proxy, "h") == [
        ("user", "u1"), ("assistant", a1), ("user", "u2"), ("assistant", a2),
        ("user", "u3"), ("assistant", a3), ("user", "u4"), ("assistant", a4)]
    # an unrelated history under the same id: 409, nothing stored
    with pytest.raises(openai.ConflictError) as err:
        _send(c, [_u("x1"), _a("y1"), _u("x2")], "h")
    assert err.value.code == "conversation_mismatch"
    assert len(_roles_texts(proxy, "h")) == 8


def test_header_regenerate_branches(numbered: Proxy) -> None:
    proxy = numbered
    c = proxy.client()
    a1, _, _ = _send(c, [_u("u1")], "r")
    hist = [_u("u1"), _a(a1), _u("u2")]
    a2, _, _ = _send(c, hist, "r")
    # regenerate: the same request again, a first attempt (the SDK says so)
    b2, branch, st = _send(c, hist, "r")
    assert b2 != a2 and branch != "r" and st["upstream_calls"] == 1
    assert _roles_texts(proxy, "r") == [("user", "u1"), ("assistant", a1), ("user", "u2"),
                                        ("assistant", a2)]
    assert _roles_texts(proxy, branch) == [("user", "u1"), ("assistant", a1), ("user", "u2"),
                                           ("assistant", b2)]
    # the branch continues under its own id
    b3, same, _ = _send(c, [*hist, _a(b2), _u("u3")], branch)
    assert same == branch and _roles_texts(proxy, branch)[-2:] == [("user", "u3"),
                                                                    ("assistant", b3)]
    # a client resending only its new message twice means it twice
    c1, _, _ = _send(c, [_u("same again")], "s")
    c2, _, _ = _send(c, [_u("same again")], "s")
    assert c1 != c2 and [r for r, _ in _roles_texts(proxy, "s")] == ["user", "assistant"] * 2


def test_a_header_regenerate_keeps_the_requests_system_prompt(numbered: Proxy) -> None:
    """A regenerate whose system prompt changed (the time in it, another persona) starts
    a branch under the system prompt the request carries, not the stored one (the branch
    was sent upstream, and stored, with the previous request's)."""
    c = numbered.client()
    a1, _, _ = _send(c, [_sys("The time is 10:00."), _u("u1")], "g")
    hist = [_u("u1"), _a(a1), _u("u2")]
    _send(c, [_sys("The time is 10:01."), *hist], "g")
    _, branch, _ = _send(c, [_sys("The time is 10:02."), *hist], "g")
    assert branch != "g"
    assert numbered.upstream.received[-1]["messages"][0]["content"].startswith(
        "The time is 10:02.")
    assert _system(numbered, branch) == "The time is 10:02."
    assert _system(numbered, "g") == "The time is 10:01."


# -------------------------------------------------------- transparent mode
def test_transparent_regenerate_and_unrelated(numbered: Proxy) -> None:
    proxy = numbered
    c = proxy.client()
    a1, cid, _ = _send(c, [_u("u1")])
    hist = [_u("u1"), _a(a1), _u("u2")]
    a2, cid2, _ = _send(c, hist)
    assert cid2 == cid
    b2, branch, _ = _send(c, hist)  # regenerate: a new branch, the original untouched
    assert branch != cid and b2 != a2
    assert len(_roles_texts(proxy, cid)) == 4 and len(_roles_texts(proxy, branch)) == 4
    _, on_branch, _ = _send(c, [*hist, _a(b2), _u("u3")])
    _, on_first, _ = _send(c, [*hist, _a(a2), _u("u3")])
    assert on_branch == branch and on_first == cid
    _, other, _ = _send(c, [_u("zzz"), _a("nothing stored"), _u("u2")])
    assert other not in (cid, branch)


# ------------------------------------------------------------------ retries
@pytest.mark.parametrize("mode", ["header", "transparent"])
def test_sdk_retry_after_client_timeout_is_answered_from_the_store(
    make_proxy: Callable[..., Proxy], mode: str,
) -> None:
    proxy = make_proxy()
    calls = {"n": 0}

    def respond(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        slow = body["messages"][-1].get("content") == "slow question"
        return Reply(text=f"answer {calls['n']}", delay=2.0 if slow else 0.0)

    proxy.upstream.responder = respond
    cid = "t" if mode == "header" else None
    fast = proxy.client(timeout=30)
    a1, conv, _ = _send(fast, [_u("u1")], cid)
    hist = [_u("u1"), _a(a1), _u("slow question")]
    # the SDK times out after 1 s, retries (X-Stainless-Retry-Count: 1) while the proxy
    # still waits for the upstream; the retry waits for the turn and gets its answer
    retrying = openai.OpenAI(base_url=proxy.url + "/v1", api_key=fast.api_key, timeout=1.0,
                             max_retries=4)
    answer, conv2, st = _send(retrying, hist, cid)
    assert conv2 == conv and st.get("replayed") is True
    assert _count(proxy, "slow question") == 1, "one upstream call for the question"
    assert _roles_texts(proxy, conv) == [("user", "u1"), ("assistant", a1),
                                         ("user", "slow question"), ("assistant", answer)]
    # the proxy never forwards the client's headers
    assert all("x-stainless-retry-count" not in h for h in proxy.upstream.headers)


def test_idempotency_key(numbered: Proxy) -> None:
    proxy = numbered
    c = proxy.client()
    a1, _, _ = _send(c, [_u("u1")], "k", **{"Idempotency-Key": "key-1"})
    again, _, st = _send(c, [_u("u1")], "k", **{"Idempotency-Key": "key-1"})
    assert again == a1 and st["replayed"] is True and _count(proxy, "u1") == 1
    # a new key for the same message: a new turn (new-only shape)
    b1, _, _ = _send(c, [_u("u1")], "k", **{"Idempotency-Key": "key-2"})
    assert b1 != a1 and len(_roles_texts(proxy, "k")) == 4
    # the same key on another request is refused
    with pytest.raises(openai.UnprocessableEntityError) as err:
        _send(c, [_u("something else")], "k", **{"Idempotency-Key": "key-2"})
    assert err.value.code == "idempotency_key_reused"
    assert len(_roles_texts(proxy, "k")) == 4
    # transparent mode: the key picks retry over regenerate
    t1, tid, _ = _send(c, [_u("v1")])
    hist = [_u("v1"), _a(t1), _u("v2")]
    t2, _, _ = _send(c, hist, **{"Idempotency-Key": "tk"})
    t2b, tid2, st = _send(c, hist, **{"Idempotency-Key": "tk"})
    assert (t2b, tid2, st["replayed"]) == (t2, tid, True)


# ------------------------------------------------ LangChain tool round trip
def test_langchain_tool_round_trip_stays_in_one_conversation(proxy: Proxy) -> None:
    """LangChain sends tool-call arguments back re-serialised (``{"city": "Paris"}``
    for the model's ``{"city":"Paris"}``): still the same conversation."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    llm = ChatOpenAI(model="fake-model", base_url=proxy.url + "/v1",
                     api_key=proxy.client().api_key, max_retries=0,
                     include_response_headers=True).bind_tools([get_weather])
    msgs: list[Any] = [HumanMessage("What is the WEATHER in Paris?")]
    first = llm.invoke(msgs)
    assert first.tool_calls and first.tool_calls[0]["args"] == {"city": "Paris"}
    sent = proxy.upstream.received[-1]
    msgs += [first, ToolMessage(get_weather.invoke(first.tool_calls[0]["args"]),
                                tool_call_id=first.tool_calls[0]["id"])]
    second = llm.invoke(msgs)
    assert "sunny in Paris" in str(second.content)
    msgs += [second, HumanMessage("thanks")]
    third = llm.invoke(msgs)
    ids = {m.response_metadata["headers"]["x-copage-conversation"]
           for m in (first, second, third)}
    assert len(ids) == 1, ids
    assert [r for r, _ in _roles_texts(proxy, ids.pop())] == [
        "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert sent["messages"][-1]["content"] == "What is the WEATHER in Paris?"


# ------------------------------------------------- cost per turn: new messages only
@pytest.mark.parametrize("mode", ["header", "transparent"])
def test_a_resent_history_is_neither_parsed_nor_validated_again(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch, mode: str,
) -> None:
    """Per turn, the messages validated and parsed do not grow with the conversation."""
    from copage.server import body, recognise, request

    validated: list[int] = []
    full_parses: list[int] = []
    real_message, real_all = request._message, body.Messages.all

    def counting(m: Any, i: int) -> Any:
        validated.append(i)
        return real_message(m, i)

    def counting_all(self: body.Messages) -> list[Any]:
        if self._all is None:
            full_parses.append(len(self))
        return real_all(self)

    monkeypatch.setattr(request, "_message", counting)
    monkeypatch.setattr(recognise, "_message", counting)
    monkeypatch.setattr(body.Messages, "all", counting_all)
    c = proxy.client()
    cid = "cost" if mode == "header" else None
    hist: list[dict[str, Any]] = []
    per_turn = []
    ids = set()
    for t in range(40):
        hist.append(_u(f"question {t}"))
        validated.clear()
        full_parses.clear()
        answer, conv, _ = _send(c, hist, cid)
        per_turn.append((len(validated), len(full_parses)))
        ids.add(conv)
        hist.append({"role": "assistant", "content": answer, "refusal": None})
    assert len(ids) == 1
    assert all(v <= 3 and f == 0 for v, f in per_turn[2:]), per_turn
    assert len(_roles_texts(proxy, ids.pop())) == 80


def test_retry_window_is_measured_from_the_commit() -> None:
    """A request without a key is a retry up to ``window`` seconds after the original's
    commit, and also if it arrived before that commit (it raced the original)."""
    from copage.server.recognise import Ask, is_retry, request_info
    from copage.server.request import parse_call

    call = parse_call({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    rq = request_info(call, Ask(now=90.0), call.messages, "prev", "d", "stop", "m", (1, 2),
                      at=100.0)
    assert rq["at"] == 100.0
    assert is_retry(rq, call, Ask(now=95.0), 600.0), "arrived before the commit"
    assert is_retry(rq, call, Ask(now=700.0), 600.0)
    assert not is_retry(rq, call, Ask(now=700.5), 600.0)
    assert not is_retry(rq, call, Ask(now=95.0, retry_count=0), 600.0)


# ------------------------------------------------------ a changing system prompt
def _sys(text: str) -> dict[str, str]:
    return {"role": "system", "content": text}


def _system(proxy: Proxy, cid: str) -> str | None:
    """The stored conversation's pinned system prompt (a read-only copy)."""
    from copage.memory import PagedMemory

    return PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                       create=False).system


@pytest.mark.parametrize("stream", [False, True])
def test_a_system_prompt_that_changes_each_request_continues_the_conversation(
        numbered: Proxy, stream: bool) -> None:
    """Apps put the time, the date or retrieved context in the system prompt, so it
    differs on every request. The system prompt is the conversation's setting, not part
    of its transcript: such a client continues its conversation (one conversation, each
    message stored once) and the latest system prompt is the one sent upstream. (Each
    request started a new conversation holding the whole history again.)"""
    c = numbered.client()
    history: list[dict[str, Any]] = []
    cids = []
    for i in range(4):
        history.append(_u(f"question {i}"))
        msgs = [_sys(f"You are helpful. The time is 10:0{i}."), *history]
        text, cid = _send_maybe_streamed(c, msgs, stream)
        cids.append(cid)
        history.append(_a(text))
        sent = numbered.upstream.received[-1]["messages"]
        assert sent[0]["role"] == "system"
        assert sent[0]["content"].startswith(f"You are helpful. The time is 10:0{i}.")
        assert sent[-1] == _u(f"question {i}")
    assert len(set(cids)) == 1, cids
    assert _roles_texts(numbered, cids[0]) == [(m["role"], m["content"]) for m in history]
    assert _system(numbered, cids[0]) == "You are helpful. The time is 10:03."


def test_a_conversation_stored_by_the_previous_version_continues(
        make_proxy: Callable[..., Proxy], tmp_path: Path) -> None:
    """A SQLite store written by copage 3d7bf42 (``data/store_3d7bf42.sql``: a transparent
    conversation with a system prompt, its config naming ``contrast``), whose heads hash
    the system message as the transcript chain did then: a client resending that history
    continues the stored conversation (it started a new one holding the history again)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "proxy.db") as db:  # make_proxy's "sqlite" store
        db.executescript((DATA / "store_3d7bf42.sql").read_text())
    proxy = make_proxy(store="sqlite")
    cid = "c_qJ82PMbhOCBwDmEy-F4SXA"
    history = [_sys("You are terse."), _u("hello one"), _a("echo: hello one"),
               _u("hello two"), _a("echo: hello two")]
    for question in ("hello three", "hello four"):
        history.append(_u(question))
        text, got, _ = _send(proxy.client(), history)
        assert got == cid
        history.append(_a(text))
    proxy.server.stop()
    proxy = make_proxy(store="sqlite")  # a fresh worker: found by the index again
    history.append(_u("hello five"))
    text, got, _ = _send(proxy.client(), history)
    assert got == cid
    history.append(_a(text))
    assert _roles_texts(proxy, cid) == [(m["role"], m["content"]) for m in history[1:]]
    assert _system(proxy, cid) == "You are terse."


def test_a_changed_system_prompt_is_no_retry(numbered: Proxy) -> None:
    """The same question under another system prompt is another request: never answered
    from the store as a retry of the first (raw HTTP: no SDK retry counter)."""
    import httpx
    from proxy_helpers import KEY_A

    def ask(system: str) -> tuple[str, str]:
        r = httpx.post(f"{numbered.url}/v1/chat/completions",
                       headers={"authorization": f"Bearer {KEY_A}"},
                       json={"model": "fake-model",
                             "messages": [_sys(system), _u("what is new?")]})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["message"]["content"], r.headers["x-copage-conversation"]

    first, cid_a = ask("You are a pirate.")
    again, cid_again = ask("You are a pirate.")  # a retry: the stored answer
    assert (again, cid_again) == (first, cid_a)
    other, cid_b = ask("You are a poet.")
    assert other != first and cid_b != cid_a
    assert _roles_texts(numbered, cid_a) == [("user", "what is new?"), ("assistant", first)]
    assert _system(numbered, cid_a) == "You are a pirate."
    assert _system(numbered, cid_b) == "You are a poet."


@pytest.mark.parametrize("stream", [False, True])
def test_every_system_message_reaches_the_upstream(numbered: Proxy, stream: bool) -> None:
    """Clients send several system (or developer) messages: the app's instructions, then
    the date or retrieved context, or a reminder later in the conversation. Every one
    reaches the model, in order, in the one system message the proxy sends, and the
    conversation continues (only the last one was kept: the instructions were lost)."""
    c = numbered.client()
    history: list[dict[str, Any]] = [_sys("You are Ada, a pirate."), _sys("Today is Monday."),
                                     _u("hi")]
    expected = ["You are Ada, a pirate.", "Today is Monday."]
    cids = []
    for i in range(3):
        text, cid = _send_maybe_streamed(c, history, stream)
        cids.append(cid)
        system = numbered.upstream.received[-1]["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith("\n\n".join(expected))
        history.append(_a(text))
        if i == 0:  # a developer message later in the conversation
            history += [{"role": "developer", "content": "Be brief."}, _u("and then?")]
            expected.append("Be brief.")
        else:
            history.append(_u(f"more {i}"))
    assert len(set(cids)) == 1, cids
    assert _system(numbered, cids[0]) == "\n\n".join(expected)
    assert [t for t in _roles_texts(numbered, cids[0])] == [
        (m["role"], m["content"]) for m in history[:-1] if m["role"] not in ("system",
                                                                              "developer")]


def test_a_system_message_after_the_question_is_accepted(numbered: Proxy) -> None:
    """OpenAI accepts a system (or developer) message after the last user message (a
    reminder some frameworks append); the proxy answered 400 "the last message must be
    a user or tool message". It is a system message like the others: joined into the
    system prompt, and the turn is answered; the conversation continues."""
    c = numbered.client()
    history: list[dict[str, Any]] = [_sys("You are Ada."), _u("hi"),
                                     {"role": "developer", "content": "Answer in French."}]
    text, cid, _ = _send(c, history)
    assert numbered.upstream.received[-1]["messages"][0]["content"].startswith(
        "You are Ada.\n\nAnswer in French.")
    assert numbered.upstream.received[-1]["messages"][-1] == _u("hi")
    history += [_a(text), _u("and then?")]
    text2, cid2, _ = _send(c, history)
    assert cid2 == cid
    assert _roles_texts(numbered, cid) == [("user", "hi"), ("assistant", text),
                                           ("user", "and then?"), ("assistant", text2)]
    with pytest.raises(openai.BadRequestError, match="user or tool message"):
        _send(c, [_sys("only a system message")])
