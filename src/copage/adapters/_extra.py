"""The error an adapter raises when its framework is not installed."""

from __future__ import annotations


def missing_extra(error: ModuleNotFoundError, adapter: str, extra: str) -> ModuleNotFoundError:
    """``error`` (an import of ``adapter`` failed) said plainly: the missing package and
    the pip extra that brings it. A missing copage module is re-raised as it is."""
    if (error.name or "").startswith("copage"):
        return error
    package = (error.name or "").split(".")[0]
    return ModuleNotFoundError(
        f"copage.adapters.{adapter} needs the {package!r} package, from the {extra!r} extra: "
        f"pip install 'copage[{extra}]'", name=error.name)
