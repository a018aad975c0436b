"""The model-driven probe runner: bounded async concurrency, one JSONL row per probe.

Rows whose key (dataset, conversation, probe, method, model and ``config``, the
fingerprint of every setting that changes the prompt and of the prompt templates)
is already in the log are not asked again, so a rerun resumes where the last one
stopped; with the response cache (on by default in the benchmark) a repeated run
makes no API calls. A resumed row that lacks a verdict of a requested judge (a
judge added on resume, or judge prompts changed) is judged and written again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.eval.datasets.probes import Probe
from copage.eval.methods import MethodAnswer, MethodPrompt, PreparedConversation, coverage
from copage.eval.methods.units import EvidenceGroups
from copage.eval.runner.judging import Usage, gold_of, judge_all, missing_verdicts, static_scores
from copage.eval.runner.log import ProbeLog
from copage.eval.scoring import category_label
from copage.llm.errors import BadResponse
from copage.llm.model_types import ChatModel, run_sync


@dataclass(frozen=True, slots=True)
class ProbeTask:
    """One probe to ask with one method.

    ``built``: its LLM-free prompt (coverage); ``groups``: its evidence groups;
    ``config``: the fingerprint of the settings and templates behind its prompt.
    """

    dataset: str
    method: str
    prepared: PreparedConversation
    probe: Probe
    synthetic: bool = False
    built: MethodPrompt | None = None
    uses_bookmarks: bool = False
    groups: EvidenceGroups | None = None
    config: str = ""


@dataclass(slots=True)
class RunStats:
    """What a run did: rows written, rows skipped (already in the log), rows judged again
    (a verdict was missing), answer errors."""

    written: int = 0
    skipped: int = 0
    rejudged: int = 0
    errors: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)


def _label(category: int) -> str:
    try:
        return category_label(category)
    except ValueError:
        return str(category)


def base_row(task: ProbeTask, model: str | None) -> dict[str, Any]:
    """The key and probe fields of a row."""
    p = task.probe
    return {
        "dataset": task.dataset, "conversation": task.prepared.conversation.id, "probe": p.id,
        "category": p.category, "category_name": _label(p.category), "fact_type": p.fact_type,
        "method": task.method, "model": model, "config": task.config,
        "units": units_label(task.prepared),
    }


def units_label(prepared: Any) -> str | None:
    """What a method's prompt is cut into and what it keeps as recent turns, e.g.
    ``"session units behind the last 20 turns"`` (the paper's retrieval rows on LoCoMo) or
    ``"fixed_10 units behind copage's resident window (12 turns)"``."""
    window = getattr(prepared, "window_label", None)
    if window is not None:
        if getattr(prepared, "scorer_factory", None) is None:
            return str(window)
        return f"{prepared.settings.boundary} units behind {window}"
    config = getattr(prepared, "config", None)
    if config is not None and hasattr(config, "boundary"):
        return f"{config.boundary} pages, resident pages within the budget plan"
    return None


def answer_row(task: ProbeTask, model: str, ans: MethodAnswer | None, error: str | None,
               judges: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full row of an answered probe."""
    row = base_row(task, model)
    answer = ans.answer if ans else ""
    recalled = [r.page for r in ans.recalls if r.page and r.status in ("paged_in", "resident")] \
        if ans else []
    needed = list(ans.needed) if ans else []
    evicted = list(ans.evicted_needed) if ans else []
    spec = list(ans.speculative) if ans else []
    needs_recall = task.uses_bookmarks and bool(set(evicted) - set(spec))
    settings = getattr(task.prepared, "settings", None)
    row.update({
        "trigger": "model" if task.uses_bookmarks else None,
        "budget": getattr(settings, "budget", None),
        "does_not_fit": bool(ans and (ans.does_not_fit or ans.extra.get("does_not_fit"))),
        "question": task.probe.question, "gold": gold_of(task.probe), "answer": answer,
        "error": error,
        "prompt_tokens": [c.prompt_tokens for c in ans.calls] if ans else [],
        "prompt_tokens_total": ans.prompt_tokens if ans else 0,
        "parts": ans.parts if ans else {},
        "provider_prompt_tokens": [c.provider_prompt_tokens for c in ans.calls] if ans else [],
        "completion_tokens": sum(c.completion_tokens for c in ans.calls) if ans else 0,
        "calls": len(ans.calls) if ans else 0,
        "cached_calls": sum(c.cached for c in ans.calls) if ans else 0,
        "tool_calls": [{"tool": r.tool, "arguments": r.arguments, "status": r.status,
                        "page": r.page, "pages": list(r.pages)} for r in ans.recalls] if ans else [],
        "recalled_pages": recalled, "speculative_pages": spec,
        "needed_pages": needed, "evicted_needed": evicted,
        "evicted_needed_flag": bool(evicted), "needs_recall": needs_recall,
        "triggered": bool(ans and ans.recalls), "right_page": bool(set(recalled) & set(needed)),
        "scores": static_scores(task.probe, answer, synthetic=task.synthetic),
        "judges": dict(judges or {}),
    })
    if task.built is not None:
        cov = coverage(task.groups if task.groups is not None else task.probe,
                       task.built.context_turn_ids)
        row["evidence_coverage"], row["evidence_coverage_any"] = cov.all, cov.any
    return row


def _usage_of(ans: MethodAnswer | None) -> tuple[int, int, float | None]:
    if ans is None:
        return 0, 0, None
    costs = [c.cost_usd for c in ans.calls if c.cost_usd is not None and not c.cached]
    hits = sum(c.cached for c in ans.calls)
    return len(ans.calls) - hits, hits, sum(costs) if costs else None


async def _one(task: ProbeTask, model: ChatModel, name: str, judges: Mapping[str, ChatModel],
               log: ProbeLog, stats: RunStats, sem: asyncio.Semaphore, judge_tokens: int,
               tick: Callable[[Usage], None]) -> None:
    usage = Usage()
    async with sem:
        error: str | None = None
        ans: MethodAnswer | None = None
        try:
            ans = await task.prepared.answer(task.probe, model)
        except BadResponse as e:  # the model misbehaved: a (wrong) outcome, not a crash
            error = str(e)[:300]
            stats.errors += 1
        usage.add(*_usage_of(ans))
        verdicts = await judge_all(judges, task.probe, ans.answer if ans else "",
                                   max_tokens=judge_tokens, usage=usage)
        row = answer_row(task, name, ans, error, verdicts)
    log.append(row)
    stats.written += 1
    stats.rows.append(row)
    tick(usage)


async def _rejudge(task: ProbeTask, row: dict[str, Any], judges: Mapping[str, ChatModel],
                   log: ProbeLog, stats: RunStats, sem: asyncio.Semaphore, judge_tokens: int,
                   tick: Callable[[Usage], None]) -> None:
    usage = Usage()
    async with sem:
        verdicts = await judge_all(judges, task.probe, str(row.get("answer") or ""),
                                   max_tokens=judge_tokens, usage=usage,
                                   verdicts=row.get("judges") or {})
    new = {**row, "judges": verdicts}
    log.append(new)
    stats.rejudged += 1
    stats.rows.append(new)
    tick(usage)


async def run_tasks(tasks: Sequence[ProbeTask], model: ChatModel, log: ProbeLog, *,
                    judges: Mapping[str, ChatModel] | None = None, model_name: str | None = None,
                    concurrency: int = 4, judge_max_tokens: int = 200,
                    on_row: Callable[[RunStats], None] | None = None,
                    progress: Any | None = None, label: str = "model run") -> RunStats:
    """Answer and score every task not yet in ``log``; the first hard error stops the run.

    ``progress``: a :class:`copage.eval.progress.Progress`; one bar of ``label`` counts
    the probes to answer or judge, with the calls, cache hits and cost so far.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    name = model_name or model.spec
    judges = judges or {}
    stats = RunStats()
    todo: list[ProbeTask] = []
    rejudge: list[tuple[ProbeTask, dict[str, Any]]] = []
    for t in tasks:
        old = log.get(base_row(t, name))
        if old is None:
            todo.append(t)
        elif missing_verdicts(old.get("judges"), judges):
            rejudge.append((t, old))
        else:
            stats.skipped += 1
    bar = progress.start(label, len(todo) + len(rejudge)) if progress is not None else None

    def tick(usage: Usage) -> None:
        if progress is not None and bar is not None:
            progress.advance(bar, calls=usage.calls, cache_hits=usage.cache_hits, cost=usage.cost)
        if on_row is not None:
            on_row(stats)

    sem = asyncio.Semaphore(concurrency)
    running = [asyncio.ensure_future(_one(t, model, name, judges, log, stats, sem,
                                         judge_max_tokens, tick))
               for t in todo]
    running += [asyncio.ensure_future(_rejudge(t, row, judges, log, stats, sem,
                                               judge_max_tokens, tick))
                for t, row in rejudge]
    if not running:
        if progress is not None and bar is not None:
            progress.finish(bar)
        return stats
    done, pending = await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
    for p in pending:
        p.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    errors = [e for d in done if (e := d.exception()) is not None]  # retrieve them all
    if errors:
        raise errors[0]
    if progress is not None and bar is not None:
        progress.finish(bar)
    return stats


def run_tasks_sync(tasks: Sequence[ProbeTask], model: ChatModel, log: ProbeLog,
                   **options: Any) -> RunStats:
    """:func:`run_tasks` from synchronous code."""
    return run_sync(run_tasks(tasks, model, log, **options))
