"""The upstream's URL: a query string (Azure's ``?api-version=``) is kept as a query for
every upstream API, and no client-facing error names the upstream's address."""

from __future__ import annotations

from collections.abc import Callable

import anthropic
import openai
import pytest
from proxy_helpers import KEY_A, Proxy, free_port

from copage.core.config import PagerConfig


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_an_upstream_url_with_a_query_string(make_proxy: Callable[..., Proxy], api: str
                                             ) -> None:
    """Proxy A's upstream is proxy B at ``/v1?api-version=...``: every API reaches B's
    endpoint (before: ``/v1/?api-version=...responses`` and ``/v1?api-version=.../v1/
    messages``, 404 from B and 502 to the client)."""
    b = make_proxy(paging=PagerConfig())
    a = make_proxy(upstream=b.url + "/v1?api-version=2024-10-21", upstream_api=api,
                   upstream_key=KEY_A)
    answer = a.client().chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}])
    assert answer.choices[0].message.content == "echo: hello"
    name = {"chat": "chat"}.get(api, api)
    assert f'endpoint="{name}",status="200"' in b.state.metrics.render()


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_errors_do_not_name_the_upstream_address(make_proxy: Callable[..., Proxy], api: str
                                                 ) -> None:
    """A refused connection to the upstream is a 502 that says ``upstream`` and carries
    no address, in every client format (before: ``openai: connection to
    http://127.0.0.1:PORT/v1 failed`` with the responses and messages upstreams)."""
    port = free_port()
    a = make_proxy(upstream=f"http://127.0.0.1:{port}/v1", upstream_api=api)
    with pytest.raises(openai.APIStatusError) as err:
        a.client().chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hello"}])
    assert err.value.status_code == 502
    with pytest.raises(openai.APIStatusError) as err2:
        a.client().responses.create(model="fake-model", input="hello")
    with pytest.raises(anthropic.APIStatusError) as err3:
        anthropic.Anthropic(base_url=a.url, api_key=KEY_A, max_retries=0).messages.create(
            model="fake-model", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    for e in (err.value, err2.value, err3.value):
        text = str(e.body) + str(e)
        assert "127.0.0.1" not in text and str(port) not in text, text
        assert "upstream" in text
