"""One conversation-id rule (``copage.ids``) for the proxy, the MCP tools and the
Agents session: an id one front end creates or accepts, the others accept too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from copage.adapters.agents import CopageSession
from copage.adapters.agents.paged_session import POP_SUFFIX
from copage.adapters.mcp.handlers import ToolInputError
from copage.adapters.mcp.handlers import check_conversation_id as mcp_check
from copage.ids import InvalidConversationId, check_conversation_id, is_conversation_id
from copage.memory import new_conversation_id
from copage.server.error_body import ProxyError
from copage.server.request import check_conversation_id as proxy_check

GOOD = ["trip-planning", "a", "A9", "user@example.com", "s1~pop", "thread:42.b_c-d",
        "x" * 128, new_conversation_id()]
BAD = ["", "-lead", "~pop", "_x", ".", "..", "../etc", "a/b", "has space", "x" * 129,
       "café", "tab\there", "a\n", "semi;colon"]


def _proxy_ok(value: str) -> bool:
    try:
        proxy_check(value)
    except ProxyError as e:
        assert e.status == 400 and e.code == "invalid_conversation_id"
        return False
    return True


def _mcp_ok(value: str) -> bool:
    try:
        mcp_check(value)
    except ToolInputError as e:
        assert "conversation must be an id of 1-128 characters" in str(e)
        return False
    return True


@pytest.mark.parametrize("value", GOOD + BAD)
def test_proxy_mcp_and_rule_agree(value: str) -> None:
    expected = value in GOOD
    assert is_conversation_id(value) is expected
    assert _proxy_ok(value) is expected
    assert _mcp_ok(value) is expected


def test_the_agents_pop_twin_is_a_valid_id_everywhere() -> None:
    """The Agents session stores ``ID~pop``; the proxy's old rule refused ``~``."""
    twin = "session-1" + POP_SUFFIX
    assert _proxy_ok(twin) and _mcp_ok(twin) and is_conversation_id(twin)


@pytest.mark.parametrize("value", BAD)
def test_the_agents_session_refuses_what_the_rule_refuses(value: str) -> None:
    with pytest.raises(ValueError, match="session_id must be 1-124 characters"):
        CopageSession(value)


def test_the_agents_session_leaves_room_for_its_twin() -> None:
    CopageSession("x" * 124)
    with pytest.raises(InvalidConversationId):
        CopageSession("x" * 125)  # its twin would be 129 characters
    assert check_conversation_id("x" * 124 + POP_SUFFIX) == "x" * 124 + POP_SUFFIX


def test_the_rule_lives_outside_the_server() -> None:
    """``copage.ids`` imports nothing of copage (the adapters use it without the server)."""
    import copage.ids

    tree = ast.parse(Path(copage.ids.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.startswith("copage")], names
