"""``parse_page_arg``: recall page ids a model may write, and ones it must not crash on."""

from __future__ import annotations

import time

import pytest

from copage import PagedMemory
from copage.core.types import parse_page_arg


@pytest.mark.parametrize("value, index", [
    ("p3", 2), ("P3", 2), ("3", 2), (3, 2), ("[p3:kw1, kw2]", 2), ("page 3", 2),
    ("page p3", 2), ("p 3", 2), (" [ p12 ] ", 11), ("p999999999", 999999998),
])
def test_page_ids_parse(value: object, index: int) -> None:
    assert parse_page_arg(value) == index


@pytest.mark.parametrize("value", ["p0", "p", "", "p1234567890", "p" + "9" * 5000,
                                   "9" * 4301, "page"])
def test_bad_or_huge_page_ids_are_none(value: str) -> None:
    assert parse_page_arg(value) is None


def test_long_whitespace_parses_fast() -> None:
    start = time.perf_counter()
    for text in ("[" + " " * 40000 + "x", "page" + " " * 40000 + "x", "p" + " " * 40000 + "x"):
        assert parse_page_arg(text) is None
    # milliseconds when linear; a backtracking pattern takes seconds at this size
    assert time.perf_counter() - start < 2.0


def test_recall_of_a_huge_page_id_is_tool_error_text() -> None:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    for i in range(6):
        mem.add("user" if i % 2 == 0 else "assistant", f"message {i}")
    text = mem.recall("p" + "9" * 5000)
    assert isinstance(text, str) and text
