"""Child process for the crash test: append turns forever, acknowledging each commit.

Usage: python crash_child.py URL CONVERSATION_ID
Prints ``ready <seq>`` once open, then ``ack <seq> <version>`` after each commit returns.
"""

from __future__ import annotations

import sys

from copage.core.types import Turn
from copage.stores import ChangeSet, Event, open_store


def turn_text(seq: int) -> str:
    """The exact text of turn ``seq`` (the parent checks it)."""
    return f"turn {seq}: ünïcödé ✓ " + "x" * (seq % 97)


def main(url: str, cid: str) -> None:
    store = open_store(url)
    if not store.exists(cid):
        store.create_conversation(cid, {"crash": True})
    conv = store.load(cid)
    seq, version = len(conv.turns), conv.version
    print(f"ready {seq}", flush=True)
    while True:
        change = ChangeSet(
            turns=[(seq, Turn(f"t{seq}", "user", turn_text(seq)))],
            events=[Event(seq, seq, "hit", 0, {"n": seq})],
            state={"n": seq + 1, "pad": "s" * 512},
        )
        version = store.commit(cid, change, expected_version=version)
        print(f"ack {seq} {version}", flush=True)
        seq += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
