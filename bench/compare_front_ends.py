"""What the model receives through PagedChat, the proxy and the LangChain middleware.

One LoCoMo conversation (speaker A as the user, speaker B's replies as the model's
answers, from a loopback fake OpenAI server) is played turn by turn through each front
end at its defaults: ``PagedChat`` (``openai:`` model at the fake server), ``copage serve``
(a real process, ``--store memory://``, the ``openai`` SDK resending the whole history),
and ``create_agent`` with ``CopageMiddleware()`` and ``ChatOpenAI`` (checkpointer, only
the new message per turn); then one question. The last upstream request of each is
compared message by message: one runtime (docs/architecture.md) means they are equal.

Run: ``PYTHONPATH=src .venv/bin/python bench/compare_front_ends.py [--pairs 80]
[--stream] [--mode tool]``. Prints each front end's request size and every difference
(none: "same messages").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from openai import OpenAI

from copage import PagedChat, PagedMemory
from copage.llm.fake_server import FakeServer, Reply

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo"
QUESTION = "When did Caroline go to the LGBTQ support group?"


def pairs_of(path: Path, n: int) -> tuple[str, list[tuple[str, str]]]:
    """The system prompt and (user, answer) pairs of the file's first conversation."""
    conv = json.loads(path.read_text())[0]["conversation"]
    a, b = conv["speaker_a"], conv["speaker_b"]
    out: list[tuple[str, str]] = []
    sessions = sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                      key=lambda k: int(k.split("_")[1]))
    for key in sessions:
        user: list[str] = []
        said: list[str] = []
        for t in conv[key]:
            if t["speaker"] == a:
                if said:
                    out.append((" ".join(user), " ".join(said)))
                    user, said = [], []
                user.append(t["text"])
            else:
                said.append(t["text"])
        if user and said:
            out.append((" ".join(user), " ".join(said)))
    return f"You are {b}, chatting with {a}.", [p for p in out if p[0].strip()][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=80)
    ap.add_argument("--data", default=str(DATA / "locomo-sample.json"))
    ap.add_argument("--stream", action="store_true", help="every front end streams")
    ap.add_argument("--mode", default=None, help="recall mode (default: each one's default)")
    args = ap.parse_args()
    system, pairs = pairs_of(Path(args.data), args.pairs)
    turns = [u for u, _ in pairs] + [QUESTION]
    answers = [a.strip() for _, a in pairs]
    mode = {} if args.mode is None else {"recall_mode": args.mode}
    n = {"i": 0}

    def responder(body: dict[str, Any]) -> Reply:
        i, n["i"] = n["i"], n["i"] + 1
        return Reply(text=answers[i] if i < len(answers) else "In May.")

    def paged_chat(url: str) -> None:
        mem = PagedMemory()
        mem.add("system", system)
        chat = PagedChat(mem, f"openai:m@{url}", **mode)

        async def run() -> None:
            for u in turns:
                if args.stream:
                    async with chat.stream(u) as turn:
                        async for _ in turn.text():
                            pass
                else:
                    await chat.send(u)

        asyncio.run(run())

    def proxy(url: str) -> None:
        port = 9000 + os.getpid() % 1000
        extra = ["--recall-mode", args.mode] if args.mode else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "copage.cli.main", "serve", "--upstream", url, "--port",
             str(port), "--store", "memory://", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    httpx.get(f"http://127.0.0.1:{port}/healthz")
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
            history: list[dict[str, Any]] = [{"role": "system", "content": system}]
            for u in turns:
                history.append({"role": "user", "content": u})
                if args.stream:
                    stream = client.chat.completions.create(model="m", messages=history,  # type: ignore[arg-type]
                                                            stream=True)
                    text = "".join(c.choices[0].delta.content or "" for c in stream
                                   if c.choices)
                else:
                    r = client.chat.completions.create(model="m", messages=history)  # type: ignore[arg-type]
                    text = r.choices[0].message.content or ""
                history.append({"role": "assistant", "content": text})
        finally:
            proc.terminate()
            proc.wait()

    def langchain(url: str) -> None:
        from langchain.agents import create_agent
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.memory import InMemorySaver

        from copage.adapters.langchain import CopageMiddleware

        model = ChatOpenAI(model="m", base_url=url, api_key="k", temperature=0)
        agent = create_agent(model, middleware=[CopageMiddleware(**mode)], system_prompt=system,
                             checkpointer=InMemorySaver())
        cfg = {"configurable": {"thread_id": "t"}}
        for u in turns:
            msg = {"messages": [{"role": "user", "content": u}]}
            if args.stream:
                for _ in agent.stream(msg, cfg, stream_mode="messages"):  # type: ignore[arg-type]
                    pass
            else:
                agent.invoke(msg, cfg)  # type: ignore[arg-type]

    sent = {}
    for name, run in (("PagedChat", paged_chat), ("proxy", proxy), ("LangChain", langchain)):
        n["i"] = 0
        with FakeServer(responder=responder) as up:
            run(up.url)
            sent[name] = [(m["role"], m.get("content")) for m in up.received[-1]["messages"]]
    base = sent["PagedChat"]
    filled = any("paged in for it" in str(c) for _, c in base)
    print(f"{args.pairs} pairs + 1 question, stream={args.stream}, mode={args.mode or 'default'}"
          f"; the question's request: {len(base)} messages, speculative fill: {filled}")
    for name, msgs in sent.items():
        diffs = [i for i, (x, y) in enumerate(zip(base, msgs, strict=False)) if x != y]
        same = not diffs and len(msgs) == len(base)
        print(f"  {name:10s} {len(msgs)} messages: "
              + ("same messages" if same else f"differs at {diffs[:5]} (len {len(msgs)})"))


if __name__ == "__main__":
    main()
