"""The bookmark cap reaches every front end's settings: flags, config files, PagedMemory."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from copage import PagedMemory
from copage.cli.paging_args import add_paging_options, paging_settings
from copage.server.settings import build_settings


def test_the_flag_sets_the_cap_and_zero_lifts_it() -> None:
    parser = argparse.ArgumentParser()
    add_paging_options(parser)
    assert paging_settings(parser.parse_args(["--bookmark-tokens", "16"])) == {
        "bookmark_tokens": 16}
    assert paging_settings(parser.parse_args([])) == {}
    s = build_settings({"model": "scripted:x", "bookmark_tokens": 16}, {})
    assert s.paging.bookmark_tokens == 16
    assert build_settings({"model": "scripted:x", "bookmark_tokens": 0}, {}).paging \
        .bookmark_tokens is None
    assert build_settings({"model": "scripted:x"}, {}).paging.bookmark_tokens == 12


def test_a_config_file_sets_the_cap(tmp_path: Path) -> None:
    conf = tmp_path / "copage.toml"
    conf.write_text('model = "scripted:x"\n[paging]\nbookmark_tokens = 0\n'
                    'bookmark_format = "minimal"\nn_keywords = 4\n')
    s = build_settings({"config": str(conf)}, {})
    assert (s.paging.bookmark_tokens, s.paging.bookmark_format, s.paging.n_keywords) == (
        None, "minimal", 4)


def test_a_bad_cap_is_refused_with_the_rule() -> None:
    with pytest.raises(ValueError, match="bookmark_tokens must be None, 0 .no cap. or an integer"):
        build_settings({"model": "scripted:x", "bookmark_tokens": 2}, {})


def test_paged_memory_honours_the_cap() -> None:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1, bookmark_tokens=8)
    facts = ["My dentist is Dr Okafor on Tuesday at the Riverside clinic near the bakery.",
             "The Lisbon trip budget is 1800 euros for flights, hotel and the fado show."]
    for i in range(12):
        mem.add("user", facts[i % 2] + f" Note {i}.")
        mem.add("assistant", "Noted.")
    books = mem.bookmarks()
    assert books and all(b.tokens <= 8 for b in books.values()), books
    assert all(b.text.startswith(f"[{pid}: ") for pid, b in books.items())
