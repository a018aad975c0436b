"""Name -> factory registries with friendly errors.

Every pluggable part (boundaries, policies, keyword extractors, bookmark formats,
stores, model providers) is chosen by a name. Unknown names fail with the list of
valid ones (:class:`UnknownNameError`), unknown options with the list of valid
options (:class:`UnknownOptionError`, raised by :func:`check_options`): one message
format everywhere. Factories import their heavy dependencies only when called.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")


def plural(noun: str) -> str:
    """English plural of the last word of ``noun`` (``policy`` -> ``policies``,
    ``store scheme`` -> ``store schemes``, ``boundary`` -> ``boundaries``)."""
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _listing(valid: Sequence[str]) -> str:
    return ", ".join(valid) if valid else "none"


class UnknownNameError(ValueError):
    """An unknown name; the message lists the valid ones.

    One message format for every unknown choice in copage:
    ``unknown <kind> 'name'; valid <kinds>: a, b, c``.
    """

    def __init__(self, kind: str, name: str, valid: Sequence[str]) -> None:
        self.kind, self.name, self.valid = kind, name, list(valid)
        super().__init__(f"unknown {kind} {name!r}; valid {plural(kind)}: {_listing(self.valid)}")


class UnknownOptionError(UnknownNameError):
    """Options a component does not take; the message names the component and its options.

    ``unknown option 'x' for policy 'lru'; valid options: a, b`` (``options 'x', 'y'``
    when several are unknown; ``valid options: none`` when it takes none).
    """

    def __init__(self, owner: str, names: Sequence[str], valid: Sequence[str]) -> None:
        self.owner = owner
        self.names = list(names)
        self.kind, self.name, self.valid = "option", self.names[0], list(valid)
        label = "option" if len(self.names) == 1 else "options"
        shown = ", ".join(repr(n) for n in self.names)
        ValueError.__init__(
            self, f"unknown {label} {shown} for {owner}; valid options: {_listing(self.valid)}"
        )


def check_options(
    owner: str, given: Iterable[str], allowed: Sequence[str],
    error: type[UnknownOptionError] = UnknownOptionError,
) -> None:
    """Raise :class:`UnknownOptionError` if ``given`` holds a name not in ``allowed``.

    ``owner`` names the component, e.g. ``"policy 'lru'"`` or ``"boundary 'segment'"``;
    ``error`` may be a subclass (e.g. one that is also a ``StoreError``).
    """
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise error(owner, unknown, list(allowed))


class Registry(Generic[T]):
    """Maps names (and ``prefix_N`` patterns) to factories.

    ``register("lru", factory)`` adds a plain name; ``register_pattern("fixed_N",
    r"fixed_(\\d+)", factory)`` adds a parametrised family whose factory receives
    the regex groups.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._plain: dict[str, Callable[..., T]] = {}
        self._patterns: list[tuple[str, re.Pattern[str], Callable[..., T]]] = []

    def register(self, name: str, factory: Callable[..., T]) -> None:
        self._plain[name] = factory

    def unregister(self, name: str) -> None:
        """Remove a plain name (no error if absent)."""
        self._plain.pop(name, None)

    def extended(self, factories: Mapping[str, Callable[..., T]]) -> Registry[T]:
        """A new registry: this one's names and patterns plus ``factories`` (which win
        over a name already here). This registry is left as it is, so a run can add
        names of its own (pass the new registry where a registry is taken) and
        nobody else sees them."""
        new: Registry[T] = Registry(self.kind)
        new._plain = {**self._plain, **factories}
        new._patterns = list(self._patterns)
        return new

    def register_pattern(self, label: str, pattern: str, factory: Callable[..., T]) -> None:
        self._patterns.append((label, re.compile(pattern + r"\Z"), factory))

    def names(self) -> list[str]:
        """Valid names; patterns appear by their label (e.g. ``fixed_N``)."""
        return sorted(self._plain) + [label for label, _, _ in self._patterns]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._plain or any(p.match(name) for _, p, _ in self._patterns)

    def create(self, name: str, **options: object) -> T:
        """Build the component named ``name``; extra options go to the factory."""
        if name in self._plain:
            return self._plain[name](**options)
        for _, pattern, factory in self._patterns:
            m = pattern.match(name)
            if m:
                return factory(*m.groups(), **options)
        raise UnknownNameError(self.kind, name, self.names())

    def check(self, name: str) -> str:
        """Return ``name`` if valid, else raise :class:`UnknownNameError`."""
        if name not in self:
            raise UnknownNameError(self.kind, name, self.names())
        return name
