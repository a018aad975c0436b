"""Who is calling: a request's tenant and the key its upstream calls are made with.

Three ways, by the settings (:class:`~copage.server.settings.ServeSettings`):

* proxy keys: the presented key names a tenant (:class:`~copage.session.auth.KeyRing`);
  the upstream is called with that tenant's own upstream key from the keys file, else
  with the proxy's key;
* ``--upstream-key client``: the presented key is the client's own upstream key and is
  passed on as it is; each such key is its own tenant (``key-`` and 16 hex digits of its
  SHA-256), so clients sharing a proxy never see each other's conversations, and the
  proxy keeps no key beyond the request (only digests, for redaction);
* neither: one tenant ``default`` and the proxy's key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from copage.server.logs import Redactor
from copage.server.settings import ServeSettings
from copage.session.auth import KeyRing, digest

#: Tenants named after a client's own key start with this.
CLIENT_TENANT = "key-"
#: Digests of clients' keys the redactor learns, at most (then the oldest half goes).
MAX_CLIENT_KEYS = 10_000


@dataclass(frozen=True, slots=True)
class Caller:
    """A request's tenant and the upstream key for it (None: the proxy's own)."""

    tenant: str
    upstream_key: str | None = field(default=None, repr=False)


def bearer(authorization: str | None) -> str | None:
    """The key of ``Authorization: Bearer KEY``, None for anything else."""
    if not authorization:
        return None
    scheme, _, key = authorization.strip().partition(" ")
    key = key.strip()
    return key if scheme.lower() == "bearer" and key else None


def client_tenant(key: str) -> str:
    """The tenant of a client's own key (``--upstream-key client``)."""
    return CLIENT_TENANT + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


class ClientKeys:
    """Teaches the log and error redactor the digest of every client key seen, so a key
    an upstream echoes back (``Incorrect API key provided: ...``) is replaced by ``***``
    wherever it would be written; the plaintext is not kept."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._own = frozenset(redactor.digests)
        self._seen: dict[str, None] = {}

    def note(self, key: str) -> None:
        """Remember ``key``'s digest (bounded: the oldest half is forgotten beyond
        :data:`MAX_CLIENT_KEYS`)."""
        d = digest(key)
        if d in self._seen:
            return
        self._seen[d] = None
        if len(self._seen) > MAX_CLIENT_KEYS:
            for old in list(self._seen)[: MAX_CLIENT_KEYS // 2]:
                del self._seen[old]
        self.redactor.digests = self._own | frozenset(self._seen)


def caller(settings: ServeSettings, keys: KeyRing, seen: ClientKeys,
           authorization: str | None) -> Caller | None:
    """The caller presenting ``authorization``; None when refused (no or unknown key)."""
    if settings.client_key:
        key = bearer(authorization)
        if key is None:
            return None
        seen.note(key)
        return Caller(client_tenant(key), key)
    tenant = keys.tenant(authorization)
    if tenant is None:
        return None
    return Caller(tenant, settings.tenant_keys.get(tenant))
