"""Fixtures of the adapter tests (the shared conversation is in ``adapter_fixtures``)."""

from __future__ import annotations

import pytest
from adapter_fixtures import TURNS


@pytest.fixture
def turns() -> list[tuple[str, str]]:
    return list(TURNS)
