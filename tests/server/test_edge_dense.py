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
from test_dense_fill import FILLER, QUESTION, STATEMENT, ConceptVectors  # noqa: E402

PAGING = PagerConfig(boundary="fixed_4", resident_pages=2)


def history(n: int = 40) -> list[dict[str, str]]:
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
    assert build_settings(base, env={}).dense is None  # off by default
    assert build_settings({**base, "dense": "auto"}, env={}).dense == "auto"
    assert build_settings(base, env={"COPAGE_DENSE": "/models/minilm"}).dense == "/models/minilm"
    conf = tmp_path / "c.toml"
    conf.write_text('dense = "auto"\n')
    assert build_settings({**base, "config": str(conf)}, env={}).dense == "auto"
    assert edge.dense_ranker(None) is None


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


def test_settings_dataclass_default_is_off() -> None:
    assert ServeSettings(upstream="http://127.0.0.1:9/v1").dense is None
