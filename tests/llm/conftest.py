"""Shared helpers of the model-layer tests."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from copage.llm.testing import _copage_forbid_network_models  # noqa: F401  (autouse fixture)

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "sk-test-SECRET-0123456789abcdef"
RECALL_TOOL = {
    "type": "function",
    "function": {
        "name": "recall",
        "description": "Bring an evicted page back into context.",
        "parameters": {
            "type": "object",
            "properties": {"page": {"type": "string", "description": "page id, e.g. p3"}},
            "required": ["page"],
        },
    },
}


def fixture(name: str) -> Any:
    """A JSON fixture from ``tests/llm/fixtures``."""
    return json.loads((FIXTURES / name).read_text())


class Sleeps:
    """A fake sleep that records delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


SleepFn = Callable[[float], Awaitable[None]]
