"""Every option ``copage serve`` parses reaches its settings (``--budget-tokens`` and
``--budget-floor`` were parsed and then silently dropped)."""

from __future__ import annotations

import argparse

import pytest

from copage.cli import serve
from copage.server.settings import build_settings

NOT_SETTINGS = {"help", "log_level", "otel", "command"}


def serve_parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser()
    serve.add_parser(root.add_subparsers(dest="command"))
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["serve"]


def test_every_parsed_option_is_read() -> None:
    dests = {a.dest for a in serve_parser()._actions} - NOT_SETTINGS
    assert dests - set(serve.FLAGS) == set()


@pytest.mark.parametrize(("flag", "value", "field"), [
    ("--budget-tokens", "4000", "budget_tokens"), ("--budget-floor", "1500", "budget_floor"),
    ("--resident-tokens", "3000", "resident_tokens")])
def test_paging_flags_reach_the_pager_config(flag: str, value: str, field: str) -> None:
    args = serve_parser().parse_args(["--upstream", "http://127.0.0.1:9/v1", flag, value])
    flags = {k: getattr(args, k, None) for k in serve.FLAGS}
    assert getattr(build_settings(flags, env={}).paging, field) == int(value)
