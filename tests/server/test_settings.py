"""``copage serve`` settings: flags, environment, config and keys files, friendly errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage.cli.main import main
from copage.cli.serve import safe_url
from copage.server.settings import build_settings, load_keys_file, parse_keys
from copage.session.auth import KeyRing, digest


def test_precedence_flags_env_file(tmp_path: Path) -> None:
    cfg = tmp_path / "copage.toml"
    cfg.write_text('upstream = "http://127.0.0.1:9/v1"\nport = 9000\n'
                   '[paging]\nboundary = "fixed_4"\nresident_pages = 2\n')
    env = {"COPAGE_CONFIG": str(cfg), "COPAGE_PORT": "9100", "COPAGE_KEYS": "k-aaaaaaaa=t1",
           "COPAGE_UPSTREAM_KEY": "sk-up-123456789"}
    s = build_settings({"host": "127.0.0.2"}, env)
    assert (s.upstream, s.port, s.host) == ("http://127.0.0.1:9/v1", 9100, "127.0.0.2")
    assert s.paging.boundary == "fixed_4" and s.paging.resident_pages == 2
    assert dict(s.keys) == {digest("k-aaaaaaaa"): "t1"} and s.upstream_key == "sk-up-123456789"
    assert "sk-up-123456789" not in repr(s) and "k-aaaaaaaa" not in repr(s)
    s2 = build_settings({"model": "scripted:x", "port": 9200}, env)
    assert s2.model == "scripted:x" and s2.upstream is None and s2.port == 9200
    assert s2.store.startswith("sqlite://") and s2.store.endswith("copage/copage.db")


def test_keys_sources(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text('{"key-one-1234": "alice"}')
    (tmp_path / "k.toml").write_text('[keys]\n"key-two-1234" = "bob"\n')
    assert load_keys_file(tmp_path / "k.json") == {"key-one-1234": "alice"}
    assert load_keys_file(tmp_path / "k.toml") == {"key-two-1234": "bob"}
    assert parse_keys("a-12345678=x, b-12345678=y") == {"a-12345678": "x", "b-12345678": "y"}
    with pytest.raises(ValueError, match="key=tenant"):
        parse_keys("just-a-key")
    ring = KeyRing({"key-one-1234": "alice"})
    assert ring.tenant("Bearer key-one-1234") == "alice"
    assert ring.tenant("Bearer key-one-12345") is None and ring.tenant(None) is None
    assert KeyRing({}).tenant(None) == "default"


@pytest.mark.parametrize(("argv", "message"), [
    (["serve"], "exactly one of --upstream"),
    (["serve", "--upstream", "ftp://x"], "http(s) URL"),
    (["serve", "--upstream", "http://127.0.0.1:1/v1", "--policy", "nope"], "fifo"),
    (["serve", "--upstream", "http://127.0.0.1:1/v1", "--host", "0.0.0.0"], "no proxy keys"),
    (["serve", "--upstream", "http://127.0.0.1:1/v1", "--keys-file", "/nonexistent.json"],
     "cannot read keys file"),
])
def test_cli_errors_are_one_line(argv: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("COPAGE_UPSTREAM", "COPAGE_MODEL", "COPAGE_KEYS", "COPAGE_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_safe_url_hides_passwords() -> None:
    assert safe_url("postgresql://u:secret@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert safe_url("sqlite:///tmp/a.db") == "sqlite:///tmp/a.db"
