"""``COPAGE_DENSE``: the meaning channel of the hook LiteLLM's ``config.yaml`` names
(:func:`copage.adapters.litellm.proxy.from_env`). Unset: copage's default (on when the
model's files are installed); ``off`` never; ``auto`` or a folder required, the folder
checked when the hook is made; the encoder loaded at the first ranking."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")

import dense_chat

import copage.dense
from copage import PagedMemory
from copage.adapters.litellm.proxy import LazyEncoder, from_env
from copage.core.dense_rank import DenseRanker
from copage.dense import default_channel

ENV = {"COPAGE_STORE": "memory://"}


def chat() -> PagedMemory:
    return PagedMemory(store=dense_chat.seeded("d"), conversation_id="d", create=False)


def test_off_is_off_and_unset_is_off_without_the_model_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert from_env({**ENV, "COPAGE_DENSE": "off"}).speculator.dense is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("COPAGE_DENSE_MODEL", raising=False)
    monkeypatch.setattr(copage.dense.model_files, "_package_dir", lambda: None)
    monkeypatch.setattr(copage.dense.model_files, "bundled_dir", lambda: tmp_path / "none")
    assert from_env(ENV).speculator.dense is None  # the default, no files installed
    env = dict(os.environ)
    env.update(ENV, COPAGE_DENSE="off", LITELLM_LOCAL_MODEL_COST_MAP="True",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = "import copage.adapters.litellm.proxy as p; print(p.hook.speculator.dense)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["None"]  # the module-level hook LiteLLM loads


def test_a_missing_model_is_an_error_when_the_hook_is_made(tmp_path: Path) -> None:
    with pytest.raises(copage.dense.ModelMissing, match="copage dense fetch"):
        from_env({**ENV, "COPAGE_DENSE": str(tmp_path / "no-model")})


@pytest.mark.parametrize("setting, asked", [("auto", None), ("/models/minilm", "/models/minilm")])
def test_the_channel_is_built_by_copage_dense_at_its_first_use(
        setting: str, asked: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[Any] = []
    made: list[tuple[Any, Any]] = []

    def find_model(path: Any = None) -> Path:
        found.append(path)
        return Path("/found")

    def ranker(model: Any = None, *, cache: Any = None) -> DenseRanker:
        made.append((model, cache))
        return DenseRanker(dense_chat.ConceptVectors())

    monkeypatch.setattr(default_channel, "find_model", find_model)
    monkeypatch.setattr(default_channel, "_memo", {})
    monkeypatch.setattr(copage.dense, "ranker", ranker)
    hook = from_env({**ENV, "COPAGE_DENSE": setting})
    dense = hook.speculator.dense
    assert isinstance(dense, DenseRanker) and isinstance(dense.encoder, LazyEncoder)
    assert found == [asked] and made == [] and not dense.encoder.loaded  # checked, not loaded
    mem = chat()
    assert dense_chat.FACT_SHOWN in hook.speculator.plan(mem, dense_chat.QUESTION).text
    hook.speculator.plan(mem, dense_chat.QUESTION)
    assert made == [(Path("/found"), True)]  # once, with the vectors kept on disk
    plain = from_env({**ENV, "COPAGE_DENSE": "off"}).speculator.plan(mem, dense_chat.QUESTION)
    assert dense_chat.FACT_SHOWN not in plain.text


def test_auto_with_the_real_encoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real all-MiniLM-L6-v2 behind ``COPAGE_DENSE=auto``: a fact asked in other words
    is in the fill. Skipped without the model files, failed under COPAGE_REQUIRE_DENSE=1."""
    try:
        folder = copage.dense.find_model()
    except copage.dense.ModelMissing as e:
        if os.environ.get("COPAGE_REQUIRE_DENSE") == "1":
            pytest.fail(f"dense model required (COPAGE_REQUIRE_DENSE=1) but {e}")
        pytest.skip(f"dense model unavailable: {e}")
    monkeypatch.setenv("COPAGE_DENSE_MODEL", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fact = "Penicillin gives me a terrible rash, I found that out as a kid."
    question = "Which antibiotic should my doctor avoid prescribing for me?"
    mem = PagedMemory(**dense_chat.PAGING)
    with mem.transaction():
        for role, text in [("user", fact), *dense_chat.history()[1:]]:
            mem.add(role, text)
    assert "p1" in mem.evicted
    assert "Penicillin" not in from_env({**ENV, "COPAGE_DENSE": "off"}
                                        ).speculator.plan(mem, question).text
    assert "Penicillin" in from_env(ENV).speculator.plan(mem, question).text  # the default
    assert "Penicillin" in from_env({**ENV, "COPAGE_DENSE": "auto"}
                                    ).speculator.plan(mem, question).text
    assert (tmp_path / "cache" / "copage" / "embeddings.sqlite").is_file()
