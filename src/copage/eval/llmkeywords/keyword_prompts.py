"""Prompts of the LLM keyword generators (paper section 6).

Each prompt asks for short, specific, consequence-relevant keywords (the paper's
keyword-specificity finding: ``"dietary preference, vegetarian"`` beats
``"personal preferences"``) and for JSON only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from copage.core.types import Page, PageId

SYSTEM = (
    "You write keyword bookmarks for pages of a long conversation. A bookmark stands in "
    "for a page that was removed from the context; later, a reader sees only the bookmarks "
    "and must pick the page that holds a needed fact. Good keywords are short (1-3 words), "
    "specific and concrete (names, places, amounts, dates, allergens, products, decisions), "
    "and tell this page apart from the others. Avoid generic labels such as 'personal "
    "preferences', 'chat' or 'plans'. Answer with JSON only, no explanation."
)

NON_OVERLAP = (
    "Constraint: no keyword may appear in the list of more than one page, and no keyword "
    "may repeat one already used by another page."
)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (marked with an ellipsis when cut)."""
    return text if len(text) <= limit else text[: max(0, limit - 3)].rstrip() + "..."


def digest_line(pid: PageId, keywords: Sequence[str]) -> str:
    """One line of the page index: ``p3: Thai Garden, peanut allergy``."""
    return f"{pid}: {', '.join(keywords) if keywords else '(no keywords)'}"


def digest_block(digests: Mapping[PageId, Sequence[str]], limit: int) -> str:
    """Digest lines of other pages, newest kept when they do not all fit in ``limit`` chars."""
    lines: list[str] = []
    used = 0
    for pid in reversed(list(digests)):
        line = digest_line(pid, digests[pid])
        if used + len(line) + 1 > limit:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(reversed(lines)) if lines else "(none)"


def contextual_prompt(
    page: Page, others: Mapping[PageId, Sequence[str]], n: int, *, page_chars: int,
    digest_chars: int,
) -> str:
    """One page with a digest of every other page: pick ``n`` distinguishing keywords."""
    return (
        f"The other pages of the conversation, one line each:\n"
        f"{digest_block(others, digest_chars)}\n\n"
        f"Page {page.id}:\n<<<\n{clip(page.text, page_chars)}\n>>>\n\n"
        f"Give {n} keywords for page {page.id} that best tell it apart from the other pages: "
        f"facts someone would later need from it. Reply as a JSON list of strings, "
        f'e.g. ["keyword one", "keyword two"].'
    )


def batch_prompt(
    pages: Sequence[Page], n: int, *, page_chars: int, used: Sequence[str] = (),
) -> str:
    """All pages at once with the cross-page non-overlap constraint."""
    blocks = "\n\n".join(
        f"Page {p.id}:\n<<<\n{clip(p.text, page_chars)}\n>>>" for p in pages
    )
    ids = ", ".join(p.id for p in pages)
    taken = (
        f"\nKeywords already used by other pages of the same conversation (do not reuse): "
        f"{', '.join(used)}\n" if used else ""
    )
    example = ", ".join(f'"{p.id}": ["...", "..."]' for p in pages[:2])
    return (
        f"{blocks}\n\nFor each page ({ids}) give {n} keywords.\n{NON_OVERLAP}\n{taken}"
        f"Reply with one JSON object mapping each page id to its list of keywords, "
        f"e.g. {{{example}}}."
    )


def hybrid_prompt(
    pages: Sequence[Page], base: Mapping[PageId, Sequence[str]],
    others: Mapping[PageId, Sequence[str]], *, page_chars: int, digest_chars: int,
) -> str:
    """Pages with their heuristic keywords: add one discriminative keyword to each."""
    blocks = "\n\n".join(
        f"Page {p.id} (current keywords: {', '.join(base.get(p.id, ())) or 'none'}):\n"
        f"<<<\n{clip(p.text, page_chars)}\n>>>"
        for p in pages
    )
    context = (
        f"Other pages of the conversation, one line each:\n"
        f"{digest_block(others, digest_chars)}\n\n" if others else ""
    )
    example = ", ".join(f'"{p.id}": "..."' for p in pages[:2])
    return (
        f"{context}{blocks}\n\nFor each page above, add exactly ONE new keyword that tells it "
        f"apart from every other page (a specific fact of that page that the current keywords "
        f"miss). It must not repeat any current keyword of any page, and no two pages may get "
        f"the same new keyword.\nReply with one JSON object mapping each page id to its new "
        f"keyword, e.g. {{{example}}}."
    )
