"""What the MCP tools do, as synchronous functions over a :class:`ConversationPool`.

Each returns the text the client's model reads. Bad arguments raise
:class:`ToolInputError`, whose message tells the model what to send instead; the
server turns it into an MCP tool error (``isError``), never a crash.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from copage.adapters._pool import ConversationPool
from copage.core import prompt
from copage.core.dense_rank import DenseRanker
from copage.core.text import index_terms, query_terms
from copage.core.types import page_id, page_index, parse_page_arg, render_turns
from copage.dense.default_channel import WAIT_SECONDS
from copage.ids import CONVERSATION_ID_RULE, is_conversation_id
from copage.memory import PagedMemory
from copage.stores.protocol import ConversationNotFound

MAX_TURNS_PER_CALL = 500
MAX_TURN_CHARS = 200_000
MAX_LIMIT = 200
ROLES = ("user", "assistant")

log = logging.getLogger("copage.mcp")

OPEN_PAGE = "The open page {page} (the latest {turns} turn(s), not closed into a page yet)"
"""How the open page is named to the client (recall_page reads it by that id)."""
PENDING = ("\n(The search by meaning is still reading this conversation's {turns:,} turns; "
           "search again in a minute to also get the page closest in meaning.)")


class ToolInputError(ValueError):
    """Arguments the tool cannot use; the message is meant for the calling model."""


def check_conversation_id(conversation: object) -> str:
    """The id, or :class:`ToolInputError` (the rule of :mod:`copage.ids`)."""
    if not is_conversation_id(conversation):
        raise ToolInputError(
            f"conversation must be an id of {CONVERSATION_ID_RULE} (such as "
            f"\"trip-planning\"); got {str(conversation)[:60]!r}.")
    assert isinstance(conversation, str)
    return conversation


def unknown_conversation(pool: ConversationPool, tenant: str, conversation: str) -> ToolInputError:
    known = [c.id for c in sorted(pool.store.list_conversations(tenant=tenant),
                                  key=lambda c: -c.updated_at)]
    shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
    hint = f" Known conversations: {shown}." if known else " No conversation is stored yet."
    return ToolInputError(f"unknown conversation {conversation!r}.{hint}")


def bookmarks_resource(pool: ConversationPool, tenant: str, conversation: str) -> str:
    """The bookmarks resource: the evicted pages' bookmarks of one conversation."""
    cid = check_conversation_id(conversation)
    try:
        with pool.use(cid, tenant=tenant) as mem:
            return bookmarks_text(mem)
    except ConversationNotFound:
        raise unknown_conversation(pool, tenant, cid) from None


def _counts(mem: PagedMemory) -> str:
    pages, resident = len(mem.pages), len(mem.resident)  # closed pages: resident or evicted
    return (f"{len(mem.turns)} turns, {pages} pages "
            f"({resident} resident, {pages - resident} evicted)")


def append_turns(pool: ConversationPool, tenant: str, conversation: str,
                 turns: Sequence[tuple[str, str]], *, dense: DenseRanker | None = None) -> str:
    """Append ``(role, text)`` turns (one atomic change); creates the conversation.

    With ``dense`` (the meaning channel) and pages closed, the closed turns not yet
    embedded start being embedded in the background (nothing waits for it), so a later
    :func:`search_pages` finds them ready instead of embedding a long history itself.
    """
    cid = check_conversation_id(conversation)
    if not turns:
        raise ToolInputError("turns is empty: give at least one {\"role\", \"content\"} turn.")
    if len(turns) > MAX_TURNS_PER_CALL:
        raise ToolInputError(f"at most {MAX_TURNS_PER_CALL} turns per call; got {len(turns)}. "
                             "Split them over several calls.")
    for i, (role, text) in enumerate(turns):
        if role not in ROLES:
            raise ToolInputError(f"turn {i}: role must be one of {', '.join(ROLES)}; got {role!r}.")
        if len(text) > MAX_TURN_CHARS:
            raise ToolInputError(f"turn {i} is {len(text)} characters; the limit is "
                                 f"{MAX_TURN_CHARS}.")
    with pool.use(cid, tenant=tenant, create=True) as mem:
        # appending pages nothing in: the pages it evicts were resident before or closed
        # by it (found without listing every evicted page: the cost stays flat)
        maybe = set(mem.resident)
        closed = len(mem.pages)
        try:
            with mem.transaction():
                for role, text in turns:
                    mem.add(role, text)
        except ValueError as e:  # e.g. text that is not valid Unicode: nothing was stored
            raise ToolInputError(str(e)) from None
        maybe.update(page_id(i) for i in range(closed, len(mem.pages)))
        newly = sorted((p for p in maybe if not mem.is_resident(p)), key=page_index)
        out = f"Stored {len(turns)} turn(s) in {cid!r}: now {_counts(mem)}."
        if newly:
            out += ("\nPages evicted by this call (recall_page reads one):\n"
                    + "\n".join(mem.bookmark(p).text for p in newly))
        if dense is not None and mem.pages:
            _embed(dense, mem, 0.0)
    return out


def _embed(dense: DenseRanker, mem: PagedMemory, seconds: float) -> bool | None:
    """Embed ``mem``'s closed turns with ``dense``, waiting at most ``seconds`` in all
    (behind an embedding already running, such as the one :func:`append_turns`
    started, then for its own; the rest goes on in its thread): True when they are all
    embedded, False when not yet, None when the encoder failed (logged: the channel
    sits the call out, and the words' ranking still answers)."""
    deadline = time.monotonic() + seconds
    try:
        while True:
            if dense.sync(mem.passages, wait=max(0.0, deadline - time.monotonic())) is not None:
                return True
            if not dense.busy or time.monotonic() >= deadline:
                return False
            time.sleep(0.05)  # another call's embedding runs: wait for it, then go on
    except Exception as e:  # noqa: BLE001 - search goes on by words alone
        log.warning("copage mcp: the meaning channel failed (%s: %s); searching by words "
                    "alone", type(e).__name__, e)
        return None


def list_bookmarks(pool: ConversationPool, tenant: str, conversation: str,
                   include_resident: bool = False) -> str:
    """The bookmark index of a conversation (evicted pages; all pages on request)."""
    cid = check_conversation_id(conversation)
    try:
        with pool.use(cid, tenant=tenant) as mem:
            return bookmarks_text(mem, include_resident=include_resident)
    except ConversationNotFound:
        raise unknown_conversation(pool, tenant, cid) from None


def bookmarks_text(mem: PagedMemory, *, include_resident: bool = False) -> str:
    """The text of :func:`list_bookmarks` (also the bookmarks resource). While no page is
    evicted (at the default paging budget, a conversation of up to thousands of turns)
    every closed page is listed, marked resident: an MCP client holds none of them."""
    books = mem.bookmarks()
    head = f"Conversation {mem.conversation_id!r}: {_counts(mem)}."
    if include_resident or not mem.evicted:
        lines = [books[p.id].text + ("  (resident)" if p.id in mem.resident else "")
                 for p in mem.pages]
        body = ("Bookmarks of all pages:\n" + "\n".join(lines)) if lines else \
            "No page is closed yet."
    else:
        body = prompt.bookmarks_block([books[p].text for p in mem.evicted])
    opened = len(mem.open_turns)
    tail = (f"Resident (recent) pages: {', '.join(mem.resident) or 'none'}; "
            f"{opened} turn(s) in the open page"
            + (f" {page_id(len(mem.pages))} (recall_page reads it)." if opened else "."))
    return f"{head}\n{body}\n{tail}"


def recall_page(pool: ConversationPool, tenant: str, conversation: str, page: object) -> str:
    """The full text of one closed page (``"p3"``, ``"3"`` or ``3``), framed as data; the
    id the open page will take (one past the last closed page) reads the open page's
    turns so far (an MCP client holds none of them either).

    Read-only: an MCP client holds none of copage's resident pages, so reading a page
    changes nothing stored (the page stays evicted, listed and searchable).
    """
    cid = check_conversation_id(conversation)
    idx = parse_page_arg(page)
    if idx is None:
        raise ToolInputError(f"page must be a page id such as \"p3\" (or 3); got "
                             f"{str(page)[:40]!r}.")
    try:
        with pool.use(cid, tenant=tenant) as mem:
            n = len(mem.pages)
            if idx == n and mem.open_turns:
                return f"{_open_page(mem)}:\n" + prompt.page_block(page_id(n), list(mem.open_turns))
            try:
                pg = mem.page(page)
            except KeyError:
                pages = f"its pages are p1-p{n}" if n > 1 else (
                    "its only page is p1" if n == 1 else "no page is closed yet")
                if mem.open_turns:
                    pages += f"; {page_id(n)} is its open page"
                raise ToolInputError(f"there is no page p{idx + 1} in {cid!r}: {pages}.") from None
            return prompt.page_block(pg.id, pg.turns)
    except ConversationNotFound:
        raise unknown_conversation(pool, tenant, cid) from None


def search_pages(pool: ConversationPool, tenant: str, conversation: str, query: str,
                 limit: int = 5, include_resident: bool = True, *,
                 dense: DenseRanker | None = None, wait: float = WAIT_SECONDS) -> str:
    """Closed pages ranked by BM25 against ``query`` (and, with the meaning channel
    ``dense``, the one closest in meaning: :meth:`PagedMemory.search`): bookmarks and
    scores, no text. Every closed page by default, resident ones marked: an MCP client
    holds none of copage's resident pages, and at the default paging budget a
    conversation of thousands of turns has none evicted. ``include_resident=False``:
    the evicted pages only.

    The channel needs the conversation's closed turns embedded; the call waits at most
    ``wait`` seconds for that (a client's request timeout is often 60 s, and a history
    of thousands of turns takes longer on a small CPU). If they are not ready by then,
    the answer is BM25's and says so; the embedding goes on in the background and a
    later search has it.
    """
    cid = check_conversation_id(conversation)
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolInputError(f"limit must be between 1 and {MAX_LIMIT}; got {limit}.")
    if not query.strip():
        raise ToolInputError("query is empty: give a few distinctive words (names, numbers, "
                             "places) expected on the page.")
    what = "page" if include_resident else "evicted page"
    try:
        with pool.use(cid, tenant=tenant) as mem:
            some = mem.pages if include_resident else mem.evicted
            ready = _embed(dense, mem, wait) if dense is not None and some else None
            pending = PENDING.format(turns=len(mem.turns)) if ready is False else ""
            hits = mem.search(query, limit=limit, dense=dense if ready else None,
                              include_resident=include_resident)
            opened = ""
            if mem.open_turns and set(query_terms(query)) & set(
                    index_terms(render_turns(list(mem.open_turns)))):
                opened = f"\n{_open_page(mem)} also holds words of the query: recall_page reads it."
            if not hits:
                if not some:
                    where = f"no page is {'closed' if include_resident else 'evicted'} yet"
                elif include_resident:
                    where = "list_bookmarks shows every page with include_resident"
                else:
                    where = "list_bookmarks shows every evicted page"
                return f"No {what} of {cid!r} matches {query[:80]!r} ({where}).{opened}{pending}"
            lines = [f"{h.bookmark.text}  " + (f"closest in meaning (cosine {h.score:.2f})"
                                                if h.by_meaning else f"score {h.score:.2f}")
                     + ("  (resident)" if h.resident else "")
                     for h in hits]
    except ConversationNotFound:
        raise unknown_conversation(pool, tenant, cid) from None
    return (f"{what.capitalize()}s of {cid!r} matching {query[:80]!r}, best first:\n"
            + "\n".join(lines) + "\nCall recall_page with a page id to read the page."
            + opened + pending)


def _open_page(mem: PagedMemory) -> str:
    """:data:`OPEN_PAGE` for ``mem``'s open page (the id it will take when it closes)."""
    return OPEN_PAGE.format(page=page_id(len(mem.pages)), turns=len(mem.open_turns))


def list_conversations(pool: ConversationPool, tenant: str, limit: int = 50) -> str:
    """The tenant's conversations, most recently updated first."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolInputError(f"limit must be between 1 and {MAX_LIMIT}; got {limit}.")
    infos = sorted(pool.store.list_conversations(tenant=tenant), key=lambda c: -c.updated_at)
    if not infos:
        return "No conversation is stored yet (append_turns creates one)."
    lines = [f"{c.id}: {c.turns} turns, {c.pages} pages, updated "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(c.updated_at))}"
             for c in infos[:limit]]
    more = f"\n... and {len(infos) - limit} more" if len(infos) > limit else ""
    return f"{len(infos)} conversation(s), most recent first:\n" + "\n".join(lines) + more


def delete_conversation(pool: ConversationPool, tenant: str, conversation: str) -> str:
    """Delete one of the tenant's conversations from the store and the pool's cache."""
    cid = check_conversation_id(conversation)
    try:
        pool.delete(cid, tenant=tenant)
    except ConversationNotFound:
        raise unknown_conversation(pool, tenant, cid) from None
    return f"Deleted conversation {cid!r}: its turns, pages and bookmarks are gone."
