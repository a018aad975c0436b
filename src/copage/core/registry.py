"""Name -> factory registries with friendly errors.

Every pluggable part (boundaries, policies, keyword extractors, bookmark formats,
stores, model providers) is chosen by a name. Unknown names fail with the list of
valid ones. Factories import their heavy dependencies only when called.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(ValueError):
    """An unknown component name; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        self.kind, self.name, self.valid = kind, name, valid
        super().__init__(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(valid)}")


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
