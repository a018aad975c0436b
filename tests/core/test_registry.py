"""Registries: one "unknown option" checker, one message format, correct plurals, and
PagerConfig checking every name against its registry."""

from __future__ import annotations

from typing import Any

import pytest

from copage.core.bookmarks import get_format
from copage.core.boundaries import get_boundary
from copage.core.config import PagerConfig
from copage.core.keywords import get_extractor
from copage.core.policies import get_policy
from copage.core.registry import UnknownNameError, UnknownOptionError, plural


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: get_policy("lru", bogus=1),
            "unknown option 'bogus' for policy 'lru'; valid options: none",
        ),
        (
            lambda: get_policy("lrfu", a=1, b=2),
            "unknown options 'a', 'b' for policy 'lrfu'; valid options: lam",
        ),
        (
            lambda: get_boundary("fixed_5", x=1),
            "unknown option 'x' for boundary 'fixed_5'; valid options: tokenizer",
        ),
        (
            lambda: get_extractor("random", sed=1),
            "unknown option 'sed' for keyword extractor 'random'; valid options: seed",
        ),
        (
            lambda: get_format("snippet", max=3),
            "unknown option 'max' for bookmark format 'snippet'; valid options: max_words",
        ),
    ],
)
def test_unknown_options_share_one_checker_and_message(build: Any, message: str) -> None:
    with pytest.raises(UnknownOptionError) as info:
        build()
    assert str(info.value) == message


def test_unknown_names_are_pluralised_correctly() -> None:
    with pytest.raises(UnknownNameError, match="valid policies: adaptive"):
        get_policy("nope")
    with pytest.raises(UnknownNameError, match="valid boundaries: segment"):
        get_boundary("nope")
    assert [plural(w) for w in ("policy", "boundary", "key", "store scheme", "class")] == [
        "policies",
        "boundaries",
        "keys",
        "store schemes",
        "classes",
    ]


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("policy", "nope", "policies"),
        ("boundary", "nope", "boundaries"),
        ("keywords", "nope", "keyword extractors"),
        ("bookmark_format", "nope", "bookmark formats"),
        ("tokenizer", "nope", "tokenizers"),
    ],
)
def test_pager_config_checks_names_against_the_registries(
    field: str, value: str, kind: str
) -> None:
    with pytest.raises(UnknownNameError, match=f"valid {kind}: "):
        PagerConfig(**{field: value})


def test_extended_is_a_new_registry_and_leaves_the_old_one_as_it_is() -> None:
    from copage.core.policies import POLICIES

    before = POLICIES.names()
    mine = POLICIES.extended({"mine": lambda **o: get_policy("lru", **o)})
    assert mine is not POLICIES and POLICIES.names() == before and "mine" not in POLICIES
    assert set(mine.names()) == {*before, "mine"} and mine.kind == POLICIES.kind
    assert type(mine.create("mine")).__name__ == "LRUPolicy"
    with pytest.raises(UnknownNameError, match="unknown policy 'nope'; valid policies: .*mine"):
        mine.create("nope")


def test_pager_config_takes_registries_without_storing_or_comparing_them() -> None:
    from copage.core.keywords import EXTRACTORS
    from copage.core.pager import Pager
    from copage.core.policies import POLICIES

    policies = POLICIES.extended({"mine": lambda **o: get_policy("lfu", **o)})
    extractors = EXTRACTORS.extended({"words": lambda **o: get_extractor("heuristic", **o)})
    with pytest.raises(UnknownNameError, match="unknown policy 'mine'"):
        PagerConfig(policy="mine")
    config = PagerConfig(policy="mine", keywords="words", policies=policies,
                         extractors=extractors)
    pager = Pager(config)
    assert type(pager.cache.policy).__name__ == "LFUPolicy"
    assert type(pager.extractor).__name__ == "HeuristicExtractor"
    stored = config.to_dict()
    assert "policies" not in stored and "extractors" not in stored and stored["policy"] == "mine"
    assert PagerConfig.from_dict(stored, like=config) == config
    assert PagerConfig(policy="lru", policies=policies) == PagerConfig(policy="lru")
    with pytest.raises(UnknownNameError):
        PagerConfig.from_dict({"policies": {}})  # not a setting
    with pytest.raises(TypeError, match="policies must be a Registry"):
        PagerConfig(policies={"lru": None})  # type: ignore[arg-type]
    assert "mine" not in POLICIES and "words" not in EXTRACTORS
