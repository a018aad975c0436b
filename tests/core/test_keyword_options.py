"""Each keyword extractor's options are its constructor's keyword parameters: one
check (``copage.core.keywords._made``) instead of a hand-typed list per extractor.

The lists below are the ones the factories typed by hand before, so the check
accepts and names exactly the same options as they did."""

from __future__ import annotations

import inspect

import pytest

from copage.core.keywords import EXTRACTORS, get_extractor
from copage.core.registry import UnknownOptionError

_CONTRAST = ["alpha0", "penalty", "skip_speakers", "z_weight", "rarity", "cue_weight",
             "name_cue", "spread"]
OPTIONS = {
    "random": ["seed"],
    "heuristic": [],
    "tfidf": [],
    "discriminative": ["alpha0", "penalty", "skip_speakers"],
    "generic": [],
    "contrast": _CONTRAST,
    "askable": ["alpha0", "penalty", "skip_speakers", "z_weight", "rarity", "cue_weight",
                "beta", "weights", "name_cue", "spread"],
}


def test_every_extractor_is_listed() -> None:
    assert sorted(EXTRACTORS.names()) == sorted(OPTIONS)


@pytest.mark.parametrize(("name", "valid"), OPTIONS.items())
def test_unknown_option_names_the_valid_ones(name: str, valid: list[str]) -> None:
    with pytest.raises(UnknownOptionError) as info:
        get_extractor(name, bogus=1)
    assert info.value.valid == valid
    shown = ", ".join(valid) if valid else "none"
    assert str(info.value) == (
        f"unknown option 'bogus' for keyword extractor '{name}'; valid options: {shown}")


@pytest.mark.parametrize(("name", "valid"), OPTIONS.items())
def test_valid_options_are_accepted(name: str, valid: list[str]) -> None:
    factory = type(get_extractor(name))
    defaults = {p.name: p.default for p in inspect.signature(factory).parameters.values()}
    assert list(defaults) == valid
    assert type(get_extractor(name, **defaults)) is factory
