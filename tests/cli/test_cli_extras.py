"""A command whose extra is not installed says which one to install (no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Runs ``copage`` with some top-level packages made unimportable, as in a venv that
# installed ``copage`` without the extra.
RUN = """
import sys
blocked = set(sys.argv[1].split(","))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from copage.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _copage(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN, blocked, *args], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(("blocked", "args", "extra"), [
    ("starlette,uvicorn", ["serve", "--upstream", "http://127.0.0.1:9/v1", "--store",
                           "memory://"], "server"),
    ("mcp", ["mcp", "--store", "memory://"], "mcp"),
])
def test_missing_extra_is_named(blocked: str, args: list[str], extra: str) -> None:
    r = _copage(blocked, *args)
    assert r.returncode == 2, r.stderr
    assert f"pip install 'copage[{extra}]'" in r.stderr
    assert "Traceback" not in r.stderr

