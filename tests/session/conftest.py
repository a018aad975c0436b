"""Fixtures of the session tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from collections.abc import Iterator

import pytest
from realmodel import LlamaServer, llama_server


@pytest.fixture(scope="session")
def real_server() -> Iterator[LlamaServer]:
    """The local llama.cpp server (skipped, or failed under COPAGE_REQUIRE_REALMODEL=1)."""
    with llama_server() as server:
        yield server
