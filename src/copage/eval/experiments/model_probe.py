"""Model-driven paging cells: a conversation replayed into :class:`PagedChat`, probes asked.

Per (dataset, cell, conversation): a fresh in-memory :class:`PagedMemory` with the
cell's settings gets the conversation's turns; probes are asked with
``ask_probe`` (:mod:`copage.eval.methods.probe_driver`; keep_pages=True, so recalls
change the resident set as accesses do in ``copage simulate``) in the same schedule as the simulation. Each probe's
record (needed and evicted pages, recalls, answer, exact gold-string match, the
binary judge's verdict, prompt tokens summed over all calls) is appended to
``out/<experiment>/model_probes.jsonl`` (the shared :class:`~copage.eval.runner.log.JsonlLog`)
as it is made. Rows are keyed by the cell, the seed, ``config`` (the fingerprint of
the prompt templates and judge prompts) and the probe. A conversation is done when
every one of its probes has a row for these settings; otherwise it is asked again
from its first turn (its probes depend on one another through the pages recalls
bring in) and its new rows replace the old ones. An interrupted run resumes, and
the response cache makes a repeated run free.

Belady cells run with the model too, under :class:`copage.eval.oracle.ScheduledBelady`:
the oracle is given the scheduled future (every admit and each probe's evidence
pages, as in the simulation), not the model's own recalls, so the accuracy gap
between the oracle and the online policies is measured with one model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from copage.core.keywords import KeywordExtractor
from copage.core.registry import Registry
from copage.eval.datasets.probes import Conversation, Dataset, Probe
from copage.eval.experiments.common import cached, judges_for, mean
from copage.eval.experiments.interface import BenchContext
from copage.eval.methods.templates import config_id, judge_template_id
from copage.eval.runner.judging import exact_any
from copage.eval.runner.log import JsonlLog
from copage.eval.simulation import Cell, schedule

CELL_KEYS = ("boundary", "policy", "k", "keywords", "format", "placement", "order")
RECORD_KEY = ("dataset", "model", *CELL_KEYS, "seed", "config", "conversation", "probe")
"""The key of a paging probe record."""


def cell_dict(cell: Cell) -> dict[str, Any]:
    """The cell's settings by ``CELL_KEYS``, and its seed."""
    return {**{k: getattr(cell, k) for k in CELL_KEYS}, "seed": cell.seed}


def records_config(judge: str | None) -> str:
    """``config`` of paging records: the prompt templates, and the judge (its name and its
    prompts) when one judges."""
    return config_id({"judge": judge, "judge_prompts": judge_template_id() if judge else None})


def judge_binary(judges: dict[str, Any], probe: Probe, answer: str) -> float | None:
    """The first judge's CORRECT (1.0) / WRONG (0.0) verdict, None when unreadable or no judge."""
    from copage.eval.scoring import build_judge_messages, parse_binary
    from copage.llm.model_types import complete_sync

    if not judges:
        return None
    gold = probe.answer if probe.answer is not None else probe.adversarial_answer
    judge = next(iter(judges.values()))
    reply = complete_sync(judge, build_judge_messages("binary", probe.question, gold, answer))
    return parse_binary(reply.text).score


def run_conversation_model(conv: Conversation, cell: Cell, model: Any,
                           extractors: Registry[KeywordExtractor] | None = None,
                           ) -> Iterator[tuple[Probe, Any]]:
    """Replay ``conv`` into a :class:`PagedChat` and yield (probe, ProbeRecord) in schedule order.

    The cell's keywords are looked up in ``extractors`` (default: the global registry);
    a belady cell runs ``belady_scheduled`` from :func:`copage.eval.oracle.policies`."""
    from copage.eval.methods.probe_driver import ask_probe_sync, set_policy_clock
    from copage.memory import PagedMemory
    from copage.session import PagedChat

    plan = schedule(conv, (), cell)
    n = len(conv.turns)
    starts: list[int] = []
    if cell.policy == "belady":
        from dataclasses import replace

        from copage.core.boundaries import get_boundary
        from copage.core.paginate import paginate
        from copage.eval.oracle import NAME, policies
        from copage.eval.sim_pager import with_future
        from copage.eval.simulation import access_sequence

        spans = paginate(conv.turns, get_boundary(cell.boundary))
        span_of = {conv.turns[j].id: i for i, s in enumerate(spans) for j in range(s.start, s.end)}
        future = access_sequence(spans, plan, span_of, n)
        starts = probe_starts(spans, plan, span_of, n)
        mem = PagedMemory(config=with_future(replace(cell.config(extractors), policy=NAME,
                                                     policies=policies()), future))
    else:
        mem = PagedMemory(config=cell.config(extractors))
    chat = PagedChat(mem, model, recall_mode="tool")  # the paper's mechanism, whatever the default
    added = 0
    for i, (t, probe) in enumerate(plan):
        while added < min(t + 1, n):
            turn = conv.turns[added]
            meta = {k: v for k, v in (("id", turn.id), ("speaker", turn.speaker), ("timestamp", turn.timestamp),
                                      ("session", turn.session)) if v is not None}
            mem.add(turn.role if turn.role in ("user", "assistant") else "user", turn.text, **meta)
            added += 1
        if added == n and mem.open_turns:
            mem.close_page()
        page_of = {tid: p.id for p in mem.pages for tid in p.turn_ids}
        needed = tuple(dict.fromkeys(page_of[e] for e in probe.evidence if e in page_of))
        if starts:  # the oracle's clock: this probe's scheduled accesses come next
            set_policy_clock(mem, starts[i])
        yield probe, ask_probe_sync(chat, probe.question, needed, keep_pages=True)


def probe_starts(spans: Sequence[Any], plan: Sequence[tuple[int, Probe]], page_of: dict[str, int],
                 n: int) -> list[int]:
    """Where each probe's accesses begin in :func:`copage.eval.simulation.access_sequence`
    (the same walk: the admits of the pages closed by the probe's turn, then its pages)."""
    from copage.eval.simulation import _closed_by, _needed

    starts: list[int] = []
    count = admitted = 0
    for t, probe in plan:
        closed = _closed_by(spans, t, n)
        count += closed - admitted
        admitted = closed
        starts.append(count)
        count += len(_needed(probe, page_of, closed))
    return starts


def record(base: dict[str, Any], probe: Probe, rec: Any, judged: float | None) -> dict[str, Any]:
    """One probe's record: recall outcome, answer, exact match (any answer form), verdict."""
    rep = rec.report
    em = exact_any(rec.answer, probe) if probe.answer else None
    exact = None if em is None else float(em)
    return {**base, "probe": probe.id, "fact_type": probe.fact_type,
            "category": probe.category, "needed": list(rec.needed),
            "evicted": list(rec.evicted), "needs_recall": rec.needs_recall,
            "triggered": rec.triggered, "right_page": rec.right_page,
            "recalls": [[c.page, c.ok] for c in rec.recalls],
            "answer": rec.answer, "exact": exact, "judge": judged,
            "correct": judged if judged is not None else exact,
            "prompt_tokens": rep.total_prompt_tokens if rep else None,
            "model_calls": rep.model_calls if rep else None,
            "cost_usd": rep.cost_usd if rep else None}


def probe_records(ctx: BenchContext, name: str, datasets: Sequence[Dataset],
                  cells: Sequence[Cell], extractors: Registry[KeywordExtractor] | None = None,
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """Run (or resume) every cell with the model; all records of these cells (keywords
    looked up in ``extractors``, default: the global registry)."""
    assert ctx.model is not None
    model = cached(ctx.model, ctx.options)
    judges, notes = judges_for(ctx, model)
    mname = ctx.model_spec or getattr(ctx.model, "spec", "model")
    log = JsonlLog(ctx.out / name / "model_probes.jsonl", RECORD_KEY)
    config = records_config(next(iter(judges), None))
    run_cells_ = list(cells)
    if any(c.policy == "belady" for c in cells):
        notes.append("belady with the model: the oracle is given the scheduled accesses "
                     "(admits and each probe's evidence pages), not the model's own recalls "
                     "(copage.eval.oracle)")
    units = [(ds, c, conv) for ds in datasets for c in run_cells_ for conv in ds.conversations if conv.probes]

    def base_of(ds: Dataset, cell: Cell, conv: Conversation) -> dict[str, Any]:
        return {"dataset": ds.name, "model": mname, **cell_dict(cell), "config": config,
                "conversation": conv.id}

    todo = [u for u in units
            if not all(log.has({**base_of(*u), "probe": p.id}) for p in u[2].probes)]
    prog = ctx.progress
    bar = prog.start(f"{name} (model)", sum(len(u[2].probes) for u in todo)) \
        if prog is not None else None
    for ds, cell, conv in todo:
        base = base_of(ds, cell, conv)
        for probe, rec in run_conversation_model(conv, cell, model, extractors):
            row = record(base, probe, rec, judge_binary(judges, probe, rec.answer))
            log.append(row)
            if prog is not None and bar is not None:
                prog.advance(bar, calls=(row["model_calls"] or 0) + (1 if judges else 0),
                             cost=row["cost_usd"])
    if prog is not None and bar is not None:
        prog.finish(bar)
    wanted = {(ds.name, mname, *(str(getattr(c, k)) for k in CELL_KEYS), str(c.seed), config)
              for ds in datasets for c in run_cells_}
    recs = [r for r in log if tuple(str(r.get(k)) for k in RECORD_KEY[:-2]) in wanted]
    if todo:
        notes.append(f"{name} model run: {len(todo)} of {len(units)} conversations asked, the others "
                     f"resumed from {log.path.name}")
    return recs, notes


def run_cells(ctx: BenchContext, name: str, datasets: Sequence[Dataset], cells: Sequence[Cell],
              extractors: Registry[KeywordExtractor] | None = None,
              ) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per (dataset, model, cell): accuracy, exact, trigger/right-page rates, precision,
    tokens (keywords looked up in ``extractors``, default: the global registry)."""
    recs, notes = probe_records(ctx, name, datasets, cells, extractors)
    rows = []
    for key in dict.fromkeys((r["dataset"], r["model"], *(r[k] for k in CELL_KEYS)) for r in recs):
        sel = [r for r in recs if (r["dataset"], r["model"], *(r[k] for k in CELL_KEYS)) == key]
        need = [r for r in sel if r["needs_recall"]]
        trig = [r for r in need if r["triggered"]]
        calls = [ok and page in r["needed"] for r in sel for page, ok in r["recalls"]]
        rows.append({"dataset": key[0], "model": key[1], **dict(zip(CELL_KEYS, key[2:], strict=True)),
                     "probes": len(sel), "accuracy": mean(r["correct"] for r in sel),
                     "exact": mean(r["exact"] for r in sel), "needs_recall": len(need),
                     "trigger_rate": len(trig) / len(need) if need else None,
                     "right_page_rate": mean(1.0 if r["right_page"] else 0.0 for r in trig),
                     "recall_precision": sum(calls) / len(calls) if calls else None,
                     "model_prompt_tokens_mean": mean(r["prompt_tokens"] for r in sel),
                     **category_accuracy(sel)})
    return rows, notes


def category_accuracy(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``accuracy_cat<N>`` and ``probes_cat<N>`` per LoCoMo category id of ``records``
    (the paper's Table 14 breaks the generators' accuracy down by category)."""
    out: dict[str, Any] = {}
    cats = sorted({int(r["category"]) for r in records if isinstance(r.get("category"), int)})
    for c in cats:
        sel = [r for r in records if r.get("category") == c]
        out[f"accuracy_cat{c}"] = mean(r["correct"] for r in sel)
        out[f"probes_cat{c}"] = len(sel)
    return out
