"""A request that does not fit the model's context window: recognised in each server's
words, raised as :class:`ContextOverflow` (a ``RequestRejected``: never retried) with the
paging budget that would fit, or noted on an SDK's own error."""

from __future__ import annotations

import pytest

from copage.llm.errors import (
    ContextOverflow,
    RequestRejected,
    context_window,
    error_for_status,
    note_overflow,
)

MESSAGES = [
    ("request (6520 tokens) exceeds the available context size (4096 tokens), try increasing it",
     4096),
    (("This model's maximum context length is 8192 tokens. However, your messages resulted "
      "in 9100 tokens. Please reduce the length of the messages."), 8192),
    ("prompt is too long: 210000 tokens > 200000 maximum", 200000),
    ('{"error": {"message": "too long", "code": "context_length_exceeded"}}', True),
]


@pytest.mark.parametrize(("message", "window"), MESSAGES)
def test_each_servers_words_are_recognised(message: str, window: int | bool) -> None:
    assert context_window(message) == window
    err = error_for_status("upstream", 400, message)
    assert isinstance(err, ContextOverflow) and isinstance(err, RequestRejected)
    assert not err.retryable and err.window == (None if window is True else window)
    assert "copage: the conversation did not fit" in str(err) and "paging-budget" in str(err)


def test_the_hint_names_a_budget_that_fits_a_small_window() -> None:
    small = str(error_for_status("upstream", 400, MESSAGES[0][0]))
    assert "budget_tokens=1600" in small and "--budget-tokens 1600" in small
    assert "budget_tokens=3200" in str(error_for_status("upstream", 413, MESSAGES[1][0]))
    # a large window the default budget fits: no budget is named, one message is too long
    large = str(error_for_status("upstream", 400, MESSAGES[2][0]))
    assert "budget_tokens=" in large and "single message" in large and "80000" not in large


def test_other_rejections_stay_as_they_were() -> None:
    for message in ("temperature must be <= 2", "unknown model 'x'", "context is fine"):
        err = error_for_status("upstream", 400, message)
        assert type(err) is RequestRejected and "copage:" not in str(err)
    assert type(error_for_status("upstream", 500, MESSAGES[0][0])).__name__ == "UpstreamError"


def test_an_sdks_own_error_gets_a_note_and_keeps_its_type() -> None:
    exc = ValueError("Error code: 400 - " + MESSAGES[0][0])
    note_overflow(exc)
    assert exc.__notes__ and "budget_tokens=1600" in exc.__notes__[0]
    other = ValueError("Error code: 400 - bad temperature")
    note_overflow(other)
    assert not getattr(other, "__notes__", None)
