"""docs/mcp.md and ``copage mcp --help`` agree with the MCP server: every tool it
registers is in the table and the help, and nothing says a listed tool does not exist."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "mcp.md").read_text()


def _registered() -> set[str]:
    pytest.importorskip("mcp")
    from copage.adapters.mcp import ConversationPool, create_server
    from copage.core.config import PagerConfig

    pool = ConversationPool("memory://", PagerConfig())
    try:
        tools = asyncio.run(create_server(pool).list_tools())
    finally:
        pool.close()
    return {t.name for t in tools}


def test_every_tool_is_in_the_doc_and_the_help() -> None:
    from copage.cli.main import build_parser

    names = _registered()
    assert "delete_conversation" in names
    table = set(re.findall(r"^\| `(\w+)\(", DOC, re.MULTILINE))
    assert table == names
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    help_text = sub.choices["mcp"].format_help()  # type: ignore[attr-defined]
    for name in names:
        assert name in " ".join(help_text.split()), name


def test_the_doc_does_not_deny_deleting() -> None:
    assert "No deletion of conversations" not in DOC


def test_the_stdio_example_needs_no_activated_venv() -> None:
    """The SDK starts the server without the shell's PATH: the example runs this
    Python's copage, not a bare ``copage``."""
    assert 'StdioServerParameters(command="copage"' not in DOC
    assert "command=sys.executable" in DOC
