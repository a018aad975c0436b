"""copage's hook in LiteLLM's real proxy: ``litellm --config`` as a subprocess on a loopback
port, the official ``openai`` SDK as client, copage's fake OpenAI server as the upstream.

One proxy serves the module (it takes ~15 s to start); each test has its own
conversation, read back from the SQLite store the hook writes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# LiteLLM fetches its price map at import unless told to use the one it ships (offline)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")
openai = pytest.importorskip("openai")

from copage.adapters.litellm.proxy_process import MASTER_KEY, MODEL, LiteLLMProxy
from copage.llm.fake_server import FakeServer, Reply
from copage.memory import PagedMemory
from copage.session.speculate import FILL_HEADER
from copage.stores import open_store

pytestmark = pytest.mark.slow

FACT = "My gym locker code is 4812, keep it in mind."
QUESTION = "What is my gym locker code again?"


class Upstream:
    """The fake upstream's answers: ``FAIL-ALWAYS`` fails every attempt, ``FAIL-ONCE`` its
    first, ``FAIL-MIDSTREAM`` breaks its stream after two words; anything else is answered
    ``noted: <the question's first words>``."""

    def __init__(self) -> None:
        self.failed: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        text = str(last["content"])
        with self.lock:
            if "FAIL-ALWAYS" in text:
                return Reply(status=500, error="upstream down")
            if "FAIL-MIDSTREAM" in text:  # two words, then an error event
                return Reply(text="partial answer that breaks", fail_after=2)
            if "FAIL-ONCE" in text and text not in self.failed:
                self.failed.add(text)
                return Reply(status=500, error="upstream hiccup")
        return Reply(text="noted: " + " ".join(text.split()[:6]))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("litellm")
    db = work / "copage.db"
    with FakeServer(Upstream()) as up, LiteLLMProxy(
            work, up.url, env={"COPAGE_STORE": f"sqlite:///{db}", "COPAGE_BOUNDARY": "fixed_4",
                               "COPAGE_RESIDENT_PAGES": "2"}) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0,
                               timeout=60)
        yield {"up": up, "proxy": proxy, "client": client, "db": db}


def stored(env: dict[str, Any], cid: str) -> PagedMemory:
    store = open_store(f"sqlite:///{env['db']}")
    return PagedMemory(store=store, conversation_id=cid, create=False)


def ask(env: dict[str, Any], history: list[dict[str, Any]], text: str, cid: str, *,
        stream: bool = False, client: Any = None) -> str:
    """One turn as an OpenAI client sends it: the whole history, then the new message."""
    client = client or env["client"]
    messages = [*history, {"role": "user", "content": text}]
    if stream:
        chunks = client.chat.completions.create(model=MODEL, messages=messages, user=cid,
                                                stream=True)
        answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        r = client.chat.completions.create(model=MODEL, messages=messages, user=cid)
        answer = r.choices[0].message.content or ""
    history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
    return answer


def test_hundred_turns_are_paged_and_the_fill_reaches_the_upstream(env: dict[str, Any]) -> None:
    up, cid = env["up"], "lt-hundred"
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    ask(env, history, FACT, cid)
    for i in range(1, 99):
        topic = ("trains", "weather", "recipes", "football", "gardens", "novels")[i % 6]
        ask(env, history, f"Message {i}: let us talk about {topic} for a while.", cid,
            stream=i % 10 == 0)  # streamed answers are stored too
    sent_before = len(up.received)
    answer = ask(env, history, QUESTION, cid)
    assert answer == "noted: What is my gym locker code"
    mem = stored(env, cid)
    assert len(mem.turns) == 200  # every turn stored once, streamed ones included
    assert [t.text for t in mem.turns[-2:]] == [QUESTION, answer]
    assert "p1" in mem.evicted and len(mem.evicted) >= 40  # the fact's page was evicted
    assert mem.system == "You are terse."
    last = up.received[sent_before]["messages"]
    # the upstream got the paged view, not the 199 messages of the history ...
    assert len(last) < 20
    assert not any(m["content"] == FACT for m in last)
    # ... with the fill: the evicted page holding the fact, just before the question
    assert FILL_HEADER in last[-2]["content"] and "4812" in last[-2]["content"]
    assert last[-1] == {"role": "user", "content": QUESTION}
    assert mem.stats().fills >= 1


def test_a_failed_upstream_stores_nothing(env: dict[str, Any]) -> None:
    cid = "lt-failed"
    history: list[dict[str, Any]] = []
    ask(env, history, "Hello, a first message.", cid)
    with pytest.raises(openai.InternalServerError):
        ask(env, list(history), "FAIL-ALWAYS: this one cannot be answered.", cid)
    mem = stored(env, cid)
    assert [t.text for t in mem.turns] == ["Hello, a first message.",
                                           "noted: Hello, a first message."]
    ask(env, history, "And a third message.", cid)  # the conversation goes on
    assert len(stored(env, cid).turns) == 4


def test_a_stream_that_breaks_stores_nothing(env: dict[str, Any]) -> None:
    cid = "lt-midstream"
    history: list[dict[str, Any]] = []
    ask(env, history, "Hello before the broken stream.", cid)
    with pytest.raises(openai.APIError):
        ask(env, list(history), "FAIL-MIDSTREAM: this stream breaks.", cid, stream=True)
    assert len(stored(env, cid).turns) == 2
    ask(env, history, "After the broken stream.", cid, stream=True)
    assert [t.text for t in stored(env, cid).turns] == [m["content"] for m in history]


def test_a_first_failed_turn_leaves_no_conversation(env: dict[str, Any]) -> None:
    with pytest.raises(openai.InternalServerError):
        ask(env, [], "FAIL-ALWAYS at the very start.", "lt-never")
    store = open_store(f"sqlite:///{env['db']}")
    assert not store.exists("lt-never")


def test_retries_store_once(env: dict[str, Any]) -> None:
    cid = "lt-retry"
    history: list[dict[str, Any]] = []
    ask(env, history, "Opening message of the retry test.", cid)
    # the upstream fails the first attempt: LiteLLM (its defaults) retries, the answer
    # is stored once
    ask(env, history, "FAIL-ONCE: the second message.", cid)
    assert len(stored(env, cid).turns) == 4
    # the SDK retries a request (its retry counter set) the proxy answered but the client
    # did not get: the same messages again store nothing
    up, before = env["up"], len(env["up"].received)
    again = env["client"].chat.completions.create(
        model=MODEL, messages=history[:-1], user=cid,
        extra_headers={"X-Stainless-Retry-Count": "1"})
    assert again.choices[0].message.content == history[-1]["content"]
    mem = stored(env, cid)
    assert [t.text for t in mem.turns] == [m["content"] for m in history]
    resent = up.received[before]["messages"]
    assert resent[-1] == {"role": "user", "content": "FAIL-ONCE: the second message."}
    # a streamed turn after it continues the conversation
    ask(env, history, "A streamed third message.", cid, stream=True)
    assert len(stored(env, cid).turns) == 6


def test_the_conversation_header_names_it(env: dict[str, Any]) -> None:
    client = env["client"].with_options(default_headers={"X-Copage-Conversation": "lt-header"})
    history: list[dict[str, Any]] = []
    ask(env, history, "Named by the header.", "ignored-user", client=client)
    assert stored(env, "lt-header").turns[0].text == "Named by the header."
    with pytest.raises(openai.APIError):  # an edited history under an explicit name
        client.chat.completions.create(model=MODEL, user="ignored-user", messages=[
            {"role": "user", "content": "Named by the header."},
            {"role": "assistant", "content": "an answer it never gave"},
            {"role": "user", "content": "next"}])
    assert len(stored(env, "lt-header").turns) == 2


def test_an_unnamed_client_is_recognised(env: dict[str, Any]) -> None:
    client = env["client"]
    history: list[dict[str, Any]] = []
    for text in ("Transparent opening message, unique 7731.", "Second transparent turn."):
        messages = [*history, {"role": "user", "content": text}]
        r = client.chat.completions.create(model=MODEL, messages=messages)
        history += [messages[-1], {"role": "assistant", "content": r.choices[0].message.content}]
    from copage.adapters.litellm.align import transparent_id

    mem = stored(env, transparent_id(history))
    assert [t.text for t in mem.turns] == [m["content"] for m in history]



def test_copage_dense_in_the_real_proxy_with_the_real_encoder(env: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """``COPAGE_DENSE=auto`` in the proxy's environment: a fact asked in other words
    reaches the upstream; the module's proxy (the same paging, no ``COPAGE_DENSE``) sends
    the same request without it. Skipped without the model files, failed under
    COPAGE_REQUIRE_DENSE=1."""
    from copage.dense import ModelMissing, find_model

    try:
        folder = find_model()
    except ModelMissing as e:
        if os.environ.get("COPAGE_REQUIRE_DENSE") == "1":
            pytest.fail(f"dense model required (COPAGE_REQUIRE_DENSE=1) but {e}")
        pytest.skip(f"dense model unavailable: {e}")
    fact = "Penicillin gives me a terrible rash, I found that out as a kid."
    question = "Which antibiotic should my doctor avoid prescribing for me?"
    fillers = ("We talked about the weather and the long drive to the coast.",
               "The meeting moved to Thursday afternoon after lunch.",
               "My cousin is painting the kitchen a pale green colour.")
    chat = [{"role": "user", "content": fact},
            {"role": "assistant", "content": "Thanks for telling me, I'll keep that in mind."}]
    chat += [{"role": "user" if i % 2 == 0 else "assistant",
              "content": f"{fillers[i % 3]} ({i})"} for i in range(200)]
    chat.append({"role": "user", "content": question})

    def sent(up: FakeServer) -> str:
        return " ".join(str(m["content"]) for m in up.received[-1]["messages"])

    env["client"].chat.completions.create(model=MODEL, messages=chat, user="lt-dense")
    plain = sent(env["up"])
    with FakeServer(Upstream()) as up, LiteLLMProxy(tmp_path, up.url, env={
            "COPAGE_STORE": f"sqlite:///{tmp_path / 'd.db'}", "COPAGE_BOUNDARY": "fixed_4",
            "COPAGE_RESIDENT_PAGES": "2", "COPAGE_DENSE": "auto",
            "COPAGE_DENSE_MODEL": str(folder),
            "XDG_CACHE_HOME": str(tmp_path / "cache")}) as proxy:
        openai.OpenAI(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0, timeout=120
                      ).chat.completions.create(model=MODEL, messages=chat, user="lt-dense")
        dense = sent(up)
    assert question in plain and question in dense
    assert "Penicillin" not in plain  # evicted, and no word in common with the question
    assert "Penicillin" in dense
    assert (tmp_path / "cache" / "copage" / "embeddings.sqlite").is_file()  # vectors kept
