"""FillSettings: the speculative fill's options as one object, and PagedChat's older knobs."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from session_helpers import new_memory

import copage
from copage.llm.scripted import ScriptedModel
from copage.session import FillSettings, PagedChat, Speculator
from copage.session.speculate import (
    DEFAULT_PAGES,
    DEFAULT_RELATIVE,
    DEFAULT_THRESHOLD,
    DEFAULT_TOKENS,
)

QUESTION = "Is the dentist in Zurich before Maria turns forty, and is my laptop budget enough?"


def _options(spec: Speculator) -> tuple[object, ...]:
    return (spec.threshold, spec.tokens, spec.pages, spec.relative, spec.neighbours, spec.unit,
            spec.question_threshold, spec.question_rule, spec.whole, spec.dense)


def test_defaults_are_the_old_defaults() -> None:
    fill = FillSettings()
    assert (fill.threshold, fill.tokens, fill.pages, fill.relative, fill.neighbours) == (
        DEFAULT_THRESHOLD, DEFAULT_TOKENS, DEFAULT_PAGES, DEFAULT_RELATIVE, 0)
    defaults = inspect.signature(Speculator).parameters
    assert {f.name: f.default for f in dataclasses.fields(FillSettings)} == {
        **{name: defaults[name].default for name in ("threshold", "tokens", "pages",
                                                     "relative", "neighbours")},
        "dense": "default"}
    # copage's default meaning channel: off here (the tests pin COPAGE_DENSE=off; with the
    # model's files installed it is on: tests/dense/test_default_channel.py)
    assert fill.dense == "default" and fill.speculator().dense is None
    chat = PagedChat(new_memory(), ScriptedModel())
    assert chat.fill == fill
    assert _options(chat._speculator) == _options(Speculator())


def test_it_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FillSettings().tokens = 5  # type: ignore[misc]


@pytest.mark.parametrize("option", ["threshold", "tokens", "pages", "relative", "neighbours"])
def test_old_keywords_map_onto_it(option: str) -> None:
    value = {"threshold": 0.5, "tokens": 512, "pages": 2, "relative": 0.25, "neighbours": 1}[option]
    old = PagedChat(new_memory(), ScriptedModel(), **{f"speculative_{option}": value})
    new = PagedChat(new_memory(), ScriptedModel(), fill=FillSettings(**{option: value}))
    assert old.fill == new.fill == dataclasses.replace(FillSettings(), **{option: value})
    assert _options(old._speculator) == _options(new._speculator)
    mem = new_memory()
    assert old._speculator.plan(mem, QUESTION) == new._speculator.plan(mem, QUESTION)


def test_fill_and_an_old_keyword_together_are_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"fill=.*speculative_tokens"):
        PagedChat(new_memory(), ScriptedModel(), fill=FillSettings(), speculative_tokens=1024)


def test_fill_must_be_fill_settings() -> None:
    with pytest.raises(TypeError, match="fill must be a FillSettings"):
        PagedChat(new_memory(), ScriptedModel(), fill={"tokens": 5})  # type: ignore[arg-type]


def test_fill_is_used_by_the_chat() -> None:
    chat = PagedChat(new_memory(), ScriptedModel(), fill=FillSettings(tokens=0))
    assert chat._speculator.tokens == 0
    assert chat.speculator is chat._speculator  # speculative is the default mode


def test_exported() -> None:
    assert copage.FillSettings is FillSettings
    assert "FillSettings" in copage.__all__
