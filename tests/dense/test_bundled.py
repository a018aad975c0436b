"""The int8 all-MiniLM-L6-v2 bundled inside the copage package: found with nothing
fetched, close to the full-precision model, shipped in the wheel, and it turns the
fill's meaning channel on at the defaults."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from copage.dense import MiniLM, default_channel, find_model, load_encoder
from copage.dense import model_files as mf
from copage.dense.minilm import dequantize

ROOT = Path(__file__).resolve().parents[2]
STATEMENTS = [
    "I'm allergic to peanuts, so I always read food labels.",
    "My sister Ana moved to Porto last spring.",
    "We adopted a golden retriever puppy named Max.",
    "The quarterly report is due on Friday.",
    "He drove to the stadium.",
]
QUESTIONS = [  # the i-th asks about the i-th statement, in other words
    "Do I have a nut allergy?",
    "Where does my sibling live these days?",
    "What kind of dog do I have?",
]


def test_with_nothing_fetched_the_bundled_model_is_found_and_verified(
        nothing_fetched: Path) -> None:
    folder = find_model()
    assert folder == mf.bundled_dir() == (ROOT / "src/copage/dense/bundled").resolve()
    size = (folder / "model.safetensors").stat().st_size
    assert 20_000_000 < size < 26_000_000  # int8: a quarter of the 90 MB


def test_the_bundled_model_turns_the_default_channel_on(nothing_fetched: Path) -> None:
    ranker = default_channel.default_ranker()
    assert ranker is not None
    assert ranker.encoder.model == mf.bundled_dir()  # type: ignore[attr-defined]


def test_a_fetched_model_is_preferred_to_the_bundled_one(
        nothing_fetched: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mf, "_package_dir", lambda: model_dir)
    assert find_model() == model_dir


def test_a_damaged_bundle_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "bundled"
    copy.mkdir()
    for f in mf.REQUIRED_SHA256:
        copy.joinpath(f).write_bytes(mf.bundled_dir().joinpath(f).read_bytes())
    blob = bytearray(copy.joinpath("model.safetensors").read_bytes())
    blob[-1] ^= 1
    copy.joinpath("model.safetensors").write_bytes(bytes(blob))
    with pytest.raises(mf.ModelDamaged, match="model.safetensors has sha256"):
        find_model(copy)


def test_the_int8_encoder_is_close_to_the_full_one_and_named_apart(model_dir: Path) -> None:
    full, small = load_encoder(model_dir), load_encoder(mf.bundled_dir())
    assert isinstance(small, MiniLM) and small.name == "all-MiniLM-L6-v2-int8"
    assert full.name == "all-MiniLM-L6-v2"  # cached vectors of the two never mix
    texts = STATEMENTS + QUESTIONS
    a, b = full.encode(texts), small.encode(texts)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert ((a * b).sum(1) > 0.995).all()
    # each question finds its statement by meaning, with either model
    n = len(STATEMENTS)
    sa, sb = a[n:] @ a[:n].T, b[n:] @ b[:n].T
    assert (sa.argmax(1) == np.arange(len(QUESTIONS))).all()
    assert (sb.argmax(1) == np.arange(len(QUESTIONS))).all()


def test_dequantize_widens_int8_rows_and_refuses_stray_scales() -> None:
    q = np.array([[127, -64], [0, 1]], dtype=np.int8)
    out = dequantize({"w": q, "w.qscale": np.array([0.5, 2.0], np.float32),
                      "b": np.ones(2, np.float32)}, Path("m.safetensors"))
    assert set(out) == {"w", "b"}
    assert out["w"].dtype == np.float32
    assert out["w"].tolist() == [[63.5, -32.0], [0.0, 2.0]]
    with pytest.raises(ValueError, match="x.qscale .* does not scale an int8 matrix"):
        dequantize({"x.qscale": np.ones(2, np.float32)}, Path("m.safetensors"))
    with pytest.raises(ValueError, match="w.qscale"):
        dequantize({"w": q, "w.qscale": np.ones(3, np.float32)}, Path("m.safetensors"))


def test_copage_dense_check_reports_the_bundled_model(
        nothing_fetched: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from copage.cli.main import main

    assert main(["dense", "check"]) == 0
    out = capsys.readouterr().out
    assert "(int8, bundled with copage)" in out
    assert "ok within 0.005" in out


@pytest.mark.slow
def test_the_wheel_carries_the_bundled_model(tmp_path: Path) -> None:
    """``pip install copage`` gets the model: built as a user's pip builds it (offline,
    the machine's setuptools)."""
    tree = tmp_path / "tree"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(ROOT / "src", tree / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for f in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / f).is_file():
            shutil.copyfile(ROOT / f, tree / f)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "-q", "-w", str(tmp_path), str(tree)],
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = tmp_path.glob("copage-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("config.json", "vocab.txt", "model.safetensors", "MODEL_CARD.md"):
        assert f"copage/dense/bundled/{f}" in names


def test_the_startup_line_and_the_report_name_the_weights(nothing_fetched: Path) -> None:
    from copage.cli.bench import meaning_channel
    from copage.dense.default_channel import weights_of

    bundled = "on (all-MiniLM-L6-v2, int8, bundled with copage)"
    assert weights_of(default_channel.default_ranker()) == bundled
    assert meaning_channel() == bundled + "; COPAGE_DENSE=off for BM25 alone"
    assert weights_of(None) == "off"


def test_a_fetched_folder_is_described_as_full_precision(model_dir: Path) -> None:
    assert mf.describe(model_dir) == "all-MiniLM-L6-v2, full precision"


def test_the_script_remakes_the_bundle_byte_for_byte(model_dir: Path, tmp_path: Path) -> None:
    """The bundled weights are the fetched ones quantized, nothing else."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts/quantize-minilm.py"),
                        str(model_dir), str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    for f in ("model.safetensors", "config.json", "vocab.txt"):
        assert (tmp_path / "out" / f).read_bytes() == (mf.bundled_dir() / f).read_bytes(), f
