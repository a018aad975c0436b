"""Generator knobs (:class:`SyntheticConfig`) and the named presets."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from copage.eval.synthetic.values import FACT_TYPE_NAMES

Topology = Literal["forward", "revisit", "mixed"]
Placement = Literal["spread", "early"]


@dataclass(frozen=True)
class SyntheticConfig:
    """What to generate. Invalid combinations raise ``ValueError`` on construction.

    Attributes:
        name: preset name, written into every ``sample_id``.
        conversations: number of conversations.
        turns: (min, max) turns per conversation, drawn uniformly.
        facts: planted facts per conversation, each of a different type (1..7).
        probes: probes per conversation (at most two per fact: direct + indirect).
        total_probes: if set, overrides ``probes``: spread as evenly as possible,
            earlier conversations get the remainder (22 over 10 -> 3,3,2,...).
        distractors: distractor exchanges per fact: same keyword, different owner or
            time ("my friend's budget"), never evidence.
        topology: ``forward`` (each fact stated once, topics never return),
            ``revisit`` (facts re-mentioned or updated later; probes ask about
            returning topics) or ``mixed`` (even-indexed conversations forward,
            odd-indexed revisit).
        revisits: (min, max) later re-mentions per fact under ``revisit``.
        update_prob: chance that a revisited, updatable fact changes value.
        placement: ``spread`` (statements anywhere but the last tenth) or ``early``
            (statements in the first ``early_fraction`` of the conversation, so that
            paging evicts them).
        early_fraction: see ``placement``.
        sessions: LoCoMo sessions to cut each conversation into (1 = ``session_1``).
        fact_types: the fact types to draw from.
    """

    name: str = "custom"
    conversations: int = 10
    turns: tuple[int, int] = (20, 35)
    facts: int = 3
    probes: int = 2
    total_probes: int | None = None
    distractors: int = 0
    topology: Topology = "forward"
    revisits: tuple[int, int] = (1, 2)
    update_prob: float = 0.4
    placement: Placement = "spread"
    early_fraction: float = 0.5
    sessions: int = 1
    fact_types: tuple[str, ...] = FACT_TYPE_NAMES

    def __post_init__(self) -> None:
        _validate(self)

    def probes_for(self, index: int) -> int:
        """Number of probes of conversation ``index``."""
        if self.total_probes is None:
            return self.probes
        base, extra = divmod(self.total_probes, self.conversations)
        return base + (1 if index < extra else 0)

    def topology_for(self, index: int) -> Literal["forward", "revisit"]:
        """Topology of conversation ``index`` (``mixed`` alternates)."""
        if self.topology == "mixed":
            return "forward" if index % 2 == 0 else "revisit"
        return self.topology


def _validate(c: SyntheticConfig) -> None:
    def bad(msg: str) -> None:
        raise ValueError(f"SyntheticConfig: {msg}")

    if c.topology not in ("forward", "revisit", "mixed"):
        bad(f"topology must be forward, revisit or mixed, not {c.topology!r}")
    if c.placement not in ("spread", "early"):
        bad(f"placement must be spread or early, not {c.placement!r}")
    if c.conversations < 1:
        bad("conversations must be >= 1")
    lo, hi = c.turns
    if not 6 <= lo <= hi:
        bad(f"turns must be (min, max) with 6 <= min <= max, got {c.turns}")
    unknown = [t for t in c.fact_types if t not in FACT_TYPE_NAMES]
    if unknown or not c.fact_types or len(set(c.fact_types)) != len(c.fact_types):
        bad(
            f"fact_types must be distinct names from {', '.join(FACT_TYPE_NAMES)}; "
            f"got {c.fact_types}"
        )
    if not 1 <= c.facts <= len(c.fact_types):
        bad(f"facts must be 1..{len(c.fact_types)} (one per fact type), got {c.facts}")
    most = c.probes if c.total_probes is None else -(-c.total_probes // c.conversations)
    if c.total_probes is not None and c.total_probes < 0 or c.probes < 0:
        bad("probes must be >= 0")
    if most > 2 * c.facts:
        bad(
            f"{most} probes per conversation need at least {-(-most // 2)} facts "
            f"(two probes per fact at most), got facts={c.facts}"
        )
    if c.distractors < 0 or not 0 <= c.revisits[0] <= c.revisits[1]:
        bad("distractors must be >= 0 and revisits (min, max) with 0 <= min <= max")
    if not 0.0 <= c.update_prob <= 1.0 or not 0.0 < c.early_fraction <= 1.0:
        bad("update_prob must be in [0, 1] and early_fraction in (0, 1]")
    revisit = c.revisits[1] if c.topology != "forward" else 0
    needed = 1 + c.facts * (1 + c.distractors + revisit)
    if needed > lo // 2:
        bad(
            f"{lo} turns hold {lo // 2} exchanges, but the greeting, {c.facts} facts, "
            f"their distractors and revisits need {needed}; raise turns or lower the rest"
        )
    if not 1 <= c.sessions <= lo // 2:
        bad(f"sessions must be 1..{lo // 2}, got {c.sessions}")


PRESETS: dict[str, SyntheticConfig] = {
    "controlled": SyntheticConfig(
        name="controlled",
        conversations=10,
        turns=(20, 35),
        facts=3,
        total_probes=22,
        distractors=0,
        topology="forward",
        placement="early",
    ),
    "ablation": SyntheticConfig(
        name="ablation",
        conversations=20,
        turns=(116, 124),
        facts=6,
        probes=8,
        distractors=2,
        topology="mixed",
        placement="spread",
    ),
    "ablation-deepseek": SyntheticConfig(
        name="ablation-deepseek",
        conversations=5,
        turns=(116, 124),
        facts=6,
        total_probes=39,
        distractors=2,
        topology="mixed",
        placement="spread",
    ),
}


def get_preset(name: str, **changes: object) -> SyntheticConfig:
    """The preset called ``name`` (with optional field ``changes``); unknown -> ValueError."""
    try:
        preset = PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown synthetic preset {name!r}; valid presets: {', '.join(PRESETS)}"
        ) from None
    return replace(preset, **changes) if changes else preset  # type: ignore[arg-type]
