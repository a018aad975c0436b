"""``--budget-tokens`` / ``--budget-floor``: the default paging's budget from the command
line (a model with a small context window needs a smaller one)."""

from __future__ import annotations

import argparse

from copage.cli.paging_args import add_paging_options, paging_settings
from copage.core.config import PagerConfig
from copage.server.settings import build_settings


def test_budget_flags_reach_the_paging_of_new_conversations() -> None:
    parser = argparse.ArgumentParser()
    add_paging_options(parser)
    args = parser.parse_args(["--budget-tokens", "4000", "--budget-floor", "1000"])
    paging = paging_settings(args)
    assert paging == {"budget_tokens": 4000, "budget_floor": 1000}
    config = PagerConfig(**paging)
    assert (config.budget_tokens, config.budget_floor) == (4000, 1000)
    settings = build_settings({"upstream": "http://127.0.0.1:9/v1", **paging}, env={})
    assert settings.paging.budget_tokens == 4000 and settings.paging.budget_floor == 1000
    assert "--budget-tokens" in parser.format_help()
