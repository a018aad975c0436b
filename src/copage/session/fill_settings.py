"""The speculative fill's options as one small frozen object, :class:`FillSettings`.

:class:`~copage.session.PagedChat` takes them as ``fill=FillSettings(...)``; its older
keyword arguments (``speculative_threshold``, ``speculative_tokens``,
``speculative_pages``, ``speculative_relative``, ``speculative_neighbours``) still
work and build the same object (:func:`resolve_fill`). What each option does:
:class:`~copage.session.speculate.Speculator` and ``docs/loop.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from copage.core.dense_rank import DenseRanker
from copage.dense.default_channel import DEFAULT, resolve
from copage.session.speculate import (
    DEFAULT_PAGES,
    DEFAULT_RELATIVE,
    DEFAULT_THRESHOLD,
    DEFAULT_TOKENS,
    Speculator,
)

__all__ = ["DEFAULT_DENSE", "KNOBS", "UNSET", "FillSettings", "Unset", "resolve_dense",
           "resolve_fill"]

DEFAULT_DENSE: Final = DEFAULT
""":attr:`FillSettings.dense`'s default: copage's default meaning channel (on when its
model's files are installed, unless ``COPAGE_DENSE=off``)."""


@dataclass(frozen=True, slots=True)
class FillSettings:
    """The speculative fill's options (validated on construction, ``ValueError``).

    Attributes:
        threshold: minimal normalised BM25 score of the best evicted page for a fill.
        tokens: the fill's allowance: the best-matching evicted pages are shown (for
            the turn only, just before the user's message) while their text fits in
            this many tokens.
        pages: at most this many pages per fill (None: no cap).
        relative: a page after the first needs at least this share of the best
            page's score (0 to 1).
        neighbours: also page in this many evicted pages on each side.
        dense: a second channel that ranks passages by meaning, for questions asked
            in other words than the fact (docs/dense.md): a
            :class:`~copage.core.dense_rank.DenseRanker` (:func:`copage.dense.ranker`
            builds one over all-MiniLM-L6-v2); ``"default"`` (the default) copage's
            default channel: on when the model's files are installed (``copage dense
            fetch``), unless ``COPAGE_DENSE=off`` (:func:`copage.dense.default_channel.default_ranker`);
            None or ``"off"``: BM25 only; ``"auto"`` or a model folder: required
            (``ModelMissing`` when the files are not there).
    """

    threshold: float = DEFAULT_THRESHOLD
    tokens: int = DEFAULT_TOKENS
    pages: int | None = DEFAULT_PAGES
    relative: float = DEFAULT_RELATIVE
    neighbours: int = 0
    dense: DenseRanker | str | None = DEFAULT_DENSE

    def __post_init__(self) -> None:
        self.speculator()  # the speculator's checks, with its messages

    def speculator(self) -> Speculator:
        """A new :class:`Speculator` with these options."""
        return Speculator(self.threshold, self.neighbours, tokens=self.tokens,
                          pages=self.pages, relative=self.relative,
                          dense=resolve_dense(self.dense))


def resolve_dense(dense: DenseRanker | str | None) -> DenseRanker | None:
    """The ranker a :attr:`FillSettings.dense` value stands for (None: BM25 only).

    Raises:
        TypeError: not a ranker, a string or None.
        ModelMissing, ModelDamaged: a required model (``"auto"``, a folder) is not there.
    """
    return resolve(dense)


class Unset(Enum):
    """The type of :data:`UNSET`: a keyword argument that was not given."""

    UNSET = "unset"


UNSET: Final = Unset.UNSET
"""The default of an older keyword argument, telling "not given" from any value."""

KNOBS: dict[str, str] = {
    "speculative_threshold": "threshold", "speculative_tokens": "tokens",
    "speculative_pages": "pages", "speculative_relative": "relative",
    "speculative_neighbours": "neighbours",
}
"""The older keyword arguments, by the :class:`FillSettings` field each one sets."""


def resolve_fill(fill: FillSettings | None, knobs: dict[str, object]) -> FillSettings:
    """The fill settings from ``fill`` or from the older keyword arguments ``knobs``
    (by their names in :data:`KNOBS`; :data:`UNSET` ones are left out).

    Raises:
        TypeError: ``fill`` and an older keyword argument were both given, or a
            name of ``knobs`` is not one of :data:`KNOBS`.
        ValueError: an option is invalid (:class:`FillSettings`).
    """
    given = {name: value for name, value in knobs.items() if value is not UNSET}
    unknown = sorted(set(given) - set(KNOBS))
    if unknown:
        raise TypeError(f"unknown fill option(s): {', '.join(unknown)}")
    if fill is None:
        return FillSettings(**{KNOBS[name]: value for name, value in given.items()})  # type: ignore[arg-type]
    if given:
        names = ", ".join(sorted(given))
        raise TypeError(f"pass fill= or {names}, not both (fill=FillSettings(...) holds "
                        f"{', '.join(KNOBS[n] for n in sorted(given))})")
    if not isinstance(fill, FillSettings):
        raise TypeError(f"fill must be a FillSettings, got {type(fill).__name__}")
    return fill
