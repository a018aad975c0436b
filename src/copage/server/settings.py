"""``copage serve`` settings: one frozen value, from a config file, the environment and flags.

Precedence: command-line flags > environment variables > config file > defaults.
Environment variables: ``COPAGE_<NAME>`` for each setting (``COPAGE_UPSTREAM``,
``COPAGE_STORE``, ``COPAGE_PORT``, ...), ``COPAGE_KEYS`` (``key1=tenantA,key2=tenantB``),
``COPAGE_UPSTREAM_KEY`` (the upstream API key, or ``client``: each client's own key is
passed on) and ``COPAGE_CONFIG`` (a TOML or JSON file with the same names in lower case).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from copage.core.config import PagerConfig
from copage.llm.errors import url_secrets
from copage.session.auth import digest, is_digest
from copage.session.modes import DEFAULT_RECALL_MODE, proxy_mode
from copage.session.speculate import DEFAULT_TOKENS
from copage.stores import default_store_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
ENV_PREFIX = "COPAGE_"
METRICS_MODES = ("key", "open", "off")
_PAGING = ("boundary", "policy", "resident_pages", "resident_tokens", "budget_tokens",
           "budget_floor", "keywords", "n_keywords", "bookmark_tokens", "bookmark_format",
           "recall_by_query")


#: What ``--upstream-api`` accepts.
UPSTREAM_APIS = ("chat", "responses", "messages")
#: ``--upstream-key client``: the upstream gets each client's own key, not the proxy's.
CLIENT_KEY = "client"


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Everything ``copage serve`` needs (see module docstring for the sources).

    Attributes:
        upstream: base URL of an OpenAI-compatible endpoint (the client's ``model`` passes).
        upstream_api: the API the upstream speaks: ``chat`` (Chat Completions, the
            default), ``responses`` (the Responses API) or ``messages`` (Anthropic).
        model: a model spec (``anthropic:claude-haiku-4-5``) that fixes the model instead.
        upstream_key: API key for the upstream (never logged or shown), or ``client``:
            each request's own key (``Authorization: Bearer`` or ``x-api-key``) goes to
            the upstream instead, and each client key is its own tenant.
        tenant_keys: tenant -> its own upstream key (from the keys file), used for that
            tenant's requests instead of ``upstream_key``.
        store: store URL (``sqlite:///path``, ``postgresql://...``, ``memory://``).
        host, port: where to listen.
        keys: proxy API key -> tenant; empty means one tenant ``default`` on loopback only.
            Stored as ``sha256:HEX`` digests (a digest may also be given instead of a key).
        paging: pager settings of new conversations (a :class:`PagerConfig`).
        max_recalls: recall calls served per turn; later ones are refused.
        recall_mode: the recall steps of every turn, as :class:`~copage.session.PagedChat`'s
            ``recall_mode`` (default: the same; ``speculative``, ``tool``,
            ``speculative+tool`` or ``none``: the proxy does not run ``choose``).
        speculative_tokens: the speculative fill's allowance per turn (tokens).
        dense: the fill's meaning channel (docs/dense.md): None (the default) on when
            its model's files are there (bundled in int8, or fetched), else off;
            ``off`` never; ``auto`` required, from where
            :func:`copage.dense.find_model` looks; else a model folder (required).
        max_body_bytes, max_tools: request bounds (413 / 400 beyond).
        max_messages: messages per request (400 beyond); 0, the default, means no limit:
            a client resending its history grows without bound, the body size is the cap.
        upstream_timeout, upstream_retries: per upstream call.
        workers: uvicorn worker processes on this port.
        cache_conversations: open conversations each worker keeps in memory (0: none).
        lock_timeout: seconds a turn waits for its conversation's lock (then 409).
        metrics: ``/metrics`` access: ``key`` (any proxy key; open when no keys are
            configured), ``open`` (no key) or ``off`` (404).
        cors: browser origins allowed to call the API cross-origin (``https://app.example``).
        idempotency_window: seconds during which a request identical to the one that
            produced a conversation's last answer is answered from the store (a retry).
    """

    upstream: str | None = None
    upstream_api: str = "chat"
    model: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    store: str = ""
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    tenant_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    paging: PagerConfig = field(default_factory=PagerConfig)
    max_recalls: int = 3
    recall_mode: str = DEFAULT_RECALL_MODE
    speculative_tokens: int = DEFAULT_TOKENS
    dense: str | None = None
    max_body_bytes: int = 32 * 1024 * 1024
    max_messages: int = 0
    max_tools: int = 128
    upstream_timeout: float = 120.0
    upstream_retries: int = 0
    workers: int = 1
    cache_conversations: int = 256
    lock_timeout: float = 30.0
    metrics: str = "key"
    cors: tuple[str, ...] = ()
    idempotency_window: float = 600.0

    def __post_init__(self) -> None:
        if bool(self.upstream) == bool(self.model):
            raise ValueError("give exactly one of --upstream URL or --model SPEC")
        if self.upstream and not self.upstream.startswith(("http://", "https://")):
            raise ValueError(f"--upstream must be an http(s) URL, got {self.upstream!r}")
        if self.upstream_api not in UPSTREAM_APIS:
            raise ValueError(f"--upstream-api must be one of {', '.join(UPSTREAM_APIS)}, got "
                             f"{self.upstream_api!r}")
        if self.upstream_api != "chat" and not self.upstream:
            raise ValueError("--upstream-api needs --upstream URL (a --model spec names its "
                             "own API)")
        if not self.store:
            object.__setattr__(self, "store", default_store_url())
        for name in ("max_recalls", "max_body_bytes", "max_messages", "max_tools", "workers"):
            if int(getattr(self, name)) < (0 if name in ("max_recalls", "max_messages") else 1):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        proxy_mode(self.recall_mode)
        if self.speculative_tokens < 0:
            raise ValueError(f"speculative_tokens must be >= 0, got {self.speculative_tokens}")
        if not self.lock_timeout > 0:
            raise ValueError(f"lock_timeout must be > 0 seconds, got {self.lock_timeout}")
        if self.cache_conversations < 0:
            raise ValueError(f"cache_conversations must be >= 0, got {self.cache_conversations}")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be in 1..65535, got {self.port}")
        for key, tenant in self.keys.items():
            if (len(key) < 8 and not is_digest(key)) or not tenant:
                raise ValueError("proxy keys must be at least 8 characters and name a tenant")
        if self.client_key:
            if not self.upstream:
                raise ValueError("--upstream-key client needs --upstream URL (a --model spec "
                                 "takes its key from the environment)")
            if self.keys:
                raise ValueError("--upstream-key client takes no proxy keys: each client's "
                                 "own upstream key is passed on and names its tenant")
        for tenant, key in self.tenant_keys.items():
            if not key or tenant not in self.keys.values():
                raise ValueError(f"an upstream key is given for tenant {tenant!r}, which no "
                                 "proxy key names (or the key is empty)")
        # Keys are kept only as digests: no plaintext proxy key outlives start-up.
        object.__setattr__(self, "keys", {digest(k): t for k, t in self.keys.items()})
        if self.metrics not in METRICS_MODES:
            raise ValueError(f"metrics must be one of {', '.join(METRICS_MODES)}, "
                             f"got {self.metrics!r}")
        cors = (self.cors.split(",") if isinstance(self.cors, str) else self.cors)
        object.__setattr__(self, "cors", tuple(o.strip().rstrip("/") for o in cors if o.strip()))
        for origin in self.cors:
            if origin != "*" and not origin.startswith(("http://", "https://")):
                raise ValueError(f"--cors origins look like https://app.example, got {origin!r}")
        if self.idempotency_window < 0:
            raise ValueError("idempotency_window must be >= 0 seconds")

    @property
    def client_key(self) -> bool:
        """True under ``--upstream-key client``."""
        return self.upstream_key == CLIENT_KEY

    def secrets(self) -> list[str]:
        """The plaintext secrets the server holds (to redact from logs and errors):
        the upstream key, the tenants' upstream keys and the credentials and query
        values of the upstream and store URLs. Proxy keys are not among them: only
        their digests are kept (and clients' own keys are never kept)."""
        own = None if self.client_key else self.upstream_key
        out = [own, *self.tenant_keys.values(), *url_secrets(self.upstream),
               *url_secrets(self.store)]
        for url in (self.upstream, self.store):
            out += query_values(url)
        return [s for s in out if s]

    def keyless_warning(self) -> str | None:
        """A warning when the upstream is another host and no key at all would reach it
        (no upstream key, not ``client``, and some tenant without its own key): it is
        then open to anyone who can reach it, or every request will be refused."""
        if not self.upstream or self.upstream_key or _loopback(self.upstream):
            return None
        keyless = sorted(set(self.keys.values()) - set(self.tenant_keys)) if self.keys \
            else ["default"]
        if not keyless:
            return None
        from copage.llm.errors import safe_url

        return (f"the upstream {safe_url(self.upstream)} is not on this machine and no "
                f"upstream key is set for tenant(s) {', '.join(keyless)}: set "
                "COPAGE_UPSTREAM_KEY, give tenants an upstream_key in the keys file, or "
                "pass each client's own key with --upstream-key client")

    def with_(self, **changes: Any) -> ServeSettings:
        """A copy with some fields changed."""
        return replace(self, **changes)


def _loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (localhost or a loopback address)."""
    from urllib.parse import urlsplit

    from copage.llm.guard import is_loopback

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return is_loopback(host)


def query_values(url: str | None) -> list[str]:
    """The values of ``url``'s query parameters (``?api-key=...``), which may be secrets."""
    from urllib.parse import parse_qsl, urlsplit

    if not url:
        return []
    try:
        return [v for _, v in parse_qsl(urlsplit(url).query) if len(v) >= 4]
    except ValueError:
        return []


def parse_keys(text: str) -> dict[str, str]:
    """``key1=tenantA,key2=tenantB`` -> ``{key1: tenantA, ...}`` (clear error on bad items)."""
    out: dict[str, str] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        key, sep, tenant = item.partition("=")
        if not sep or not key.strip() or not tenant.strip():
            raise ValueError("COPAGE_KEYS items must look like key=tenant (item not shown)")
        out[key.strip()] = tenant.strip()
    return out


def load_keys_file(path: str | Path) -> dict[str, str]:
    """A JSON or TOML file ``{"key": "tenant"}`` (or a ``[keys]`` table); a value may
    also be ``{"tenant": ..., "upstream_key": ...}`` (see :func:`load_keys_file_full`)."""
    return load_keys_file_full(path)[0]


def load_keys_file_full(path: str | Path) -> tuple[dict[str, str], dict[str, str]]:
    """The keys file's proxy keys (key -> tenant) and tenants' upstream keys
    (tenant -> key). Each entry is ``"key" = "tenant"`` or
    ``"key" = {tenant = "alice", upstream_key = "sk-..."}``."""
    p = Path(path)
    try:
        raw = p.read_text()
    except OSError as e:
        raise ValueError(f"cannot read keys file {p}: {e.strerror}") from None
    data = _parse_file(p, raw)
    if isinstance(data.get("keys"), Mapping):
        data = dict(data["keys"])
    return split_keys(data, f"keys file {p}")


def split_keys(data: Mapping[str, Any], where: str) -> tuple[dict[str, str], dict[str, str]]:
    """``{key: tenant | {tenant, upstream_key}}`` -> (key -> tenant, tenant -> upstream key).
    Errors name neither key (they are secrets), only ``where`` and the tenant."""
    keys: dict[str, str] = {}
    upstream: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            tenant, own = value.get("tenant"), value.get("upstream_key")
            extra = sorted(set(value) - {"tenant", "upstream_key"})
            if extra:
                raise ValueError(f"{where}: unknown field(s) {extra} in an entry (valid: "
                                 "tenant, upstream_key)")
            if own is not None:
                if not isinstance(own, str) or not own or not isinstance(tenant, str):
                    raise ValueError(f"{where}: upstream_key must be a non-empty string")
                if upstream.get(tenant, own) != own:
                    raise ValueError(f"{where}: tenant {tenant!r} has two upstream keys")
                upstream[tenant] = own
            value = tenant
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(  # noqa: TRY004 - a bad file: the CLI's one-line error
                f"{where} must map key strings to tenant strings (or "
                "{tenant, upstream_key} tables)")
        keys[key] = value
    return keys, upstream


def _parse_file(p: Path, raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw) if p.suffix == ".json" else tomllib.loads(raw)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"cannot parse {p}: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{p} must hold a table/object at the top level")  # noqa: TRY004
    return data


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The settings in a TOML/JSON config file (names as in :class:`ServeSettings`)."""
    p = Path(path)
    try:
        raw = p.read_text()
    except OSError as e:
        raise ValueError(f"cannot read config file {p}: {e.strerror}") from None
    data = _parse_file(p, raw)
    valid = {f.name for f in fields(ServeSettings)} | {"keys_file", *_PAGING}
    unknown = sorted(set(data) - valid - {"paging"})
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown} in {p}; valid: {sorted(valid)}")
    return data


def build_settings(
    flags: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> ServeSettings:
    """Merge flags (None = not given), the environment and the config file."""
    env = os.environ if env is None else env
    conf: dict[str, Any] = {}
    cfg_path = flags.get("config") or env.get("COPAGE_CONFIG")
    if cfg_path:
        conf = load_config_file(cfg_path)
    paging_conf = dict(conf.pop("paging", {}) or {})

    def pick(name: str, cast: Any = str) -> Any:
        if flags.get(name) is not None:
            return flags[name]
        value = env.get(ENV_PREFIX + name.upper())
        if value not in (None, ""):
            try:
                return cast(value)
            except ValueError:
                raise ValueError(f"{ENV_PREFIX}{name.upper()} is not a valid {name}") from None
        return conf.get(name)

    keys: dict[str, str] = {}
    tenant_keys: dict[str, str] = {}
    keys_file = pick("keys_file")
    if keys_file:
        found, own = load_keys_file_full(keys_file)
        keys.update(found)
        tenant_keys.update(own)
    if env.get("COPAGE_KEYS"):
        keys.update(parse_keys(env["COPAGE_KEYS"]))
    if isinstance(conf.get("keys"), Mapping):
        found, own = split_keys(conf["keys"], "the config file's keys")
        keys.update(found)
        tenant_keys.update(own)
    paging: dict[str, Any] = {}
    for name in _PAGING:
        value = flags.get(name)
        if value is None:
            value = paging_conf.get(name, conf.get(name))
        if value is not None:
            paging[name] = value
    upstream, model = pick("upstream"), pick("model")
    if flags.get("upstream") and not flags.get("model"):
        model = None
    if flags.get("model") and not flags.get("upstream"):
        upstream = None
    kwargs: dict[str, Any] = {
        "upstream": upstream, "model": model,
        "upstream_key": (flags.get("upstream_key") or env.get("COPAGE_UPSTREAM_KEY")
                         or conf.get("upstream_key")),
        "store": pick("store") or "", "keys": keys, "tenant_keys": tenant_keys,
        "paging": PagerConfig(**paging),
    }
    for name, cast in (("host", str), ("port", int), ("max_recalls", int),
                       ("max_body_bytes", int), ("max_messages", int), ("max_tools", int),
                       ("upstream_timeout", float), ("upstream_retries", int), ("workers", int),
                       ("cache_conversations", int), ("lock_timeout", float),
                       ("metrics", str), ("idempotency_window", float),
                       ("upstream_api", str), ("recall_mode", str),
                       ("speculative_tokens", int), ("dense", str)):
        value = pick(name, cast)
        if value is not None:
            kwargs[name] = cast(value)
    cors = pick("cors")
    if cors:
        kwargs["cors"] = tuple(cors.split(",")) if isinstance(cors, str) else tuple(cors)
    return ServeSettings(**kwargs)
