"""MCP append_turns names exactly the pages the call evicted, and the counts are right.

append_turns finds them among the pages resident before the call and those it closed
(not by listing every evicted page before and after); checked against that listing
on random appends, with several policies and with a page recalled in between.
"""

from __future__ import annotations

import random
import re

import pytest

pytest.importorskip("mcp")

from copage.adapters.mcp import ConversationPool
from copage.adapters.mcp import handlers as tools
from copage.core.config import PagerConfig


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("policy", ["lru", "fifo", "lfu"])
def test_append_turns_names_the_pages_it_evicted(seed: int, policy: str) -> None:
    rng = random.Random(seed)
    pool = ConversationPool("memory://", PagerConfig(boundary="fixed_2", policy=policy,
                                                     resident_pages=rng.choice([1, 2, 3]),
                                                     keywords="heuristic"))
    n = 0
    for _ in range(15):
        with pool.use("c", tenant="default", create=True) as mem:
            before = set(mem.evicted)
            if before and rng.random() < 0.3:  # a page paged in between the calls
                mem.access(rng.choice(sorted(before)))
                before = set(mem.evicted)
        batch = [("user" if (n + i) % 2 == 0 else "assistant", f"turn {n + i} about w{n + i}")
                 for i in range(rng.randint(1, 9))]
        n += len(batch)
        out = tools.append_turns(pool, "default", "c", batch)
        with pool.use("c", tenant="default") as mem:
            want = [p for p in mem.evicted if p not in before]
            named = re.findall(r"^\[(p\d+):", out.split("recall_page reads one):\n")[-1],
                               re.MULTILINE) if want else []
            assert named == want, out
            assert ("Pages evicted by this call" in out) == bool(want)
            assert (f"{len(mem.turns)} turns, {len(mem.pages)} pages ({len(mem.resident)} "
                    f"resident, {len(mem.evicted)} evicted)") in out
