"""How long ``copage serve`` takes to exit while the meaning channel is still embedding
a long history (docs/dense.md, "the proxy's wait").

A real ``copage serve`` process at its defaults but for a 4,000-token paging budget and
``COPAGE_DENSE_WAIT=2``, a loopback upstream that echoes, the official ``openai`` SDK:
one request carrying a fact and 2,000 turns of filler, so that the request returns after
its bounded wait while the turns are still being embedded; one second later the process
gets SIGTERM, and the time until it has exited is printed, with the first request's
time, as one JSON line. Needs the encoder's files (``copage dense fetch``). To compare
two checkouts in one session, run it with ``PYTHONPATH=OTHER/src`` for the other.

    python bench/bench_dense_shutdown.py LABEL [--turns 2000] [--wait 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "server"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("label")
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--wait", type=float, default=2.0, help="COPAGE_DENSE_WAIT (seconds)")
    args = ap.parse_args()

    import openai
    from proxy_helpers import KEY_A, free_port, spawn_worker

    from copage.dense import find_model
    from copage.llm.fake_server import FakeServer, echo

    chat = [{"role": "user", "content": "Penicillin gives me a terrible rash."},
            {"role": "assistant", "content": "Noted."}]
    for i in range(args.turns):
        chat.append({"role": "user" if i % 2 == 0 else "assistant",
                     "content": f"Filler line {i} about the weather, trains, lunch and work {i * 7}."})
    chat.append({"role": "user", "content": "Which antibiotic should my doctor avoid?"})
    with tempfile.TemporaryDirectory() as tmp, FakeServer(echo) as up:
        env = {"XDG_CACHE_HOME": tmp, "COPAGE_DENSE": "", "COPAGE_DENSE_MODEL": str(find_model()),
               "COPAGE_DENSE_WAIT": str(args.wait)}
        port = free_port()
        proc = spawn_worker(port, up.url, f"sqlite://{tmp}/p.db", "--budget-tokens", "4000",
                            env=env)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY_A,
                                   timeout=600)
            t = time.monotonic()
            client.chat.completions.create(model="m", messages=chat)  # type: ignore[arg-type]
            first = time.monotonic() - t
            time.sleep(1)
            t = time.monotonic()
            proc.terminate()
            proc.wait(600)
            stopped = time.monotonic() - t
        finally:
            if proc.poll() is None:
                proc.kill()
    print(json.dumps({"label": args.label, "turns": args.turns, "first_request_s": round(first, 1),
                      "exit_after_sigterm_s": round(stopped, 1)}))


if __name__ == "__main__":
    main()
