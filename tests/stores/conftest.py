"""Fixtures: one parametrised store factory (memory, sqlite, postgres) for the contract suite."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_helpers import PG_URL, StoreFactory

from copage.stores import PageStore


def _postgres_down_reason() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.Error as e:
        return f"PostgreSQL at {PG_URL} unreachable: {e}"
    return None


@pytest.fixture(scope="session")
def pg_schema() -> Iterator[Callable[[], str]]:
    """A factory of fresh schema names; all are dropped at the end of the session.

    Skips when the server is unreachable, or fails when COPAGE_REQUIRE_POSTGRES=1.
    """
    reason = _postgres_down_reason()
    if reason:
        if os.environ.get("COPAGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"COPAGE_REQUIRE_POSTGRES=1 but {reason}")
        pytest.skip(reason)
    created: list[str] = []

    def new() -> str:
        name = f"copage_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
        created.append(name)
        return name

    yield new
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for name in created:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A StoreFactory for each backend."""
    kind = str(request.param)
    if kind == "memory":
        url = "memory://"
    elif kind == "sqlite":
        url = f"sqlite://{tmp_path / 'pages.db'}"
    else:
        schema = request.getfixturevalue("pg_schema")()
        url = f"{PG_URL}?schema={schema}"
    factory = StoreFactory(kind, url)
    yield factory
    factory.close_all()


@pytest.fixture
def store(stores: StoreFactory) -> PageStore:
    """One open store of each backend."""
    return stores.open()
