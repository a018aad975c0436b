"""Fixtures of the proxy tests: a scripted upstream and a proxy in a thread."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from proxy_helpers import KEYS, PG_URL, UPSTREAM_KEY, Proxy, script

from copage.core.config import PagerConfig
from copage.llm.fake_server import FakeServer
from copage.server.app import create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings

PAGING = PagerConfig(boundary="fixed_2", resident_pages=1)


@pytest.fixture
def upstream() -> Iterator[FakeServer]:
    with FakeServer(script) as up:
        yield up


@pytest.fixture
def make_proxy(upstream: FakeServer, tmp_path: Path) -> Iterator[Callable[..., Proxy]]:
    started: list[ServerThread] = []

    def make(**settings: Any) -> Proxy:
        settings.setdefault("upstream", upstream.url)
        settings.setdefault("store", "memory://")
        settings.setdefault("keys", KEYS)
        settings.setdefault("paging", PAGING)
        settings.setdefault("upstream_key", UPSTREAM_KEY)
        # These tests exercise the recall tool; the default mode (speculative fill, no
        # tool) is tested in test_proxy_loop_modes.py.
        settings.setdefault("recall_mode", "tool")
        if settings["store"] == "sqlite":
            settings["store"] = f"sqlite://{tmp_path / 'proxy.db'}"
        srv = ServerThread(create_app(ServeSettings(**settings))).start()
        started.append(srv)
        return Proxy(srv, upstream)

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture
def proxy(make_proxy: Callable[..., Proxy]) -> Proxy:
    return make_proxy()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL with a fresh schema (dropped after); skip or fail if unreachable."""
    try:
        import psycopg

        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as e:  # noqa: BLE001
        if os.environ.get("COPAGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"COPAGE_REQUIRE_POSTGRES=1 but PostgreSQL is unreachable: {e}")
        pytest.skip(f"PostgreSQL unreachable: {e}")
    schema = f"copage_proxy_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    yield f"{PG_URL}?schema={schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
