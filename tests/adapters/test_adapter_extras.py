"""Without their extra installed, the LangChain and Agents adapters name the pip extra
(as ``copage serve``, ``copage mcp`` and the providers do), not a bare
``ModuleNotFoundError``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import copage

SRC = Path(copage.__file__).resolve().parents[1]
#: Makes the vendor package unimportable, as in an environment without the extra.
BLOCK = "import sys; sys.modules[{name!r}] = None; import {module}"


@pytest.mark.parametrize(("module", "missing", "extra"), [
    ("copage.adapters.langchain", "langchain", "langchain"),
    ("copage.adapters.langchain", "langchain_core", "langchain"),
    ("copage.adapters.agents", "agents", "agents"),
])
def test_a_missing_extra_is_named(module: str, missing: str, extra: str) -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK.format(name=missing, module=module)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError:"), done.stderr
    assert f"pip install 'copage[{extra}]'" in last and repr(missing) in last, last
