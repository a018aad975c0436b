"""The first question a new user asks a memory, through every client copage serves.

"By the way, my sister Ana moved to Porto last spring." is said once, then 300 turns
of a real LoCoMo chat, then "Where does my sibling live these days?" (other words
than the fact). Each client runs at copage's defaults:

* ``proxy``: the openai SDK (Chat Completions and the Responses API) and the
  anthropic SDK (Messages, whole and streamed) through a running ``copage serve``;
  prints the pages the fill showed (``X-Copage-Stats``) and the answer;
* ``langchain``: ``create_agent`` with ``CopageMiddleware`` and ``ChatOpenAI`` against
  the model server; prints, per model call, whether "Porto" is in what was sent;
* ``agents``: the OpenAI Agents SDK with ``CopageSession`` and its ``run_config()``;
* ``mcp``: ``copage mcp`` over stdio with the SDK's client: the 300-turn chat (within
  the paging budget: no page evicted), then 2,400 turns (past it), each followed by
  ``search_pages`` with the question, twice (20 s apart: the search by meaning reads
  the turns in the background).

    pip install 'copage[server,langchain,agents,mcp]' langchain-openai
    python scripts/e2e-first-question.py LOCOMO.json --proxy 8787 --model-server 8091

A real model server (``scripts/serve-qwen.sh``) answers; with SmolLM2 it proves the
path, not quality. Not a test: it prints what it saw (docs/dense.md has a run).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from typing import Any

from copage.eval.datasets import load_dataset

FACT = "By the way, my sister Ana moved to Porto last spring."
QUESTION = "Where does my sibling live these days?"


def chat(path: str, n_turns: int) -> list[dict[str, str]]:
    """The fact, ``n_turns`` turns of the file's conversations, then the question."""
    out = [{"role": "user", "content": FACT},
           {"role": "assistant", "content": "Good to know, thanks for telling me."}]
    turns = (t for conv in load_dataset(path, seed=0).conversations for t in conv.turns)
    for t in itertools.islice(turns, n_turns):
        out.append({"role": "user" if len(out) % 2 == 0 else "assistant", "content": t.text})
    if out[-1]["role"] == "user":
        out.append({"role": "assistant", "content": "I see."})
    return [*out, {"role": "user", "content": QUESTION}]


def proxy(msgs: list[dict[str, str]], port: int) -> None:
    import anthropic
    import openai

    tag = str(int(time.time()))

    def show(name: str, raw: Any, text: str, t0: float) -> None:
        st = json.loads(raw.headers.get("x-copage-stats", "{}"))
        print(f"{name}: filled {st.get('filled')} evicted {st.get('evicted_pages')} "
              f"answer {text[:100]!r} ({time.time() - t0:.1f} s)", flush=True)

    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=2,
                      timeout=600)
    t0 = time.time()
    raw: Any = c.chat.completions.with_raw_response.create(
        model="m", messages=msgs, max_tokens=40,  # type: ignore[arg-type]
        extra_headers={"X-Copage-Conversation": f"chat-{tag}"})
    show("openai chat.completions", raw, raw.parse().choices[0].message.content or "", t0)
    t0 = time.time()
    raw = c.responses.with_raw_response.create(
        model="m", input=msgs, max_output_tokens=40,  # type: ignore[arg-type]
        extra_headers={"X-Copage-Conversation": f"responses-{tag}"})
    show("openai responses", raw, raw.parse().output_text, t0)
    a = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="k", max_retries=2,
                            timeout=600)
    t0 = time.time()
    raw = a.messages.with_raw_response.create(
        model="m", max_tokens=40, messages=msgs,  # type: ignore[arg-type]
        extra_headers={"X-Copage-Conversation": f"messages-{tag}"})
    show("anthropic messages", raw,
         "".join(b.text for b in raw.parse().content if b.type == "text"), t0)
    t0 = time.time()
    with a.messages.stream(model="m", max_tokens=40, messages=msgs,  # type: ignore[arg-type]
                           extra_headers={"X-Copage-Conversation": f"stream-{tag}"}) as s:
        text = "".join(s.text_stream)
    print(f"anthropic messages.stream: answer {text[:100]!r} ({time.time() - t0:.1f} s)")


def langchain(msgs: list[dict[str, str]], port: int) -> None:
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_openai import ChatOpenAI

    from copage.adapters.langchain import CopageMiddleware

    class Seen(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
            sent = " ".join(str(m.content) for m in messages[0])
            print(f"  model call: {len(messages[0])} messages, 'Porto' sent: {'Porto' in sent}")

    model = ChatOpenAI(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k",  # type: ignore[arg-type]
                       max_tokens=40, max_retries=2, timeout=600)  # type: ignore[call-arg]
    db = tempfile.mkdtemp() + "/lc.db"
    agent = create_agent(model, tools=[], middleware=[CopageMiddleware(f"sqlite:///{db}")])
    t0 = time.time()
    out = agent.invoke({"messages": msgs},  # type: ignore[arg-type]
                       config={"configurable": {"thread_id": "t"}, "callbacks": [Seen()]})
    print(f"langchain: answer {str(out['messages'][-1].content)[:100]!r} ({time.time() - t0:.1f} s)")


def agents(msgs: list[dict[str, str]], port: int) -> None:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, set_tracing_disabled
    from openai import AsyncOpenAI

    from copage.adapters.agents import CopageSession

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=2,
                         timeout=600)
    agent = Agent(name="a", instructions="Answer briefly.",
                  model=OpenAIChatCompletionsModel(model="m", openai_client=client),
                  model_settings=ModelSettings(max_tokens=40))

    async def run() -> None:
        session = CopageSession("s", f"sqlite:///{tempfile.mkdtemp()}/ag.db")
        await session.add_items(msgs[:-1])  # type: ignore[arg-type]
        t0 = time.time()
        try:
            r = await session.run(agent, QUESTION, run_config=session.run_config())
            print(f"agents sdk: answer {str(r.final_output)[:100]!r} ({time.time() - t0:.1f} s)")
        finally:
            await client.close()  # inside the loop: not left to the garbage collector
    asyncio.run(run())


def mcp(path: str) -> None:
    from mcp import Client, StdioServerParameters

    db = f"{tempfile.mkdtemp()}/mcp.db"
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "copage.cli.main", "mcp", "--store", f"sqlite://{db}"])

    def text(r: Any) -> str:
        return "\n".join(c.text for c in r.content)

    async def run() -> None:
        async with Client(server) as client:
            for cid, n in (("short", 300), ("long", 2398)):
                turns = chat(path, n)[:-1]
                for i in range(0, len(turns), 500):
                    r = await client.call_tool("append_turns", {"conversation": cid,
                                                                "turns": turns[i:i + 500]})
                    print(text(r).splitlines()[0])
                for wait in (0, 20):
                    await asyncio.sleep(wait)
                    t0 = time.time()
                    r = await client.call_tool("search_pages", {"conversation": cid,
                                                                "query": QUESTION})
                    print(f"search_pages after {wait} s more ({time.time() - t0:.1f} s):\n"
                          f"{text(r)}")
    asyncio.run(run())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("locomo", help="a LoCoMo-format file (its conversations give the chat)")
    p.add_argument("--proxy", type=int, help="port of a running copage serve")
    p.add_argument("--model-server", type=int, help="port of an OpenAI-compatible model server")
    p.add_argument("--only", default="proxy,langchain,agents,mcp")
    args = p.parse_args()
    msgs = chat(args.locomo, 300)
    for part in args.only.split(","):
        if part == "proxy" and args.proxy:
            proxy(msgs, args.proxy)
        elif part == "langchain" and args.model_server:
            langchain(msgs, args.model_server)
        elif part == "agents" and args.model_server:
            agents(msgs, args.model_server)
        elif part == "mcp":
            mcp(args.locomo)


if __name__ == "__main__":
    main()
