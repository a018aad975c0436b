"""copage.dense.MiniLM on the real weights: the model card's cosines, bench parity."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from copage.dense import MiniLM, load_encoder, minilm

ROOT = Path(__file__).resolve().parents[2]
#: LoCoMo's sample beside the checkout (the main tree's or a worktree's layout).
SAMPLES = [r / "shared/data/locomo/locomo-sample.json" for r in (ROOT.parent, ROOT.parents[1])]
CARD = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]


def _locomo_texts(n: int) -> list[str]:
    path = next((p for p in SAMPLES if p.is_file()), None)
    if path is None:
        return ["Hey Mel! Good to see you! How have you been?",
                "I went to a LGBTQ support group yesterday and it was so powerful.",
                "Wow, that's cool, Caroline! What made it so special?"] * (n // 3 + 1)
    conv = json.loads(path.read_text(encoding="utf-8"))[0]["conversation"]
    turns = [t["text"] for k, v in conv.items() if k.startswith("session_")
             and isinstance(v, list) for t in v]
    return turns[:n]


def test_model_card_cosines(encoder: MiniLM) -> None:
    E = encoder.encode(CARD)
    assert E.dtype == np.float32 and E.shape == (3, 384) == (3, encoder.dim)
    got = [float(E[0] @ E[1]), float(E[0] @ E[2]), float(E[1] @ E[2])]
    assert [round(g, 4) for g in got] == [0.6660, 0.1046, 0.1411]
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    assert encoder.name == "all-MiniLM-L6-v2"


def test_rows_do_not_depend_on_batching_or_order(encoder: MiniLM,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _locomo_texts(12) + ["", "x" * 2000, "word " * 300, "word " * 100]
    whole = encoder.encode(texts, batch=32)
    np.testing.assert_allclose(encoder.encode(texts[::-1], batch=3)[::-1], whole, atol=1e-5)
    np.testing.assert_allclose(encoder.encode([texts[4]]), whole[4:5], atol=1e-5)
    monkeypatch.setattr(minilm, "BATCH_TOKENS", 100)  # every long text alone
    np.testing.assert_allclose(encoder.encode(texts), whole, atol=1e-5)


def test_empty_input(encoder: MiniLM) -> None:
    out = encoder.encode([])
    assert out.shape == (0, 384) and out.dtype == np.float32
    with pytest.raises(TypeError, match="not one str"):
        encoder.encode("one text")  # type: ignore[arg-type]


def test_load_encoder_loads_once_per_folder(model_dir: Path, encoder: MiniLM) -> None:
    assert load_encoder(model_dir) is encoder
    assert load_encoder(str(model_dir) + "/") is encoder


def test_a_config_that_is_not_bert_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 384}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a BERT config"):
        MiniLM(tmp_path)
