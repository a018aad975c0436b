"""Fixtures of the LLM keyword generator tests."""

from __future__ import annotations

from copage.llm.testing import _copage_forbid_network_models  # noqa: F401  (autouse fixture)
