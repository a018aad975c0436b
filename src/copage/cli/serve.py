"""``copage serve``: the OpenAI-compatible paging proxy (see ``docs/serve.md``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from copage.cli.paging_args import PAGING_FIELDS, add_paging_options
from copage.core.config import PagerConfig

FLAGS = ("upstream", "upstream_api", "model", "store", "host", "port", "config", "keys_file",
         "workers", *PAGING_FIELDS, "recall_by_query", "max_recalls", "recall_mode",
         "speculative_tokens", "dense", "max_body_bytes", "max_messages", "upstream_timeout",
         "upstream_retries", "lock_timeout", "metrics", "cors", "upstream_key")
"""Every option ``copage serve`` reads (the paging ones are :data:`PAGING_FIELDS`, all
of them: a parsed flag left out here would be silently ignored)."""
#: Query parameters shown in the startup line; every other value is masked.
SHOWN_PARAMS = ("schema", "sslmode", "connect_timeout", "api-version")
log = logging.getLogger("copage.server")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve", help="OpenAI-compatible paging proxy with tenants and a page inspector",
        description="Serve POST /v1/chat/completions, /v1/responses and /v1/messages in "
        "front of an upstream (--upstream URL, speaking --upstream-api) or a provider model "
        "(--model SPEC), paging each conversation. Every option can also come from COPAGE_<NAME> environment "
        "variables or a TOML/JSON --config file; see docs/serve.md.",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--upstream", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 "
                     "(the client's model passes through; key in COPAGE_UPSTREAM_KEY)")
    src.add_argument("--model", help="model spec that answers every request, e.g. "
                     "anthropic:claude-haiku-4-5")
    p.add_argument("--upstream-api", dest="upstream_api",
                   choices=["chat", "responses", "messages"],
                   help="the API the --upstream URL speaks: chat (Chat Completions, the "
                   "default), responses (the Responses API) or messages (Anthropic Messages)")
    p.add_argument("--upstream-key", dest="upstream_key", choices=["client"],
                   help="client: pass each client's own key (Authorization: Bearer or "
                   "x-api-key) to the upstream instead of COPAGE_UPSTREAM_KEY; each key is "
                   "then its own tenant (the proxy's own key is only ever read from "
                   "COPAGE_UPSTREAM_KEY or the config file, never a flag)")
    p.add_argument("--store", help="sqlite:///path (default ~/.local/share/copage/copage.db), "
                   "postgresql://..., memory://")
    p.add_argument("--host", help="default 127.0.0.1")
    p.add_argument("--port", type=int, help="default 8787")
    p.add_argument("--workers", type=int, help="uvicorn worker processes (default 1)")
    p.add_argument("--config", help="TOML or JSON settings file")
    p.add_argument("--keys-file", dest="keys_file", help='JSON/TOML {"key": "tenant"}')
    g = add_paging_options(p)
    g.add_argument("--recall-by-query", dest="recall_by_query", action="store_true", default=None)
    g.add_argument("--max-recalls", dest="max_recalls", type=int, help="per turn (default 3)")
    g.add_argument("--recall-mode", dest="recall_mode",
                   help="recall steps of every turn: speculative, tool, speculative+tool or none "
                        "(default: PagedChat's default; see docs/loop.md)")
    g.add_argument("--speculative-tokens", dest="speculative_tokens", type=int,
                   help="tokens of the speculative fill per turn (default 1024)")
    g.add_argument("--dense", nargs="?", const="auto", metavar="MODEL_DIR",
                   help="require the fill's meaning channel for questions asked in other "
                        "words (all-MiniLM-L6-v2: bundled in int8, or fetched in full "
                        "precision with `copage dense fetch`; "
                        "MODEL_DIR: its folder, default: where copage finds it). Without "
                        "this flag it is on when the model's files are there; "
                        "docs/dense.md")
    g.add_argument("--no-dense", dest="dense", action="store_const", const="off",
                   help="never use the meaning channel (also COPAGE_DENSE=off)")
    lim = p.add_argument_group("limits")
    lim.add_argument("--max-body-bytes", dest="max_body_bytes", type=int)
    lim.add_argument("--max-messages", dest="max_messages", type=int)
    lim.add_argument("--upstream-timeout", dest="upstream_timeout", type=float)
    lim.add_argument("--upstream-retries", dest="upstream_retries", type=int)
    lim.add_argument("--lock-timeout", dest="lock_timeout", type=float,
                     help="seconds a request waits for a busy conversation (default 30, then 409)")
    sec = p.add_argument_group("access")
    sec.add_argument("--metrics", choices=["key", "open", "off"],
                     help="/metrics needs a proxy key (key, the default), none (open), or is off")
    sec.add_argument("--cors", help="comma-separated browser origins allowed to call the API "
                     "cross-origin, e.g. https://app.example (default: none)")
    p.add_argument("--otel", nargs="?", const="", default=None, metavar="ENDPOINT",
                   help="export OpenTelemetry traces (a span per turn) over OTLP/HTTP to "
                   "ENDPOINT (default: OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4318); "
                   "needs pip install 'copage[otel]'; see docs/otel.md")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def safe_url(url: str) -> str:
    """``url`` without its password or query values other than :data:`SHOWN_PARAMS`
    (``?api-key=`` and ``?password=`` are masked), for the startup log."""
    try:
        parts = urlsplit(url)
        password = parts.password
        query = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return "<url>"
    base = url.split("?", 1)[0].split("#", 1)[0]
    if password:
        host = parts.hostname or ""
        user = f"{parts.username}:***@" if parts.username else "***@"
        port = f":{parts.port}" if parts.port else ""
        base = urlunsplit(parts._replace(netloc=user + host + port, query="", fragment=""))
    if query:
        shown = [(k, v if k.lower() in SHOWN_PARAMS else "***") for k, v in query]
        base += "?" + urlencode(shown, safe="*")
    return base


def run(args: argparse.Namespace) -> int:
    from copage.cli.startup import check_model, check_paging, check_store, refuse_open_without_keys
    from copage.server.settings import build_settings

    flags: dict[str, Any] = {k: getattr(args, k, None) for k in FLAGS}
    settings = build_settings(flags)
    otel = getattr(args, "otel", None)
    if otel is not None:  # read by every worker's app at start (copage.session.trace)
        try:
            import opentelemetry.exporter.otlp.proto.http
            import opentelemetry.sdk  # noqa: F401
        except ImportError:
            print("copage serve: --otel needs the 'otel' extra: pip install 'copage[otel]'",
                  file=sys.stderr)
            return 2
        os.environ["COPAGE_OTEL"] = "1"
        if otel:
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = otel
    check_paging(PagerConfig(**settings.paging.to_dict()))
    if not settings.client_key:  # with client keys the upstream checks every request
        refuse_open_without_keys(settings.keys, settings.host, "proxy keys")
    check_store(settings.store)
    from copage.dense import ModelDamaged, ModelMissing
    from copage.server.edge import dense_ranker
    try:  # required (--dense, COPAGE_DENSE=auto|DIR): checked now, not at the first question
        dense = dense_ranker(settings.dense)
    except (ModelMissing, ModelDamaged, ValueError) as e:
        print(f"copage serve: --dense: {e}", file=sys.stderr)
        return 2
    try:
        from copage.server.dense_warm import wait_seconds
        wait_seconds()
    except ValueError as e:
        print(f"copage serve: {e}", file=sys.stderr)
        return 2
    from copage.dense.default_channel import weights_of
    meaning = weights_of(dense) if dense is not None or settings.dense is not None else \
        "off (`copage dense fetch` turns it on)"
    if not settings.client_key:  # (a key the clients send is not known yet)
        check_model(settings.model, settings.upstream_key)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    target = f"upstream {safe_url(settings.upstream)}" if settings.upstream else \
        f"model {settings.model}"
    print(f"copage serve: http://{settings.host}:{settings.port}/v1 -> {target}; "
          f"store {safe_url(settings.store)}; inspector at /ui; meaning channel {meaning}",
          file=sys.stderr)
    if settings.client_key:
        print("copage serve: --upstream-key client: each client's own key goes to the "
              "upstream; each key is its own tenant", file=sys.stderr)
    elif settings.keys:
        tenants = sorted(set(settings.keys.values()))
        own = len(settings.tenant_keys)
        print(f"copage serve: {len(settings.keys)} proxy key(s), {len(tenants)} tenant(s)"
              + (f", {own} with its own upstream key" if own else ""), file=sys.stderr)
    else:
        print("copage serve: no proxy keys configured: one tenant 'default', "
              "listening on loopback only", file=sys.stderr)
    if settings.workers > 1:
        os.environ["COPAGE_SERVE_FLAGS"] = json.dumps({k: v for k, v in flags.items()
                                                       if v is not None})
        from copage.server.launch import run_workers

        run_workers(host=settings.host, port=settings.port, workers=settings.workers,
                    log_level=args.log_level)
        return 0
    from copage.server.app import create_app
    from copage.server.launch import run_single

    run_single(create_app(settings), host=settings.host, port=settings.port,
               log_level=args.log_level)
    return 0
