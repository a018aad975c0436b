"""Running the NLL fault-detection experiment against a model.

Each case is answered twice, (A) with the full conversation and (B) with its
critical exchanges replaced by gists; each condition generates its own reply at
temperature 0 with logprobs on, and its per-token NLL comes from that reply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from copage.eval.nll.cases import CASES, NllCase
from copage.eval.nll.nll_stats import (
    DEFAULT_WINDOW,
    CaseResult,
    ReplyStats,
    reply_stats,
    rolling_mean,
    summarise,
)
from copage.eval.nll.nll_tables import write_outputs
from copage.eval.nll.result import NllResult

__all__ = ["DEFAULT_MAX_TOKENS", "NllError", "NllResult", "run_nll", "run_nll_async"]

T = TypeVar("T")

DEFAULT_MAX_TOKENS = 256
NO_LOGPROB_PROVIDERS = ("anthropic:",)


class NllError(ValueError):
    """The experiment cannot run with this model (e.g. it returns no logprobs)."""


async def _answer(model: Any, case: NllCase, condition: str, max_tokens: int,
                  temperature: float, window: int) -> ReplyStats:
    from copage.llm.model_types import ChatRequest

    # The OpenAI adapter sends top_logprobs=1 with logprobs: llama.cpp's llama-server
    # returns no logprobs without it, or with top_logprobs=0.
    request = ChatRequest(messages=tuple(case.messages(condition)), temperature=temperature,
                          max_tokens=max_tokens, logprobs=True)
    response = await model.complete(request)
    where = f"case {case.id!r}, condition {condition}"
    if response.logprobs is None:
        raise NllError(
            f"model {model.spec} returned no logprobs ({where}); the NLL experiment needs a "
            f"provider that returns token log-probabilities (OpenAI-compatible servers with "
            f"logprobs=true; Anthropic does not)"
        )
    if not response.logprobs:
        raise NllError(f"model {model.spec} returned an empty reply with no tokens ({where})")
    return reply_stats(response.text, response.logprobs, window)


async def run_nll_async(
    model: Any, *, window: int = DEFAULT_WINDOW, max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0, cases: Sequence[NllCase] = CASES, concurrency: int = 1,
) -> tuple[CaseResult, ...]:
    """Answer every case under both conditions; results in case order.

    ``concurrency`` bounds requests in flight (1 suits a local single-slot server).
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    sem = asyncio.Semaphore(concurrency)

    async def one(case: NllCase, cond: str) -> ReplyStats:
        async with sem:
            return await _answer(model, case, cond, max_tokens, temperature, window)

    jobs = [one(c, cond) for c in cases for cond in ("A", "B")]
    stats = await asyncio.gather(*jobs)
    return tuple(
        CaseResult(c.id, c.control, c.fact_types, stats[2 * i], stats[2 * i + 1])
        for i, c in enumerate(cases)
    )


def run_nll(
    model: Any, out_dir: str | Path, window: int = DEFAULT_WINDOW, *,
    max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0,
    cases: Sequence[NllCase] = CASES, plot: bool = True, concurrency: int = 1,
) -> NllResult:
    """Run the experiment with ``model`` (a ChatModel) and write table, JSON and plot to ``out_dir``."""
    rolling_mean([0.0], window)  # validates window before any call
    if getattr(model, "complete", None) is None:
        raise NllError(f"model must be a ChatModel (with async complete()), got {model!r}")
    if str(model.spec).startswith(NO_LOGPROB_PROVIDERS):
        raise NllError(f"model {model.spec}: this provider returns no token logprobs, which the "
                       f"NLL experiment needs; use an OpenAI-compatible model or server")
    results = _run(run_nll_async(
        model, window=window, max_tokens=max_tokens, temperature=temperature, cases=cases,
        concurrency=concurrency))
    result = NllResult(str(model.spec), window, max_tokens, temperature, results,
                       summarise(results))
    files = write_outputs(result, Path(out_dir), plot_png=plot)
    return replace(result, files=files)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, in a worker thread when a loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
