"""``CopageHook``: paged memory inside LiteLLM's proxy, as a ``CustomLogger`` callback.

Each chat request is paged in :meth:`CopageHook.async_pre_call_hook`: its conversation
is found (:mod:`copage.adapters.litellm.align`: a header, ``metadata``, the ``user``
field, or recognised from the messages), locked in the store, its new messages added
in an open transaction, and ``data["messages"]`` replaced by the paged view, built by
the same steps as ``PagedChat`` and ``copage serve`` in the default recall mode
``speculative``: the conversation's context (resident pages and the open page), the
answer-only prompt style (:func:`copage.session.prompts.styled`), the speculative fill
of the evicted pages that best match the latest user message
(:func:`copage.session.speculate.speculate`), the request metered as sent
(``stats().prompt_cache``). LiteLLM then routes it (its models, fallbacks, budgets).

The answer is stored before the client gets it: a whole one by
:meth:`async_post_call_success_hook`, a streamed one by
:meth:`async_post_call_streaming_iterator_hook` when its stream ends, through one
path (:meth:`_store`): it is added and the turn committed as one change, then the
lock is released. When the proxy answers with an error
(:meth:`async_post_call_failure_hook`) the turn is rolled back: nothing is stored, and
a conversation the request created goes again. LiteLLM's own retries and fallbacks run
after the hook (a failed attempt, :meth:`async_log_failure_event`, leaves the turn
open) and succeed once, so they store once; a request asking again what is already
answered (a client's retry) is paged the same way and stores nothing. In the Python
SDK (``litellm.callbacks``) the request is paged by
:meth:`async_pre_call_deployment_hook` and the answer stored by
:meth:`async_log_success_event`.

The recall tool is not offered (``recall_mode`` ``speculative`` or ``none``): LiteLLM
makes the model call after this hook, so the hook cannot serve a recall and call the
model again (the round trip ``copage serve`` and ``PagedChat`` run).

A turn holds its conversation's lock from the pre-call hook to the success or failure
hook, as ``copage serve`` holds it from preparing a turn to committing it; the next
request on the same conversation waits for it. A turn whose end never comes (a
client gone mid-stream, where LiteLLM logs nothing) is rolled back after
``hold_timeout`` seconds, at the next request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

try:
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as e:  # pragma: no cover - the extra's message
    raise ImportError("copage's LiteLLM hook needs LiteLLM: pip install 'copage[litellm]'") from e

from copage.adapters.litellm.align import SYSTEM_ROLES, Alignment, align, conversation_of
from copage.adapters.litellm.answer import Assembled, answer_of, last_user, usage_of
from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.llm.chat_messages import text_of
from copage.memory import PagedMemory
from copage.session import trace
from copage.session.drive import in_thread
from copage.session.fill_settings import DEFAULT_DENSE, resolve_dense
from copage.session.modes import RecallMode, parse_mode
from copage.session.opening import Conversations
from copage.session.overflow import KnownWindows, fitted, request_tokens, window_of
from copage.session.prepare import Prepared, prepare
from copage.session.prompts import join_system
from copage.session.speculate import DEFAULT_THRESHOLD, DEFAULT_TOKENS, Speculator
from copage.session.trace import now_ns
from copage.stores import open_store
from copage.stores.protocol import PageStore

__all__ = ["CALL_TYPES", "CopageHook", "hook_mode"]

log = logging.getLogger("copage.litellm")
CALL_TYPES = ("completion", "acompletion")
"""LiteLLM call types the hook pages (chat completions); others pass untouched."""
HOLD_TIMEOUT = 900.0
PAGED = "copage_paged"  # metadata mark of a request the proxy's hook paged
Tenant = str | Callable[[Any], str]


def hook_mode(text: str) -> RecallMode:
    """The hook's recall mode from a name: ``speculative`` or ``none`` (``ValueError``
    otherwise: the hook cannot serve the recall tool's round trip)."""
    mode = parse_mode(text)
    if mode.tool or mode.choose:
        raise ValueError(f"recall_mode {text!r} is not available in the LiteLLM hook (LiteLLM "
                         "makes the model call, so no recall round trip can run); "
                         "valid: speculative, none")
    return mode


@dataclass(slots=True)
class _Turn:
    """A paged request waiting for its answer."""

    tenant: str
    conversation_id: str
    trace: trace.TurnTrace
    question: str
    view: list[dict[str, Any]]
    mem: PagedMemory | None = None  # None: a retry, nothing to store
    tx: AbstractContextManager[PagedMemory] | None = None
    lock: AbstractContextManager[Any] | None = None
    created: bool = False
    via: str = "proxy"
    model: str = ""  # the request's model (its known window)
    started: float = field(default_factory=time.monotonic)
    sent_ns: int = field(default_factory=now_ns)  # when the paged request went on


class CopageHook(CustomLogger):
    """Pages LiteLLM chat requests through copage (see module docstring).

    Args:
        store: a :class:`PageStore` or store URL (``sqlite://copage.db``,
            ``postgresql://...``); in memory when None. Opened at the first request.
        tenant: the owner of the conversations in the store, or a function of LiteLLM's
            ``UserAPIKeyAuth`` (e.g. ``lambda key: key.team_id or "default"``).
        recall_mode: ``speculative`` (the default of every front end) or ``none``.
        speculative_tokens: the fill's allowance per request (tokens).
        speculative_threshold: minimal normalised BM25 score of the best evicted page.
        dense: the fill's meaning channel, so a question asked in other words than the
            fact still reaches it (docs/dense.md): a ranker (``copage.dense.ranker()``),
            ``"default"`` (the default: on when its model's files are installed, as
            ``FillSettings``'), ``"auto"``/a model folder (required) or None (BM25 only).
        use_user: the OpenAI ``user`` field names the conversation (after the header
            and ``metadata.copage_conversation``).
        hold_timeout: seconds after which a turn whose end LiteLLM never reported is
            rolled back (at the next request).
        config: paging settings of new conversations, or give them as keywords
            (``resident_pages=5``, ``boundary="fixed_10"``, ...).
    """

    def __init__(self, store: PageStore | str | None = None, *, tenant: Tenant = "default",
                 recall_mode: str = "speculative", speculative_tokens: int = DEFAULT_TOKENS,
                 speculative_threshold: float = DEFAULT_THRESHOLD,
                 dense: DenseRanker | str | None = DEFAULT_DENSE, use_user: bool = True,
                 hold_timeout: float = HOLD_TIMEOUT, config: PagerConfig | None = None,
                 **settings: Any) -> None:
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either config= or individual settings, not both")
        self.mode = hook_mode(recall_mode)
        self.speculator = Speculator(speculative_threshold, tokens=speculative_tokens,
                                     dense=resolve_dense(dense))
        self.config = config or PagerConfig(**settings)
        self.tenant, self.use_user, self.hold_timeout = tenant, use_user, hold_timeout
        self._store_arg = store
        self._conversations: Conversations | None = None
        self._pending: dict[str, _Turn] = {}
        self._mutex = threading.Lock()
        #: Turns stored, retries seen, requests passed through unpaged (for tests, metrics).
        self.counts = {"stored": 0, "retries": 0, "passed": 0, "rolled_back": 0}
        #: The windows models refused requests for: later requests are paged to fit them.
        self.windows = KnownWindows()

    # ---------------------------------------------------------------- the store
    @property
    def conversations(self) -> Conversations:
        """The one opener of this hook's store (opened at first use)."""
        with self._mutex:
            if self._conversations is None:
                arg = self._store_arg
                store = open_store(arg or "memory://") if arg is None or isinstance(arg, str) \
                    else arg
                self._conversations = Conversations(store)
            return self._conversations

    def memory(self, conversation_id: str, *, tenant: str = "default") -> PagedMemory:
        """A fresh copy of a stored conversation (for inspection)."""
        return PagedMemory(store=self.conversations.store, conversation_id=conversation_id,
                           tenant=tenant, create=False)

    def _tenant(self, key: Any) -> str:
        return self.tenant(key) if callable(self.tenant) else self.tenant

    # ---------------------------------------------------------------- the hooks
    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any],
                                  call_type: str) -> dict[str, Any]:
        """The proxy's hook: page the request (``data["messages"]`` becomes the paged view)."""
        if call_type in CALL_TYPES:
            meta = data.get("metadata")
            if not isinstance(meta, dict):
                meta = data["metadata"] = {}
            meta[PAGED] = True  # the deployment hook leaves it alone
            await self._page(data, self._tenant(user_api_key_dict), "proxy")
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any],
                                             call_type: Any) -> dict[str, Any] | None:
        """The Python SDK's hook (``litellm.callbacks``, ``acompletion``): page the request,
        unless the proxy's hook did (or this is another attempt of a call still paged)."""
        kind = getattr(call_type, "value", call_type)
        meta = kwargs.get("metadata")
        if kind not in CALL_TYPES or (isinstance(meta, Mapping) and meta.get(PAGED)):
            return None
        with self._mutex:
            turn = self._pending.get(str(kwargs.get("litellm_call_id") or ""))
        if turn is not None:  # LiteLLM's retry of a call whose turn is still open
            kwargs["messages"] = list(turn.view)
            return kwargs
        await self._page(kwargs, self._tenant(None), "sdk")
        return kwargs

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any,
                                           response: Any) -> Any:
        """The proxy's whole answer, before it goes to the client: store it."""
        turn = self._take(data)
        if turn is not None:
            text, calls = answer_of(response)
            await self._store(turn, text, calls, usage_of(response))
        return response

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict: Any,
                                                      response: Any, request_data: dict[str, Any]
                                                      ) -> AsyncGenerator[Any, None]:
        """The proxy's streamed answer, chunk by chunk: passed on as it comes, stored when the
        upstream's stream ends (before the client's ``[DONE]``); a stream that fails or is
        left stores nothing. The same store as a whole answer's (:meth:`_store`)."""
        with self._mutex:
            turn = self._pending.get(str(request_data.get("litellm_call_id") or ""))
        if turn is None:
            async for chunk in response:
                yield chunk
            return
        answer = Assembled()
        try:
            async for chunk in response:
                answer.feed(chunk)
                yield chunk
        except BaseException as e:
            if self._take(request_data) is not None:
                await in_thread(self._abort, turn, f"stream failed ({type(e).__name__})")
            raise
        if self._take(request_data) is not None:
            await self._store(turn, answer.text, answer.calls(), answer.usage)

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        """The SDK's answer (whole or streamed: LiteLLM passes the assembled response):
        store it. (In the proxy the post-call hooks store it before the client has it.)"""
        with self._mutex:
            turn = self._pending.get(str(kwargs.get("litellm_call_id") or ""))
        if turn is None or turn.via != "sdk" or self._take(kwargs) is None:
            return
        text, calls = answer_of(response_obj)
        await self._store(turn, text, calls, usage_of(response_obj))

    async def async_log_failure_event(self, kwargs: dict[str, Any], response_obj: Any,
                                      start_time: Any, end_time: Any) -> None:
        """A failed attempt. In the proxy it may be retried or fall back (the turn stays
        open; :meth:`async_post_call_failure_hook` says when the request failed); in the
        SDK the turn is rolled back (a retry pages the request again)."""
        call_id = str(kwargs.get("litellm_call_id") or "")
        with self._mutex:
            turn = self._pending.get(call_id)
            if turn is not None and turn.via == "sdk":
                del self._pending[call_id]
        if turn is None:
            return
        error = kwargs.get("exception")
        self._learn(turn, error)
        turn.trace.upstream(turn.sent_ns, error=error if isinstance(error, Exception)
                            else RuntimeError("failed"))
        if turn.via == "sdk":
            await in_thread(self._abort, turn, "upstream failed")

    async def async_post_call_failure_hook(self, request_data: dict[str, Any],
                                           original_exception: Exception,
                                           user_api_key_dict: Any,
                                           traceback_str: str | None = None) -> Any:
        """The proxy answers the request with an error: roll the turn back."""
        turn = self._take(request_data)
        if turn is not None:
            self._learn(turn, original_exception)
            await in_thread(self._abort, turn, "request failed")
        return None

    def _learn(self, turn: _Turn, error: Any) -> None:
        """A refusal for the model's window: remember the window, so that the next request
        (a retry, the next turn) is paged to fit it (:mod:`copage.session.overflow`)."""
        if isinstance(error, BaseException):
            ours = request_tokens(self.config.tokenizer, turn.view)
            window = window_of(error, ours)
            if window is not None:
                self.windows.learn(turn.model, window)

    async def _store(self, turn: _Turn, text: str, calls: list[dict[str, Any]],
                     usage: tuple[int | None, int | None, str | None]) -> None:
        """Store an answer, whole or streamed alike (the one path of both)."""
        turn.trace.upstream(turn.sent_ns, input_tokens=usage[0], output_tokens=usage[1],
                            model=usage[2])
        try:
            await in_thread(self._finish, turn, text, calls)
        except BaseException as e:  # the proxy answers with an error: the client knows
            log.warning("copage: storing the answer of %s failed (%s); nothing stored",
                        turn.conversation_id, type(e).__name__)
            turn.trace.end(stored=False, error=e if isinstance(e, Exception) else None)
            raise

    async def _page(self, data: dict[str, Any], tenant: str, via: str) -> None:
        """Find, lock and page the request's conversation; its turn waits for the answer."""
        call_id = str(data.get("litellm_call_id") or "")
        if not call_id or not isinstance(data.get("messages"), list):
            return  # nothing to match an answer with: the request passes untouched
        await self._reap()
        cid, named = conversation_of(data, use_user=self.use_user)
        tr = trace.turn(cid, tenant=tenant, front_end="litellm", recall_mode=self.mode.name)
        model = str(data.get("model") or "")
        try:
            turn = await in_thread(self._prepare, tenant, cid, named, data["messages"], tr,
                                   model)
        except BaseException as e:
            tr.end(stored=False, error=e if isinstance(e, Exception) else None)
            raise
        if turn is None:
            return
        turn.via, turn.model = via, model
        with self._mutex:
            self._pending[call_id] = turn
        data["messages"] = list(turn.view)

    # ---------------------------------------------------------------- the work
    def _take(self, kwargs: Mapping[str, Any]) -> _Turn | None:
        call_id = str(kwargs.get("litellm_call_id") or "")
        with self._mutex:
            return self._pending.pop(call_id, None)

    def _prepare(self, tenant: str, cid: str, named: bool, messages: list[Any],
                 tr: trace.TurnTrace, model: str = "") -> _Turn | None:
        """Lock, open, lay the messages against the stored turns, add the new ones in an
        open transaction and build the view (in a thread: the lock may be waited for)."""
        convs = self.conversations
        lock = convs.store.lock(cid, tenant=tenant)
        lock.__enter__()
        created = False
        try:
            opened = convs.open(tenant, cid, lambda: self.config)
            mem, created = opened.mem, opened.created
            how = align(mem.turns, messages) if not opened.created else \
                Alignment("continue", tuple(m for m in messages
                                            if m.get("role") not in SYSTEM_ROLES))
            question = last_user(messages)
            if how.kind == "mismatch":
                if named:
                    raise ValueError(f"conversation_mismatch: the messages do not continue "
                                     f"conversation {cid!r} (an edited or unrelated history); "
                                     "nothing stored")
                log.warning("copage: a request's history does not continue its recognised "
                            "conversation; passed through unpaged")
                convs.put(mem)
                self.counts["passed"] += 1
                lock.__exit__(None, None, None)
                tr.end(stored=False)
                return None
            if how.kind == "retry":
                view = self._retry_view(mem, question, tr, model)
                convs.put(mem)
                lock.__exit__(None, None, None)
                self.counts["retries"] += 1
                return _Turn(tenant, cid, tr, question, view)
            if not how.new or how.new[-1].get("role") not in ("user", "tool"):
                raise ValueError("no_new_messages: the request adds no user or tool message "
                                 f"to conversation {cid!r}")
            tx = mem.transaction()
            tx.__enter__()
            try:
                self._add(mem, messages, how, tr)
                view = self._view(mem, question, tr, model)
            except BaseException as e:
                tx.__exit__(type(e), e, e.__traceback__)
                raise
            return _Turn(tenant, cid, tr, question, view, mem, tx, lock, opened.created)
        except BaseException:
            try:
                if created:  # a refused first request leaves no conversation behind
                    convs.delete(tenant, cid, locked=True)
                else:
                    convs.discard(tenant, cid)
            finally:
                lock.__exit__(None, None, None)
            raise

    def _add(self, mem: PagedMemory, messages: list[Any], how: Alignment,
             tr: trace.TurnTrace) -> None:
        system = join_system(text_of(m.get("content")) for m in messages
                             if m.get("role") in SYSTEM_ROLES)
        if system is not None and system != mem.system:
            mem.add("system", system)
        before, t0 = (mem.evicted, trace.now_ns()) if tr.enabled else ((), 0)
        for m in how.new:
            role = str(m.get("role"))
            meta: dict[str, Any] = {}
            if m.get("tool_calls"):
                meta["tool_calls"] = [dict(c) for c in m["tool_calls"]]
            if m.get("tool_call_id"):
                meta["tool_call_id"] = str(m["tool_call_id"])
            mem.add(role, text_of(m.get("content")), **meta)
        if tr.enabled:
            tr.evictions(before, mem.evicted, t0, cause="request")

    def _view(self, mem: PagedMemory, question: str, tr: trace.TurnTrace, model: str = ""
              ) -> list[dict[str, Any]]:
        """PagedChat's and the proxy's steps: context, prompt style, fill, meter."""
        return self._prepared(mem, False, question, tr, model)

    def _retry_view(self, mem: PagedMemory, question: str, tr: trace.TurnTrace,
                    model: str = "") -> list[dict[str, Any]]:
        """The view of a retried request: the stored context without the answer(s) after
        its last user or tool message."""
        return self._prepared(mem, True, question, tr, model)

    def _prepared(self, mem: PagedMemory, retry: bool, question: str, tr: trace.TurnTrace,
                  model: str = "") -> list[dict[str, Any]]:
        """The one turn preparation (:func:`copage.session.prepare.prepare`), no tool;
        paged down first when it would not fit the model's known window."""
        window = self.windows.get(model)

        def made(meter: bool) -> Prepared:
            messages: list[dict[str, Any]] | None = None
            tools: list[dict[str, Any]] | None = None
            if retry:
                ctx = mem.context(meter=False)
                messages, tools = list(ctx.messages), ctx.tools
                while messages and messages[-1].get("role") not in ("user", "tool", "system"):
                    messages.pop()
            return prepare(mem, messages=messages, tools=tools, offer_tool=False,
                           speculator=self.speculator if self.mode.speculative else None,
                           fill_for=question, trace=tr, meter=meter)

        prep = made(window is None)
        if window is not None:
            prep = fitted(mem, window, prep, lambda: made(False))
        tr.set(**{"turn.resident_pages": len(mem.resident)} if tr.enabled else {})
        return prep.messages

    def _finish(self, turn: _Turn, text: str, calls: list[dict[str, Any]]) -> None:
        """Add the answer, commit, release (a retry stores nothing)."""
        mem, tx, lock = turn.mem, turn.tx, turn.lock
        if mem is None or tx is None or lock is None:
            turn.trace.end(stored=False)
            return
        convs = self.conversations
        try:
            meta: dict[str, Any] = {"tool_calls": calls} if calls else {}
            if turn.trace.enabled:  # the inspector links the turn to its trace
                meta["trace_id"] = turn.trace.trace_id
            before, t0 = (mem.evicted, trace.now_ns()) if turn.trace.enabled else ([], 0)
            mem.add("assistant", text, **meta)
            if turn.trace.enabled:
                turn.trace.evictions(before, mem.evicted, t0, cause="answer")
        except BaseException as e:
            tx.__exit__(type(e), e, e.__traceback__)
            self._release(turn)
            raise
        tx.__exit__(None, None, None)  # the one commit of the turn
        convs.put(mem)
        lock.__exit__(None, None, None)
        self.counts["stored"] += 1
        if turn.trace.enabled:
            turn.trace.text(turn.question, text)
            turn.trace.set(**{"turn.evicted_pages": len(mem.evicted)})
        turn.trace.end(stored=True)

    def _abort(self, turn: _Turn, why: str) -> None:
        """Roll a turn back: nothing of it is stored."""
        if turn.tx is not None:
            error = RuntimeError(why)
            turn.tx.__exit__(RuntimeError, error, None)
            self._release(turn)
            self.counts["rolled_back"] += 1
        turn.trace.end(stored=False, error=RuntimeError(why))

    def _release(self, turn: _Turn) -> None:
        convs = self.conversations
        try:
            if turn.created:  # a conversation this failed turn created goes again
                convs.delete(turn.tenant, turn.conversation_id, locked=True)
            else:
                convs.discard(turn.tenant, turn.conversation_id)
        finally:
            if turn.lock is not None:
                turn.lock.__exit__(None, None, None)

    async def _reap(self) -> None:
        """Roll back turns whose end LiteLLM never reported within ``hold_timeout``."""
        now = time.monotonic()
        with self._mutex:
            old = [k for k, t in self._pending.items() if now - t.started > self.hold_timeout]
            stale = [self._pending.pop(k) for k in old]
        for turn in stale:
            log.warning("copage: a turn of %s got no answer in %.0f s; rolled back",
                        turn.conversation_id, self.hold_timeout)
            await in_thread(self._abort, turn, "no answer in time")
