"""Child process for the kill test: adds turns through PagedMemory on SQLite and
prints an acknowledgement line after each add returns."""

from __future__ import annotations

import sys

from copage import PagedMemory
from copage.stores.sqlite import SQLiteStore


def main() -> None:
    path, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mem = PagedMemory(store=SQLiteStore(path), conversation_id="kill",
                      boundary="fixed_3", policy="lru", resident_pages=2, keywords="tfidf")
    for i in range(start, start + count):
        tid = mem.add("user" if i % 2 == 0 else "assistant", f"turn number {i} about topic {i % 7}")
        if i % 5 == 0 and mem.evicted:
            mem.recall(mem.evicted[0])
        print(f"ack {i} {tid}", flush=True)


if __name__ == "__main__":
    main()
