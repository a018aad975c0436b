"""The seven planted fact types, by name (the paper's section 4 list)."""

from __future__ import annotations

from copage.eval.synthetic.facts_health import ALLERGY, MEDICAL, PREFERENCE
from copage.eval.synthetic.facts_plans import BUDGET, CONTACT, DEADLINE, SCHEDULE
from copage.eval.synthetic.values import FACT_TYPE_NAMES, FactType

FACT_TYPES: dict[str, FactType] = {
    t.name: t for t in (ALLERGY, BUDGET, DEADLINE, MEDICAL, PREFERENCE, SCHEDULE, CONTACT)
}
assert tuple(FACT_TYPES) == FACT_TYPE_NAMES


def get_fact_type(name: str) -> FactType:
    """The fact type called ``name``; unknown names raise a ValueError listing valid ones."""
    try:
        return FACT_TYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown fact type {name!r}; valid fact types: {', '.join(FACT_TYPES)}"
        ) from None
