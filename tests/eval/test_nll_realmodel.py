"""``copage nll`` end to end against SmolLM2-135M behind llama.cpp's ``llama-server``.

Asserts files, real log-probabilities and the metrics' relations to them, never
what the NLLs say about gists: the model is tiny.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from realmodel import LlamaServer, llama_server

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]


@pytest.fixture(scope="module")
def nll_server() -> Iterator[LlamaServer]:
    """The local llama-server (skipped, or failed under COPAGE_REQUIRE_REALMODEL=1)."""
    with llama_server(n_ctx=2048) as server:
        yield server


def test_copage_nll_cli_against_local_server(
    nll_server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from copage.cli.main import main

    out = tmp_path / "nll"
    code = main(["nll", "--model", nll_server.spec, "--out", str(out), "--max-tokens", "12",
                 "--window", "4", "--no-cache", "--timeout", "600"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"produced by model {nll_server.spec}" in printed.out
    for name in ("nll.md", "nll.csv", "nll.json", "nll.png"):
        assert (out / name).stat().st_size > 0
    data = json.loads((out / "nll.json").read_text())
    assert data["model"] == nll_server.spec and len(data["cases"]) == 5
    for case in data["cases"]:
        for cond in ("full", "gist"):
            stats = case[cond]
            nll = stats["nll"]
            assert 1 <= len(nll) <= 12
            assert all(math.isfinite(x) and x >= -1e-6 for x in nll)
            assert any(x > 1e-3 for x in nll), "real token probabilities are not all 1"
            assert stats["mean"] == pytest.approx(sum(nll) / len(nll))
            assert min(nll) - 1e-9 <= stats["max_window"] <= max(nll) + 1e-9
        assert math.isfinite(case["delta_mean_nll"]) and math.isfinite(case["delta_max_window"])
    assert all(math.isfinite(v) for v in data["summary"].values() if isinstance(v, float))
