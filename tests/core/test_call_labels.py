"""Tool calls named in bookmarks (copage.core.keywords.calls)."""

from __future__ import annotations

import json

from copage.core.keywords.calls import call_labels
from copage.core.types import ToolCall, Turn
from copage.memory import PagedMemory


def _turn(*calls: tuple[str, object]) -> Turn:
    return Turn(id="t", role="assistant", text="", tool_calls=tuple(
        ToolCall(f"c{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)))


def test_labels_name_the_tool_and_its_first_string_argument() -> None:
    turns = [_turn(("read_file", {"path": "src/app.py", "lines": 40}),
                   ("grep", {"limit": 3, "pattern": "TODO", "dir": "src"})),
             _turn(("read_file", {"path": "src/app.py", "lines": 40}),
                   ("now", {}), ("weird", "not json"), ("nested", {"q": [{"x": "deep"}]}))]
    assert call_labels(turns) == ("read_file src/app.py", "grep TODO", "now")
    assert call_labels(turns, limit=10)[3:] == ("weird", "nested deep")
    assert call_labels([Turn(id="u", role="user", text="hi")]) == ()


def test_an_evicted_tool_page_is_bookmarked_by_its_call() -> None:
    mem = PagedMemory(boundary="fixed_4", policy="lru", resident_pages=1)
    noise = "\n".join(f"worker batch flushed segment {i} in {i * 7} ms" for i in range(80))
    for n in range(4):
        mem.add("user", f"look at file {n}")
        mem.add("assistant", "", tool_calls=[{"id": f"c{n}", "type": "function", "function": {
            "name": "read_file", "arguments": json.dumps({"path": f"etc/app_{n}.toml"})}}])
        mem.add("tool", noise, tool_call_id=f"c{n}")
        mem.add("assistant", "done")
    books = mem.bookmarks()
    assert books["p1"].text.startswith("[p1: read_file etc/app_0.toml")
    assert "read_file etc/app_1.toml" in books["p2"].text
    system = str(mem.context().messages[0]["content"])
    assert "read_file etc/app_0.toml" in system, "the evicted page's bookmark names the call"
