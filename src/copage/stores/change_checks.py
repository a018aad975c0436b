"""Checks every store applies to a ChangeSet before writing it (so all stores agree)."""

from __future__ import annotations

from copage.stores.protocol import ChangeSet, StoreError


class InvalidChange(StoreError, ValueError):
    """A ChangeSet that does not fit the stored conversation (nothing was written)."""


def where(conversation_id: str, tenant: str) -> str:
    """How errors name a conversation."""
    return f"conversation {conversation_id!r} (tenant {tenant!r})"


def check_change(change: ChangeSet, n_turns: int, n_pages: int, name: str,
                 last_paged_seq: int = -1) -> None:
    """Turns and pages must continue the stored ones without gaps; event seqs must be unique;
    a truncation removes only turns that no stored page holds (``last_paged_seq``: the
    last turn seq of the stored pages, -1 for none; with ``drop_pages``, of the pages
    that stay).

    Raises:
        InvalidChange: naming the conversation and the offending seq or index.
    """
    if change.drop_pages is not None:
        if not 0 <= change.drop_pages <= n_pages:
            raise InvalidChange(
                f"commit to {name}: cannot remove the pages from index {change.drop_pages}: "
                f"{n_pages} pages are stored")
        n_pages = change.drop_pages
    if change.drop_events is not None and change.drop_events < 0:
        raise InvalidChange(f"commit to {name}: cannot remove events from seq "
                            f"{change.drop_events}")
    if change.truncate is not None:
        if not last_paged_seq < change.truncate <= n_turns:
            raise InvalidChange(
                f"commit to {name}: cannot remove the turns from seq {change.truncate}: "
                f"{n_turns} turns are stored, pages hold them up to seq {last_paged_seq}")
        n_turns = change.truncate
    for i, (seq, _) in enumerate(change.turns):
        if seq != n_turns + i:
            raise InvalidChange(
                f"commit to {name}: turn seq {seq} but the next seq is {n_turns + i} "
                f"(turns are append-only and contiguous)"
            )
    for i, page in enumerate(change.pages):
        if page.index != n_pages + i:
            raise InvalidChange(
                f"commit to {name}: page index {page.index} but the next index is {n_pages + i}"
            )
        if page.first_seq > page.last_seq:
            raise InvalidChange(
                f"commit to {name}: page {page.index} has first_seq {page.first_seq} "
                f"> last_seq {page.last_seq}"
            )
    seen: set[int] = set()
    for ev in change.events:
        if ev.seq in seen:
            raise InvalidChange(f"commit to {name}: event seq {ev.seq} appears twice")
        seen.add(ev.seq)
