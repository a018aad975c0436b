"""One page-id parser: ``copage.core.types``; no module parses page ids by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from copage.core.types import normal_page_id, page_ids_in, page_index, parse_page_arg

SRC = Path(__file__).resolve().parents[2] / "src" / "copage"
SKIP = "core/types.py"  # the parser itself
HAND_PARSING = re.compile(
    r"""int\(\w+\[1:\]\)|removeprefix\(["']p["']\)|lstrip\(["']p["']\)|f["']p\{int\(""")


def test_forms_of_one_grammar() -> None:
    for value in ("p2", "P2", "2", 2, "page 2", "page_2", "pg 2", "[p2]", "[p2: lisbon]"):
        assert parse_page_arg(value) == 1 and normal_page_id(value) == "p2"
    assert page_index("p12") == 11
    assert list(page_ids_in("see p3 and P12, not p0 nor top3")) == ["p3", "p12"]
    assert normal_page_id("p2 and p3") is None and normal_page_id(True) is None


def test_page_index_refuses_what_is_not_a_page_id() -> None:
    with pytest.raises(ValueError, match="not a page id"):
        page_index("x3")


def test_no_module_parses_page_ids_by_hand() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel == SKIP:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if HAND_PARSING.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "parse page ids with copage.core.types:\n" + "\n".join(found)
