"""The server commands' start-up checks (``copage.cli.startup``), shared by ``copage serve``
and ``copage mcp``, and the store-file rule they use (``copage.stores.file_path``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copage.cli.startup import make_store_dir, refuse_open_without_keys, store_url
from copage.stores import file_path, open_store


# {dir} is absolute: "sqlite://{dir}" is the sqlite:///abs form.
@pytest.mark.parametrize("form", ["sqlite://{dir}/a.db", "sqlite://{dir}/a.db?synchronous=NORMAL",
                                  "{dir}/a.db"])
def test_file_path_is_the_file_open_store_opens(tmp_path: Path, form: str) -> None:
    url = form.format(dir=tmp_path)
    store: Any = open_store(url)
    try:
        assert file_path(url) == store.path == tmp_path / "a.db"
    finally:
        store.close()


def test_a_relative_sqlite_url_is_relative_to_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store: Any = open_store("sqlite://rel.db")
    try:
        assert file_path("sqlite://rel.db") == store.path == Path("rel.db")
    finally:
        store.close()


@pytest.mark.parametrize("url", ["memory://", "postgresql://u@127.0.0.1:5432/test",
                                 "postgres://h/db?schema=x"])
def test_stores_without_a_file(url: str) -> None:
    assert file_path(url) is None
    make_store_dir(url)  # nothing to make, no error


@pytest.mark.parametrize("form", ["sqlite://{dir}/new/a.db", "{dir}/new/a.db"])
def test_a_given_path_in_a_missing_directory_is_an_error(tmp_path: Path, form: str) -> None:
    """One rule for every command: a path the user gave whose directory does not exist is
    an error naming the fix, and nothing is created (before: serve and mcp created it)."""
    with pytest.raises(ValueError, match="directory .*new does not exist; create it first"):
        make_store_dir(form.format(dir=tmp_path))
    assert not (tmp_path / "new").exists()


def test_the_default_store_directory_is_created(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from copage.stores import default_store_url

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    make_store_dir(default_store_url())
    assert (tmp_path / "xdg" / "copage").is_dir()


def test_copage_mcp_refuses_a_plain_store_path_in_a_missing_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``copage mcp --store PATH`` follows the rule of ``copage conversations``: a typo in
    the directory is a one-line error and exit 2, and no directory is made."""
    pytest.importorskip("mcp")
    import copage.adapters.mcp as mcp_adapter
    from copage.cli.main import main

    class Quiet:
        def run(self, transport: str) -> None:
            assert transport == "stdio"

    monkeypatch.setattr(mcp_adapter, "create_server", lambda pool, **kw: Quiet())
    db = tmp_path / "new" / "copage.db"
    assert main(["mcp", "--store", str(db)]) == 2
    assert not db.parent.exists()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not exist" in err
    db.parent.mkdir()
    assert main(["mcp", "--store", str(db)]) == 0


def test_no_keys_listens_on_loopback_only() -> None:
    refuse_open_without_keys({}, "127.0.0.1", "API keys")
    refuse_open_without_keys({"k": "t"}, "0.0.0.0", "API keys")
    with pytest.raises(ValueError, match="no proxy keys configured: refusing to listen on 0.0.0.0"):
        refuse_open_without_keys({}, "0.0.0.0", "proxy keys")


def test_every_command_finds_the_same_store(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--store, else $COPAGE_STORE, else the default file: the one the proxy's settings
    pick, so ``copage conversations`` lists what ``copage serve`` stored."""
    from copage.server.settings import ServeSettings

    monkeypatch.delenv("COPAGE_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert store_url(None) == ServeSettings(upstream="http://127.0.0.1:9/v1").store \
        == f"sqlite://{tmp_path / 'copage' / 'copage.db'}"
    monkeypatch.setenv("COPAGE_STORE", "memory://")
    assert store_url(None) == "memory://" and store_url("sqlite://x.db") == "sqlite://x.db"
