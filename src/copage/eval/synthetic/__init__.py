"""Synthetic user/assistant conversations with planted facts, in LoCoMo format.

The paper (section 4 and the ablations of section 5) evaluates paging on
synthetic conversations with planted critical information; this package makes
them reproducibly. ``generate(config, seed)`` returns a list of LoCoMo samples
that every copage tool reads like ``locomo10.json``.

Design
    A conversation is a sequence of exchanges (a ``User`` turn and the
    ``Assistant``'s reply) in one session, ``session_1`` (``sessions=N`` cuts it
    into N sessions). Exchange 0 is a greeting. ``layout`` places, per planted
    fact, its statement, its later revisits (``revisit`` topology only) and its
    distractors; ``filler`` fills the rest with topic blocks from twelve
    families (travel, cooking, coding, fitness, movies, home repair, gardening,
    job search, books, music, pets, photography). Filler never mentions a fact
    keyword, an allergen, meat, a weekday, a date or an amount, so it cannot
    restate or contradict a fact.

    Facts are of seven types (allergy, budget, deadline, medical, preference,
    schedule, contact), at most one per type per conversation, so two facts
    never contradict each other; the only change of value is an explicit update
    under ``revisit`` topology. Each type has several topics (the laptop budget,
    choir practice, the dog sitter), value pools and several templates per role;
    values have surface variants (``$1,200`` / ``1200 dollars`` / ``twelve
    hundred bucks``; ``March 14`` / ``March 14th`` / ``14 March``).

    Distractors (``distractors`` per fact) share the type's generic keyword
    (``budget``, ``allerg``, ``medic``, ``deadline``, ``prefer``, ``schedule``,
    ``contact``) but belong to someone or something else: a friend's laptop
    budget, a colleague's deadline, a medication taken years ago. They are never
    evidence; this is the paper's hard case (bookmarks of several pages share
    "budget").

    Topology: ``forward`` states each fact once and never comes back to it (the
    paper's synthetic data, where FIFO does best); ``revisit`` re-mentions each
    fact 1-2 times later (``revisits``), sometimes updating it (``update_prob``),
    resumes filler families ("Back to cooking for a second."), and asks probes
    about facts that come back, as in LoCoMo. ``placement="early"`` puts the
    statements in the first ``early_fraction`` of the conversation so paging
    evicts them. :func:`revisit_rate` measures the difference.

Probes (the ``qa`` list)
    Each probe has ``question``, ``answer`` (the fact's latest value in its key
    form, short enough for exact-match checks: ``peanuts``, ``$1,200``,
    ``March 14``, ``Tuesday``, ``555-0142``), ``evidence`` (every user turn that
    states the latest value: the statement, re-mentions and the update turn, not
    superseded mentions and never distractors), ``category``, and the extra keys
    ``fact_type``, ``probe_kind`` (``direct`` / ``indirect``) and
    ``answer_forms`` (the key and its surface variants, for lenient matching).
    Category: 4 (LoCoMo single-hop) for direct questions ("What am I allergic
    to?"), 3 (LoCoMo open-domain, inferential) for indirect ones whose answer
    must respect the fact ("Can you suggest a restaurant for Friday?"). Each
    sample also carries a ``synthetic`` record (topology, facts, their turns and
    distractor turns) that LoCoMo readers ignore. Its ``segments`` list is the gold
    topic segmentation: the first turn index (0-based, whole conversation) of each
    topic block (a filler family block, each fact, distractor or small-talk
    exchange, the greeting, the closing turn); see ``builder.topic_starts``.

Presets and how the probe x configuration counts add up
    ``controlled``: 10 conversations of 20-35 turns, 3 facts each, 22 probes in
    all (3+3+2x8), forward topology, facts early: the paper's section 4.

    ``ablation``: 20 conversations of about 120 turns (116-124; fixed_20 cuts
    about 6 pages, fixed_10 about 12, fixed_5 about 24), 6 facts, 8 probes and
    2 distractors per fact, half forward and half revisit. 20 x 8 = 160 probes;
    x 5 boundary strategies (e.g. fixed_5, fixed_10, fixed_20, topic_shift,
    segment) x 4 eviction policies (fifo, lru, lfu, belady) = 20 configurations
    -> 3,200 probe x configuration runs, the scale of the paper's 3,176 (which
    is not a multiple of 20; runs were presumably lost).

    ``ablation-deepseek``: the same conversations' shape, 5 conversations and 39
    probes (8+8+8+8+7) x 20 configurations = 780 runs, the paper's DeepSeek
    replication figure exactly.

Sample ids encode preset, seed and index: ``synth-ablation-s0-03``. Each
conversation draws from its own ``random.Random`` seeded by (seed, index), so the
same seed gives byte-identical JSON from :func:`write_json`.
"""

from copage.eval.synthetic.builder import CATEGORY, locomo_datetime
from copage.eval.synthetic.facts import FACT_TYPES, get_fact_type
from copage.eval.synthetic.generate import generate, generate_preset, write_json
from copage.eval.synthetic.measures import keyword_turns, revisit_rate
from copage.eval.synthetic.presets import PRESETS, SyntheticConfig, get_preset
from copage.eval.synthetic.values import FACT_TYPE_NAMES, mentions, mentions_any

__all__ = [
    "CATEGORY",
    "FACT_TYPES",
    "FACT_TYPE_NAMES",
    "PRESETS",
    "SyntheticConfig",
    "generate",
    "generate_preset",
    "get_fact_type",
    "get_preset",
    "keyword_turns",
    "locomo_datetime",
    "mentions",
    "mentions_any",
    "revisit_rate",
    "write_json",
]
