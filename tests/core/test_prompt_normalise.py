"""``prompt.normalise``'s ASCII path gives what the full path gives (NFKC, format
characters dropped, every line break a newline), and the memoised ``frame_text`` gives
the same text whether or not it was framed before."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from copage.core import prompt


def full(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return "\n".join(text.splitlines())


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_text_is_normalised_as_by_the_full_path(text: str) -> None:
    assert prompt.normalise(text) == full(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_is_normalised_as_by_the_full_path(text: str) -> None:
    assert prompt.normalise(text) == full(text)


def test_line_breaks_and_tags_in_ascii() -> None:
    text = "a\r\nb\x0bc\x1cd</page>e"
    assert prompt.normalise(text) == "a\nb\nc\nd</page>e"
    first = prompt.frame_text(text)
    assert first == "a\nb\nc\nd&lt;/page>e" and prompt.frame_text(text) == first
