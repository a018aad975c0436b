"""Test helpers: a pytest fixture that forbids network model calls.

Load it from a ``conftest.py`` with ``pytest_plugins = ["copage.llm.testing"]``:
every test then runs with non-loopback model calls refused (local fake servers
on 127.0.0.1 still work). A test that needs the network can clear
``COPAGE_FORBID_NETWORK_MODELS`` itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from copage.llm.guard import ENV_VAR


@pytest.fixture(autouse=True)
def _copage_forbid_network_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Autouse: refuse real (non-loopback) model calls during every test."""
    monkeypatch.setenv(ENV_VAR, "1")
    yield
