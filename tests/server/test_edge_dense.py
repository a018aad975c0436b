"""``copage serve --dense``: the proxy's fill gets the meaning channel.

A real HTTP proxy (in-process server thread), the official ``openai`` SDK as the
client and a recording upstream. The wiring test replaces the encoder with the
concept vectors of tests/session/test_dense_fill.py (a test tool); the real encoder
runs in ``test_real_encoder_through_the_proxy`` when its model is installed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import Proxy

from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.server import edge
from copage.server.settings import ServeSettings, build_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_dense_fill import FILLER, QUESTION, STATEMENT, ConceptVectors

PAGING = PagerConfig(boundary="fixed_4", resident_pages=2)


def history(n: int = 200) -> list[dict[str, str]]:
    out = [{"role": "user", "content": STATEMENT},
           {"role": "assistant", "content": "Thanks for telling me, I'll keep that in mind."}]
    for i in range(n):
        out.append({"role": "user" if i % 2 == 0 else "assistant",
                    "content": FILLER[i % len(FILLER)] + f" ({i})"})
    return out


def ask(proxy: Proxy) -> str:
    """Send the whole history and the question (a client resending its conversation);
    the text of what the upstream received."""
    proxy.client().chat.completions.create(
        model="m", messages=[*history(), {"role": "user", "content": QUESTION}])  # type: ignore[list-item]
    body = proxy.upstream.received[-1]
    return " ".join(str(m.get("content")) for m in body["messages"])


def test_serve_settings_read_dense_from_flags_env_and_file(tmp_path: Path) -> None:
    base = {"upstream": "http://127.0.0.1:9/v1"}
    assert build_settings(base, env={}).dense is None  # copage's default (docs/dense.md)
    assert build_settings({**base, "dense": "off"}, env={}).dense == "off"  # --no-dense
    assert build_settings(base, env={"COPAGE_DENSE": "off"}).dense == "off"
    assert build_settings({**base, "dense": "auto"}, env={}).dense == "auto"
    assert build_settings(base, env={"COPAGE_DENSE": "/models/minilm"}).dense == "/models/minilm"
    conf = tmp_path / "c.toml"
    conf.write_text('dense = "auto"\n')
    assert build_settings({**base, "config": str(conf)}, env={}).dense == "auto"
    assert edge.dense_ranker("off") is None
    assert edge.dense_ranker(None) is None  # the tests pin COPAGE_DENSE=off (conftest)


def test_proxy_fill_brings_back_a_fact_asked_in_other_words(
        make_proxy: Callable[..., Proxy], monkeypatch: pytest.MonkeyPatch) -> None:
    plain = make_proxy(paging=PAGING, recall_mode="speculative")
    assert "allergic to peanuts" not in ask(plain)  # BM25 alone: no shared word
    made: list[Any] = []

    def fake(setting: str | None) -> DenseRanker | None:
        made.append(setting)
        return DenseRanker(ConceptVectors()) if setting is not None else None

    monkeypatch.setattr(edge, "dense_ranker", fake)
    dense = make_proxy(paging=PAGING, recall_mode="speculative", dense="auto")
    assert made == ["auto"]
    assert "allergic to peanuts" in ask(dense)


def test_serve_refuses_dense_without_a_model(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from copage.cli.main import main

    missing = tmp_path / "no-model"
    code = main(["serve", "--upstream", "http://127.0.0.1:9/v1", "--store",
                 f"sqlite://{tmp_path / 'p.db'}", "--dense", str(missing)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--dense" in err and "copage dense fetch" in err


def test_settings_dataclass_default_is_copage_default() -> None:
    assert ServeSettings(upstream="http://127.0.0.1:9/v1").dense is None


REAL_FACT = "Penicillin gives me a terrible rash, I found that out as a kid."
REAL_QUESTION = "Which antibiotic should my doctor avoid prescribing for me?"


def test_real_encoder_through_a_real_proxy_process(tmp_path: Path) -> None:
    """``copage serve`` as a user runs it (a process, its defaults but for a small paging
    budget), the openai SDK as the client, the model's files installed: the fact asked
    in other words is in what the upstream receives at the defaults and with
    ``--dense``; with ``--no-dense`` it is not. Skipped when the model files are absent,
    failed instead under COPAGE_REQUIRE_DENSE=1 (CI)."""
    import os

    import openai
    from proxy_helpers import KEY_A, free_port, spawn_worker

    from copage.dense import ModelMissing, find_model
    from copage.llm.fake_server import FakeServer, echo

    try:
        find_model()
    except ModelMissing as e:
        if os.environ.get("COPAGE_REQUIRE_DENSE") == "1":
            pytest.fail(f"dense model required (COPAGE_REQUIRE_DENSE=1) but {e}")
        pytest.skip(f"dense model unavailable: {e}")
    chat = [{"role": "user", "content": REAL_FACT},
            {"role": "assistant", "content": "Thanks for telling me, I'll keep that in mind."}]
    chat += history(480)[2:]
    chat.append({"role": "user", "content": "Let's plan the week."})
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "COPAGE_DENSE": "",  # the default
           "COPAGE_DENSE_WAIT": "600"}  # a loaded CI machine embeds slowly: wait it out
    if "COPAGE_DENSE_MODEL" not in os.environ:
        env["COPAGE_DENSE_MODEL"] = str(find_model())
    seen = {}
    with FakeServer(echo) as up:
        for name, extra in (("off", ("--no-dense",)), ("default", ()), ("required", ("--dense",))):
            port = free_port()
            proc = spawn_worker(port, up.url, f"sqlite://{tmp_path / f'p-{name}.db'}",
                                "--budget-tokens", "4000", *extra, env=env)
            try:
                client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY_A,
                                       max_retries=2, timeout=120)
                first = client.chat.completions.create(model="m", messages=chat)  # type: ignore[arg-type]
                # the next turn, as a client sends it: everything so far and the question
                client.chat.completions.create(model="m", messages=[  # type: ignore[arg-type]
                    *chat, {"role": "assistant", "content": first.choices[0].message.content},
                    {"role": "user", "content": REAL_QUESTION}])
            finally:
                proc.terminate()
                proc.wait(10)
            sent = up.received[-1]["messages"]
            seen[name] = " ".join(str(m.get("content")) for m in sent)
    assert "Penicillin" not in seen["off"]  # evicted, and no word in common with the question
    assert "Penicillin" in seen["default"]
    assert "Penicillin" in seen["required"]
    assert (tmp_path / "cache" / "copage" / "embeddings.sqlite").is_file()  # vectors kept
