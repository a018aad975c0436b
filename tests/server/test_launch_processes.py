"""Real ``copage serve`` processes at the default log level, one and two workers (issue 9, #1).

The access logger used to raise on every request at the default level (the
redaction filter dropped the record's arguments, which uvicorn's access formatter
unpacks); every other test ran at ``warning`` and never saw it.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from proxy_helpers import KEY_A, KEY_B, UPSTREAM_KEY, free_port, spawn_worker

from copage.llm.fake_server import FakeServer, echo


def _run(tmp_path: Path, *extra: str) -> tuple[str, list[str]]:
    """Serve, send turns with the openai SDK, stop; the server's stderr and conversation ids."""
    log = tmp_path / "serve.log"
    ids = []
    with FakeServer(echo) as up, log.open("wb") as err:
        port = free_port()
        proc = spawn_worker(port, up.url, f"sqlite://{tmp_path / 's.db'}", *extra,
                            log_level=None, stderr=err, stdout=err)
        try:
            for key in (KEY_A, KEY_B):
                client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key,
                                       max_retries=0, timeout=30)
                hist: list[dict[str, str]] = []
                for i in range(3):
                    hist.append({"role": "user", "content": f"question {i}"})
                    raw = client.chat.completions.with_raw_response.create(
                        model="fake-model", messages=hist)  # type: ignore[arg-type]
                    ids.append(raw.headers["x-copage-conversation"])
                    answer = raw.parse().choices[0].message
                    assert answer.content == f"echo: question {i}"
                    hist.append({"role": "assistant", "content": answer.content or ""})
            assert all(UPSTREAM_KEY == h["authorization"].split()[-1] for h in up.headers)
        finally:
            proc.terminate()
            proc.wait(20)
    return log.read_text(), ids


def test_default_log_level_logs_requests_without_errors(tmp_path: Path) -> None:
    text, ids = _run(tmp_path)
    assert "Logging error" not in text and "Traceback" not in text, text[-3000:]
    assert text.count('"POST /v1/chat/completions HTTP/1.1" 200') == 6  # the access log works
    assert len(set(ids[:3])) == 1 and len(set(ids[3:])) == 1  # transparent mode recognised
    assert KEY_A not in text and UPSTREAM_KEY not in text


@pytest.mark.slow
def test_two_workers_via_run_workers_and_app_from_env(tmp_path: Path) -> None:
    """``--workers 2``: uvicorn's supervisor, two processes built by ``app_from_env``."""
    text, ids = _run(tmp_path, "--workers", "2", "--boundary", "fixed_2")
    assert "Logging error" not in text and "Traceback" not in text, text[-3000:]
    assert text.count("Started server process") == 2, text[-3000:]
    assert text.count('"POST /v1/chat/completions HTTP/1.1" 200') == 6
    assert len(set(ids[:3])) == 1 and len(set(ids[3:])) == 1 and ids[0] != ids[3]


def test_every_client_format_against_a_real_serve_process(tmp_path: Path) -> None:
    """A ``copage serve`` process at its defaults: the Responses API (create, stream,
    previous_response_id), Anthropic Messages (create, stream) and deleting."""
    import anthropic

    with FakeServer(echo) as up:
        port = free_port()
        proc = spawn_worker(port, up.url, f"sqlite://{tmp_path / 'f.db'}")
        try:
            oai = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY_A,
                                max_retries=0, timeout=30)
            first = oai.responses.create(model="m", input="hello", instructions="Be brief.")
            assert first.output_text == "echo: hello"
            with oai.responses.stream(model="m", input="again",
                                      previous_response_id=first.id) as s:
                second = s.get_final_response()
            assert second.output_text == "echo: again"
            ant = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key=KEY_B,
                                      max_retries=0, timeout=30)
            msg = ant.messages.create(model="m", max_tokens=32,
                                      messages=[{"role": "user", "content": "hi"}])
            assert msg.content[0].type == "text" and msg.content[0].text == "echo: hi"
            with ant.messages.stream(model="m", max_tokens=32, messages=[
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "echo: hi"},
                    {"role": "user", "content": "more"}]) as st:
                assert st.get_final_message().content[0].text == "echo: more"  # type: ignore[union-attr]
            raw = oai.responses.with_raw_response.create(model="m", input="third",
                                                         previous_response_id=second.id)
            cid = raw.headers["x-copage-conversation"]
            assert oai.conversations.delete(cid).deleted is True
        finally:
            proc.terminate()
            proc.wait(20)
