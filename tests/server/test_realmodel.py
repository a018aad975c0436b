"""One conversation end to end through the proxy to SmolLM2 (llama.cpp), with the openai SDK.

Asserts protocol and bookkeeping only, never answer quality.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from realmodel import LlamaServer, llama_server

from copage.core.config import PagerConfig
from copage.server.app import create_app
from copage.server.settings import ServeSettings
from copage.server.testing import ServerThread

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]
FACTS = ["I am allergic to peanuts.", "My budget is 900 dollars.", "My sister is Maria.",
         "I like hiking in the Alps."]


@pytest.fixture(scope="module")
def real_server() -> Iterator[LlamaServer]:
    with llama_server() as server:
        yield server


def test_conversation_through_proxy(real_server: LlamaServer, tmp_path: Path) -> None:
    settings = ServeSettings(upstream=real_server.base_url, store=f"sqlite://{tmp_path}/r.db",
                             paging=PagerConfig(boundary="fixed_2", resident_pages=1),
                             upstream_timeout=120.0, max_recalls=1)
    with ServerThread(create_app(settings)) as srv:
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
        history: list[dict[str, Any]] = []
        ids, stats = set(), []
        for text in [*FACTS, "What am I allergic to?"]:
            history.append({"role": "user", "content": text})
            raw = client.chat.completions.with_raw_response.create(
                model="smollm2", messages=history, max_tokens=32, temperature=0)
            comp = raw.parse()
            assert comp.choices[0].message.content is not None
            assert comp.usage is not None and comp.usage.prompt_tokens > 0
            ids.add(raw.headers["x-copage-conversation"])
            stats.append(json.loads(raw.headers["x-copage-stats"]))
            history.append({"role": "assistant", "content": comp.choices[0].message.content})
        stream = client.chat.completions.create(model="smollm2", messages=[
            *history, {"role": "user", "content": "Thanks."}], max_tokens=16, stream=True)
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert isinstance(streamed, str)
    assert len(ids) == 1, "transparent mode kept one conversation"
    assert stats[-1]["evicted_pages"] >= 2 and stats[-1]["pages"] >= 4
    assert stats[-1]["prompt_tokens"] > 0 and stats[-1]["upstream_calls"] >= 1
