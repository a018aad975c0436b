"""Proxy API keys -> tenants. Keys are kept only as SHA-256 digests.

:class:`~copage.server.settings.ServeSettings` turns every configured key into
``sha256:HEX`` as soon as it is built (a keys file may also hold such digests
instead of keys), so no plaintext proxy key stays in the server's memory after
start-up. A presented key is hashed and compared with each digest in constant
time; log redaction finds keys by hashing key-shaped tokens (see :func:`find_keys`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping

DEFAULT_TENANT = "default"
DIGEST_PREFIX = "sha256:"
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
#: What a key may look like when it turns up in text (a token of 8+ such characters).
_TOKEN = re.compile(r"[A-Za-z0-9_\-.~+/=]{8,}")


def digest(key: str) -> str:
    """``sha256:HEX`` of a proxy key (a digest given as ``sha256:HEX`` is kept as is)."""
    if is_digest(key):
        return key.lower()
    return DIGEST_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def is_digest(value: str) -> bool:
    """True for ``sha256:`` followed by 64 hex digits."""
    return value.lower().startswith(DIGEST_PREFIX) and bool(
        _HEX64.match(value[len(DIGEST_PREFIX):].lower()))


def find_keys(text: str, digests: frozenset[str]) -> list[str]:
    """The tokens of ``text`` whose digest is one of ``digests`` (known proxy keys)."""
    if not digests:
        return []
    return [t for t in set(_TOKEN.findall(text)) if digest(t) in digests]


class KeyRing:
    """Maps a presented bearer key to its tenant; open (one tenant) when empty.

    Args:
        keys: ``sha256:HEX`` digest (or plaintext key, hashed here) -> tenant.
    """

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._tenants = {bytes.fromhex(digest(k)[len(DIGEST_PREFIX):]): t
                         for k, t in keys.items()}

    @property
    def open(self) -> bool:
        """True when no keys are configured (every caller is tenant ``default``)."""
        return not self._tenants

    @property
    def digests(self) -> frozenset[str]:
        """The known keys' ``sha256:HEX`` digests."""
        return frozenset(DIGEST_PREFIX + d.hex() for d in self._tenants)

    def tenant(self, authorization: str | None) -> str | None:
        """The tenant of an ``Authorization: Bearer KEY`` header, or None if refused."""
        if self.open:
            return DEFAULT_TENANT
        if not authorization:
            return None
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            return None
        presented = hashlib.sha256(key.strip().encode("utf-8", "surrogateescape")).digest()
        found = None
        for known, tenant in self._tenants.items():  # constant time per entry
            if hmac.compare_digest(known, presented):
                found = tenant
        return found
