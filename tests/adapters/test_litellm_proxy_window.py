"""A refused window, learned in LiteLLM's real proxy: ``litellm --config`` as a subprocess
with copage's hook at its defaults (the meaning channel off, to keep it quick), the
official ``openai`` SDK as client, an upstream whose window (4,096 tokens) is far below
copage's paging budget.

The hook cannot send a refused request again (LiteLLM calls the model after it), so the
client gets the first refusal; the hook's failure hook remembers the window, and every
later request, the same one sent again included, is paged to fit it before it goes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")
openai = pytest.importorskip("openai")

from copage.adapters.litellm.proxy_process import MASTER_KEY, MODEL, LiteLLMProxy
from copage.llm.fake_server import FakeServer
from copage.memory import PagedMemory
from copage.stores import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_overflow import FACT, WINDOW, model_tokens, small_window

pytestmark = pytest.mark.slow


def test_the_proxy_remembers_the_refused_window(tmp_path: Path) -> None:
    db = tmp_path / "copage.db"
    history: list[dict[str, Any]] = [{"role": "user", "content": FACT},
                                     {"role": "assistant", "content": "Noted."}]
    for i in range(200):
        history += [{"role": "user", "content": f"Small talk {i}: the weather, the trains."},
                    {"role": "assistant", "content": f"Sure, {i}."}]
    question = {"role": "user", "content": "Where does my sister live?"}
    with FakeServer(small_window) as up, LiteLLMProxy(
            tmp_path, up.url, env={"COPAGE_STORE": f"sqlite:///{db}",
                                   "COPAGE_DENSE": "off"}) as proxy:
        client = openai.OpenAI(base_url=proxy.url, api_key=MASTER_KEY, max_retries=0,
                               timeout=60)

        def ask(message: dict[str, Any]) -> str:
            r = client.chat.completions.create(model=MODEL, messages=[*history, message],
                                               user="lt-window")
            answer = r.choices[0].message.content or ""
            history.extend([message, {"role": "assistant", "content": answer}])
            return answer

        with pytest.raises(openai.BadRequestError, match="context size"):
            ask(question)
        refused = len(up.received)
        assert ask(question) == "Ana lives in Porto."  # the same request, paged to fit
        for i in range(10):
            ask({"role": "user", "content": f"News {i}: " + "the bridge and the tram. " * 20})
        sizes = [model_tokens(b) for b in up.received]
        second = up.received[refused]["messages"]
    assert all(n > WINDOW for n in sizes[:refused])  # LiteLLM's own retries, if any
    assert len(sizes) == refused + 11 and all(n <= WINDOW for n in sizes[refused:])
    assert "Porto" in " ".join(str(m["content"]) for m in second)  # the fill found the fact
    mem = PagedMemory(store=open_store(f"sqlite:///{db}"), conversation_id="lt-window",
                      create=False)
    assert mem.evicted and len(mem.turns) == 402 + 22  # the refused turn stored nothing
