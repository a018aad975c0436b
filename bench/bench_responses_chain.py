"""Time per request of a Responses API client that sends only the new input with
``previous_response_id`` (the openai SDK against ``copage serve`` in a thread, SQLite
store, the scripted loopback upstream), by conversation length.

    python bench/bench_responses_chain.py --turns 400
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import openai

from copage.llm.fake_server import FakeServer, echo
from copage.server.app import create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=400)
    ap.add_argument("--window", type=int, default=20, help="requests averaged per point")
    args = ap.parse_args()
    with FakeServer(echo, record=False) as up, tempfile.TemporaryDirectory() as d:
        app = create_app(ServeSettings(upstream=up.url, store=f"sqlite://{d}/b.db"))
        with ServerThread(app) as srv:
            c = openai.OpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0)
            prev = None
            times = []
            for i in range(args.turns):
                t0 = time.perf_counter()
                r = c.responses.create(model="m", input=f"turn {i} " + "words " * 30,
                                       previous_response_id=prev)
                times.append(time.perf_counter() - t0)
                prev = r.id
    print("turn   median ms per request (window of", args.window, "requests)")
    for start in range(0, args.turns, max(args.window, args.turns // 5)):
        part = times[start:start + args.window]
        print(f"{start:>4}   {statistics.median(part) * 1000:.1f}")


if __name__ == "__main__":
    main()
