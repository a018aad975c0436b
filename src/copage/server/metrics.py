"""Prometheus text-format metrics kept in process (each worker reports its own)."""

from __future__ import annotations

import threading
from collections import defaultdict

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0, 30.0, 60.0)

COUNTERS = {
    "copage_requests_total": "HTTP requests answered, by endpoint and status",
    "copage_turns_total": "Chat turns completed",
    "copage_upstream_calls_total": "Upstream model calls",
    "copage_upstream_errors_total": "Upstream failures, by kind",
    "copage_pages_total": "Pages closed",
    "copage_faults_total": "Page faults (evicted pages paged back in)",
    "copage_hits_total": "Accesses to resident pages",
    "copage_recalls_total": "Recall tool calls served",
    "copage_fills_total": "Turns whose prompt showed evicted pages in a speculative fill",
    "copage_fill_pages_total": "Evicted pages shown by those fills",
    "copage_evictions_total": "Pages evicted",
    "copage_prompt_tokens_sent_total": "Prompt tokens sent upstream, fill included (copage's count)",
    "copage_prompt_tokens_full_total": "Tokens of the whole conversation at each turn (counted as sent)",
    "copage_prompt_cache_prompt_tokens_total": "Prompt tokens of the requests stats() metered",
    "copage_prompt_cache_prefix_tokens_total": "Of those, tokens repeating the previous "
                                               "request's prefix",
    "copage_prompt_cache_cost_usd_total": "Input cost of the requests stats() metered with "
                                          "each model's prompt caching priced in, paged and "
                                          "full context (by model, kind)",
    "copage_upstream_prompt_tokens_total": "Prompt tokens reported by the upstream",
    "copage_upstream_completion_tokens_total": "Completion tokens reported by the upstream",
    "copage_lock_timeouts_total": "Turns refused because the conversation stayed locked",
    "copage_index_errors_total": "Transcript index updates that failed after a commit",
    "copage_retries_replayed_total": "Retried requests answered from the store (no model call)",
    "copage_requests_refused_total": "Requests refused by the browser guard, by reason",
    "copage_stream_disconnects_total": "Streamed turns whose client went away (rolled back "
                                       "unless already committed)",
    "copage_stream_errors_total": "Streamed turns that failed after the stream began, by code",
}


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{v.replace(chr(92), "/").replace(chr(34), "")}"' for k, v in labels)
    return "{" + inner + "}"


class Metrics:
    """Counters and one latency histogram; :meth:`render` gives the exposition text."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
        self._buckets = [0] * len(LATENCY_BUCKETS)
        self._lat_sum = 0.0
        self._lat_count = 0

    def inc(self, name: str, value: float = 1.0, **labels: str) -> None:
        """Add ``value`` to a counter."""
        if name not in COUNTERS:
            raise KeyError(f"unknown metric {name!r}")
        key = tuple(sorted(labels.items()))
        with self._mutex:
            series = self._counters[name]
            series[key] = series.get(key, 0.0) + value

    def observe_upstream(self, seconds: float) -> None:
        """Record one upstream call's latency."""
        with self._mutex:
            self._lat_sum += seconds
            self._lat_count += 1
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self._buckets[i] += 1

    def value(self, name: str, **labels: str) -> float:
        """The current value of one counter series (0 if never incremented)."""
        with self._mutex:
            return self._counters.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def render(self) -> str:
        """Prometheus text exposition format 0.0.4."""
        lines: list[str] = []
        with self._mutex:
            for name, help_text in COUNTERS.items():
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
                series = self._counters.get(name) or {(): 0.0}
                for key, v in sorted(series.items()):
                    lines.append(f"{name}{_labels(key)} {v:g}")
            h = "copage_upstream_latency_seconds"
            lines += [f"# HELP {h} Latency of upstream model calls", f"# TYPE {h} histogram"]
            for bound, n in zip(LATENCY_BUCKETS, self._buckets, strict=True):
                lines.append(f'{h}_bucket{{le="{bound:g}"}} {n}')
            lines += [f'{h}_bucket{{le="+Inf"}} {self._lat_count}',
                      f"{h}_sum {self._lat_sum:.6f}", f"{h}_count {self._lat_count}"]
        return "\n".join(lines) + "\n"
