"""Proxy API keys -> tenants. Keys are kept only as SHA-256 digests."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

DEFAULT_TENANT = "default"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest()


class KeyRing:
    """Maps a presented bearer key to its tenant; open (one tenant) when empty."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._tenants = {_digest(k): t for k, t in keys.items()}

    @property
    def open(self) -> bool:
        """True when no keys are configured (every caller is tenant ``default``)."""
        return not self._tenants

    def tenant(self, authorization: str | None) -> str | None:
        """The tenant of an ``Authorization: Bearer KEY`` header, or None if refused."""
        if self.open:
            return DEFAULT_TENANT
        if not authorization:
            return None
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return None
        digest = _digest(key.strip())
        found = None
        for known, tenant in self._tenants.items():  # constant time per entry
            if hmac.compare_digest(known, digest):
                found = tenant
        return found
