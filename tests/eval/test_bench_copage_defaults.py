"""``bookmark_recall+copage`` is copage's defaults: PagerConfig() and PagedChat's default
recall mode, its speculative fill given the room left, nothing over the budget.

The scripted model is a test tool: it shows what reaches the model, never its quality.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_methods import PAD, SETTINGS, _conv

from copage.core.config import PagerConfig
from copage.eval.methods import MethodSettings, Variant, get_method
from copage.eval.methods.bookmark_pages import pager_config
from copage.llm import ScriptedModel
from copage.session import DEFAULT_RECALL_MODE, parse_mode
from copage.session.speculate import FILL_HEADER

BUDGET = 1200


def test_copage_variant_is_the_library_defaults_and_the_default_mode() -> None:
    variant = get_method("bookmark_recall+copage").variant  # type: ignore[attr-defined]
    assert parse_mode(variant.mode) == parse_mode(DEFAULT_RECALL_MODE)
    cfg, lib = pager_config(SETTINGS, variant, 300), PagerConfig()
    assert (cfg.boundary, cfg.policy, cfg.keywords, cfg.index, cfg.index_tokens) == (
        lib.boundary, lib.policy, lib.keywords, lib.index, lib.index_tokens)
    assert pager_config(replace(SETTINGS, copage_keywords="heuristic"), variant).keywords == \
        "heuristic"
    paper = pager_config(SETTINGS, get_method("bookmark_recall").variant)  # type: ignore[attr-defined]
    assert (paper.boundary, paper.keywords, paper.index) == ("session", "heuristic", "flat")


def test_variant_of_mode_round_trips() -> None:
    for mode in ("tool", "speculative", "speculative+tool", "choose+tool", "none",
                 "speculative+choose"):
        assert parse_mode(Variant.of_mode(mode).mode) == parse_mode(mode)


@pytest.mark.parametrize("budget", [BUDGET, 2048])
def test_the_fill_uses_its_room_and_nothing_goes_over(budget: int) -> None:
    conv = _conv(PAD)
    settings = MethodSettings(budget=budget, window=5, boundary="fixed_5",
                              speculative_threshold=0.0)
    prep = get_method("bookmark_recall+copage").prepare(conv, settings)
    assert prep.fill > 0  # type: ignore[attr-defined]
    for probe in conv.probes:
        for trigger in ("never", "rule", "oracle"):
            built = prep.build(probe, trigger)
            assert built.prompt_tokens <= budget
            assert not (built.limit or "").startswith("does not fit")
            fills = [m for m in built.messages if str(m.get("content", "")).startswith(FILL_HEADER)]
            if not prep.speculator.ranked(prep.pager, probe.question):  # type: ignore[attr-defined]
                assert not fills  # "Xylophone?" matches no page
                continue
            assert len(fills) == 1 and built.messages[-2] is fills[0]
            assert 0 < built.parts.get("paged_in", 0)
            allowance = prep.fill_allowance(probe.question)  # type: ignore[attr-defined]
            assert prep.fill <= allowance  # type: ignore[attr-defined]  (the plan's, at least)
            assert prep.speculation(probe.question).tokens <= allowance  # type: ignore[attr-defined]


async def test_offline_view_is_what_the_model_run_sends() -> None:
    conv = _conv(PAD)
    settings = MethodSettings(budget=BUDGET, window=5, boundary="fixed_5", max_tokens=None)
    prep = get_method("bookmark_recall+copage").prepare(conv, settings)
    for probe in conv.probes:
        built = prep.build(probe, "never")
        model = ScriptedModel().reply("x")
        await prep.answer(probe, model)
        sent = model.requests[0]
        assert list(sent.messages) == built.messages
        assert list(sent.tools or []) == list(built.tools)
