"""Fixtures of the dense encoder's tests.

Tests that need the real full-precision model files skip when
:func:`copage.dense.find_model` finds none (or only the int8 copy bundled with copage),
and FAIL instead when ``COPAGE_REQUIRE_DENSE=1`` (CI, after ``copage dense fetch``).
Locally: ``COPAGE_DENSE_MODEL=/path/to/model pytest tests/dense``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from copage.dense import MiniLM, ModelMissing, find_model, load_encoder
from copage.dense.model_files import bundled_dir


def unavailable(reason: str) -> None:
    """Fail (CI) or skip (elsewhere) because the model files are not there."""
    if os.environ.get("COPAGE_REQUIRE_DENSE") == "1":
        pytest.fail(f"dense model required (COPAGE_REQUIRE_DENSE=1) but {reason}")
    pytest.skip(f"dense model unavailable: {reason}")


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The real all-MiniLM-L6-v2 folder with its full-precision weights, as ``copage
    dense fetch`` puts them (skipped, or failed under COPAGE_REQUIRE_DENSE=1, when only
    the int8 copy bundled with copage is there: tests/dense/test_bundled.py tests that)."""
    try:
        folder = find_model()
    except ModelMissing as e:
        unavailable(str(e))
        raise  # unreachable: unavailable() skips or fails
    if folder == bundled_dir():
        unavailable("only the int8 model bundled with copage is here (`copage dense fetch` "
                    "puts the full-precision one)")
    return folder


@pytest.fixture
def nothing_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As right after ``pip install copage``: no cache folder, no package, no setting, the
    default channel not made yet (the int8 model bundled with copage is still there)."""
    from copage.dense import default_channel
    from copage.dense import model_files as mf

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("COPAGE_DENSE_MODEL", raising=False)
    monkeypatch.delenv("COPAGE_DENSE", raising=False)
    monkeypatch.setattr(mf, "_package_dir", lambda: None)
    monkeypatch.setattr(default_channel, "_memo", {})
    monkeypatch.setattr(default_channel, "_said", set())
    return tmp_path


@pytest.fixture(scope="session")
def vocab_dir() -> Path:
    """A folder with the model's ``vocab.txt``: the int8 copy bundled with copage, whose
    vocabulary is the fetched model's (the same sha256), so the tokenizer's tests run
    without a fetch."""
    return bundled_dir()


@pytest.fixture(scope="session")
def encoder(model_dir: Path) -> MiniLM:
    return load_encoder(model_dir)


@pytest.fixture(scope="session")
def reference_tokenizer(vocab_dir: Path) -> Any:
    """Hugging Face's ``tokenizers`` as the bench used it (a test-only reference: copage
    never imports it): the model's tokenizer.json when the folder has one, else the same
    pipeline built from vocab.txt (``copage dense fetch`` does not unpack tokenizer.json;
    both give the same ids on every string of test_wordpiece.py and every LoCoMo turn)."""
    tokenizers = pytest.importorskip(
        "tokenizers", reason="the reference tokenizer (package `tokenizers`) is not installed")
    path = vocab_dir / "tokenizer.json"
    if path.is_file():
        tok = tokenizers.Tokenizer.from_file(str(path))
    else:
        tok = tokenizers.BertWordPieceTokenizer(
            str(vocab_dir / "vocab.txt"), clean_text=True, handle_chinese_chars=True,
            strip_accents=None, lowercase=True)
    tok.enable_truncation(256)
    tok.no_padding()
    return tok
