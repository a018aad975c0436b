"""Ending a turn: committing its answer, or rolling it back; unlocking; its stats.

:meth:`Committer.finish` adds the answer to the turn's open transaction, commits
it, then updates the lookup aids (the transcript index, this worker's
conversation cache and :class:`~copage.server.recognise.Recent`) best-effort: the
turn is acknowledged even if they fail (a lost head only means a transparent
client's next request starts a new conversation), and the lock is released
whatever happens. :meth:`Committer.abort` rolls an uncommitted turn back (the
stored conversation stays as it was; a conversation the turn created is
deleted). The store work here is synchronous: the service runs it in the thread
pool, or inline for a local store and a small turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from copage.memory import PagedMemory
from copage.server.body import Messages
from copage.server.metrics import Metrics
from copage.server.proxy_loop import Outcome
from copage.server.recognise import RQ, Ask, Recent, Seen, request_info
from copage.server.request import ChatCall, Message
from copage.server.transcript import TranscriptIndex, digest, link, tail_of
from copage.session.memcache import MemoryCache
from copage.stores.protocol import PageStore

log = logging.getLogger("copage.server")


@dataclass(slots=True)
class Prep:
    """A prepared turn: its memory, open transaction, held lock and the state before."""

    mem: PagedMemory
    tx: AbstractContextManager[PagedMemory] | None  # None: a replay, nothing to store
    lock: AbstractContextManager[Any]
    created: bool
    head: str  # chain through the request (before the answer)
    before: dict[str, Any]
    mid: dict[str, Any]
    new: tuple[Message, ...] = ()
    raw: Sequence[Any] = ()
    replay: Outcome | None = None
    evicted: tuple[str, ...] | None = None  # before the new messages (when traced)
    trace_id: str = ""  # the turn's OpenTelemetry trace (kept with the answer)


class Committer:
    """Commits or rolls back turns on ``store`` and keeps the lookup aids in step."""

    def __init__(self, store: PageStore, index: TranscriptIndex, cache: MemoryCache,
                 recent: Recent, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.store, self.index, self.cache, self.recent = store, index, cache, recent
        self.metrics, self.clock = metrics, clock

    def release(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                created: bool) -> None:
        """Release ``lock`` (deleting a conversation this turn created)."""
        try:
            if created:
                self.store.delete_conversation(cid, tenant=tenant)
        finally:
            lock.__exit__(None, None, None)

    def release_replay(self, tenant: str, prep: Prep) -> None:
        """A replayed turn ends: the untouched conversation stays cached; unlock."""
        try:
            if not prep.created:
                self.cache.put(prep.mem)
        finally:
            self.release(prep.lock, tenant, prep.mem.conversation_id, prep.created)

    def abort(self, prep: Prep) -> None:
        """Roll the turn back (its transaction) and unlock."""
        try:
            if prep.tx is not None:
                prep.tx.__exit__(RuntimeError, RuntimeError("turn failed"), None)
        finally:
            self.release(prep.lock, prep.mem.tenant, prep.mem.conversation_id, prep.created)

    def finish(self, tenant: str, cid: str, prep: Prep, out: Outcome, call: ChatCall,
               ask: Ask) -> dict[str, Any]:
        """Store the answer, commit, update the lookup aids, unlock; the stats after."""
        assert prep.tx is not None
        try:
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.name, "arguments": c.arguments}}
                     for c in out.tool_calls]
            answer = Message("assistant", out.text, tuple(calls))
            head = link(prep.head, answer)
            rq = request_info(call, ask, prep.new, prep.head, digest(prep.new),
                              out.finish_reason, out.model,
                              (out.prompt_tokens, out.completion_tokens), self.clock())
            rq["kt"] = sum(m.role != "system" for m in prep.new)
            meta: dict[str, Any] = {RQ: rq}
            if prep.trace_id:  # the inspector links the turn to its trace
                meta["trace_id"] = prep.trace_id
            prep.mem.add("assistant", out.text, tool_calls=calls, h=head, **meta)
            after = prep.mem.stats().to_dict()
            prep.tx.__exit__(None, None, None)
        except BaseException:
            self.abort(prep)
            raise
        # Committed: from here on the turn is acknowledged whatever happens, else a
        # client's retry would store it twice. The index and caches are lookup aids.
        try:
            try:
                asked = [m for m in prep.new if m.role != "system"]
                tail = tail_of(asked[-1], answer, call.start) if asked else ""
                self.index.put(tenant, cid, head, prep.head, tail)
            except Exception as e:  # noqa: BLE001 - the turn is committed: acknowledge it
                self.metrics.inc("copage_index_errors_total")
                log.warning("transcript index update failed after a committed turn (%s); "
                            "the conversation's next request may not be recognised",
                            type(e).__name__)
            try:
                self.cache.put(prep.mem)  # only now: a failed turn never leaves it cached
                known = prep.raw.known_prefix() if isinstance(prep.raw, Messages) else None
                if known is not None:
                    self.recent.put(tenant, cid, Seen(known, answer.canonical(), head,
                                                      prep.head, call.who))
                else:
                    self.recent.discard(tenant, cid)
            except Exception as e:  # noqa: BLE001 - as above
                log.warning("conversation cache update failed (%s)", type(e).__name__)
        finally:
            prep.lock.__exit__(None, None, None)
        return after

    @staticmethod
    def stats_now(prep: Prep) -> dict[str, Any]:
        """The ``X-Copage-Stats`` values of a replayed turn (nothing changed)."""
        s = prep.mem.stats()
        return {"pages": s.pages, "resident_pages": len(s.resident),
                "evicted_pages": s.evicted, "recalls": 0, "recalled": [], "filled": [],
                "faults": 0,
                "upstream_calls": 0}

    def stats(self, prep: Prep, out: Outcome, after: dict[str, Any]) -> dict[str, Any]:
        """The turn's ``X-Copage-Stats`` values; counts its metrics."""
        b, m = prep.before, prep.mid
        delta = {k: int(after[k]) - int(b[k]) for k in ("pages", "page_ins", "hits", "evictions")}
        inc = self.metrics.inc
        inc("copage_turns_total")
        inc("copage_pages_total", delta["pages"])
        inc("copage_faults_total", delta["page_ins"])  # recall and speculative page-ins
        inc("copage_hits_total", delta["hits"])
        inc("copage_evictions_total", delta["evictions"])
        inc("copage_recalls_total", len(out.recalls))
        inc("copage_fills_total", int(bool(out.filled)))
        inc("copage_fill_pages_total", len(out.filled))
        # What was sent this turn, as the prompt meter counted it (the fill, bookmarks and
        # tool schemas included), beside the whole conversation rendered the same way;
        # the pager's own figures (mid) leave the fill out.
        pa, pb = after.get("prompt_cache") or {}, b.get("prompt_cache") or {}
        sent = int(pa.get("prompt_tokens", 0)) - int(pb.get("prompt_tokens", 0))
        full = int(pa.get("full_tokens", 0)) - int(pb.get("full_tokens", 0))
        if sent <= 0:  # nothing metered: the pager's figures
            sent, full = int(m["prompt_tokens"]), int(m["full_tokens"])
        inc("copage_prompt_tokens_sent_total", sent)
        inc("copage_prompt_tokens_full_total", full)
        inc("copage_upstream_prompt_tokens_total", out.prompt_tokens)
        inc("copage_upstream_completion_tokens_total", out.completion_tokens)
        # Prompt tokens repeating the previous request's prefix (divide by the next one).
        for key in ("prefix_tokens", "prompt_tokens"):
            inc(f"copage_prompt_cache_{key}_total",
                max(0, int(pa.get(key, 0)) - int(pb.get(key, 0))))
        # ... and their cost with caching priced in, beside full context's (per model)
        ca, cb = pa.get("cost_usd") or {}, pb.get("cost_usd") or {}
        for model, kinds in ca.items():
            for kind in ("paged_cached", "full_cached"):
                spent = float(kinds.get(kind, 0.0)) - float((cb.get(model) or {}).get(kind, 0.0))
                inc("copage_prompt_cache_cost_usd_total", max(0.0, spent), model=model, kind=kind)
        return {
            "pages": after["pages"], "resident_pages": len(after["resident"]),
            "evicted_pages": after["evicted"], "recalls": len(out.recalls),
            "recalled": [r.page for r in out.recalls if r.page],
            "filled": list(out.filled),
            "faults": delta["page_ins"], "upstream_calls": out.calls,
            "prompt_tokens": sent, "full_tokens": full,
            "upstream_prompt_tokens": out.prompt_tokens,
        }
