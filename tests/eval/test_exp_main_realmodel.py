"""``main`` against the local real model (SmolLM2 via llama-server): rows, JSONL, and what
the model was shown (through a recording proxy and the server's ``/apply-template``); never
answer quality."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from realmodel import LlamaServer, RecordingProxy, assert_verbatim, llama_server, shown_tools

from copage.eval.experiments.methods_table import smoke
from copage.llm import get_model

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]
METHODS = ("full_context", "truncation", "bookmark_recall")
# ablation's conversations (~2000 tokens) outgrow bookmark_recall's resident pages at the
# default budget, so pages are evicted and the recall tool is offered (a conversation that
# fits is sent without paging: no bookmarks, no tool).
DATASET = "ablation"


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    with llama_server() as s:
        yield s


def test_main_with_real_model(server: LlamaServer, tmp_path: Path) -> None:
    with RecordingProxy(server.base_url) as proxy:
        model = get_model(f"openai:smollm2@{proxy.base_url}")
        res = smoke(model, tmp_path, spec=server.spec, dataset=DATASET, probes=3, methods=METHODS,
                    max_tokens=32,
                    judge_max_tokens=32,
                    cache_path=str(tmp_path / "cache.sqlite"))
    lines = (tmp_path / "main" / "probes.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    assert len(rows) == 3 * len(METHODS)
    assert {r["method"] for r in rows} == set(METHODS)
    for r in rows:
        assert r["model"] == server.spec and r["calls"] >= 1
        assert all(t > 0 for t in r["prompt_tokens"])
        assert 0.0 <= r["scores"]["locomo_f1"] <= 1.0
        assert set(r["judges"][server.spec]) == {"scale5", "binary"}
    with_model = [r for r in res.tables["methods"] if r["model"] == server.spec]
    assert [r["method"] for r in with_model] == list(METHODS)
    for r in with_model:
        assert r["probes"] == 3 and r["prompt_tokens_mean"] > 0 and r["evidence_coverage"] is not None
    # Measured by the server: truncation sends fewer prompt tokens than the full context.
    first = {(r["probe"], r["method"]): r["prompt_tokens"][0] for r in rows}
    for probe in {r["probe"] for r in rows}:
        assert first[probe, "truncation"] < first[probe, "full_context"]

    # bookmark_recall evicted pages and offered the recall tool on every probe, and the model was shown it.
    with_tools = [c for c in proxy.chats if c.body.get("tools")]
    for r in rows:
        if r["method"] == "bookmark_recall":
            assert any(r["question"] in str(m.get("content")) for c in with_tools
                       for m in c.body["messages"] if m["role"] == "user"), r["question"]
    for c in with_tools[:3]:
        prompt = server.evaluated(c.body, c.reply)
        assert shown_tools(prompt) == c.body["tools"]
        assert_verbatim(c.body, prompt)

    # a repeated run is served from the log: no new rows
    smoke(model, tmp_path, spec=server.spec, dataset=DATASET, probes=3, methods=METHODS, max_tokens=32,
          cache_path=str(tmp_path / "cache.sqlite"))
    assert len((tmp_path / "main" / "probes.jsonl").read_text().splitlines()) == len(lines)
