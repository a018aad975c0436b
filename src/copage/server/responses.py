"""OpenAI response shapes: a ``chat.completion`` and its SSE ``chat.completion.chunk`` s.

Streaming and non-streaming share one path: the turn runs to its end, then the
same final values are either returned as JSON or emitted as chunks.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from copage.llm.messages import tool_call_dict
from copage.server.loop import Outcome


@dataclass(frozen=True, slots=True)
class Envelope:
    """Id, creation time and model name shared by a completion's JSON and chunks."""

    id: str
    created: int
    model: str

    @classmethod
    def new(cls, model: str) -> Envelope:
        return cls("chatcmpl-" + secrets.token_hex(12), int(time.time()), model)


def usage(out: Outcome) -> dict[str, int]:
    """Usage summed over the turn's upstream calls."""
    return {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
            "total_tokens": out.prompt_tokens + out.completion_tokens}


def message(out: Outcome) -> dict[str, Any]:
    """The assistant message returned to the client."""
    msg: dict[str, Any] = {"role": "assistant", "content": out.text if out.text or not
                           out.tool_calls else None, "refusal": None}
    if out.tool_calls:
        msg["tool_calls"] = [tool_call_dict(c) for c in out.tool_calls]
    return msg


def completion(env: Envelope, out: Outcome) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` body."""
    return {
        "id": env.id, "object": "chat.completion", "created": env.created, "model": env.model,
        "choices": [{"index": 0, "message": message(out), "finish_reason": out.finish_reason,
                     "logprobs": None}],
        "usage": usage(out),
    }


def _chunk(env: Envelope, delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": env.id, "object": "chat.completion.chunk", "created": env.created,
            "model": env.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


def chunks(env: Envelope, out: Outcome, *, include_usage: bool) -> Iterator[str]:
    """The SSE events of a streamed reply, ``data: [DONE]`` last."""
    yield _chunk(env, {"role": "assistant", "content": ""})
    if out.text:
        yield _chunk(env, {"content": out.text})
    for i, c in enumerate(out.tool_calls):
        yield _chunk(env, {"tool_calls": [{"index": i, **tool_call_dict(c)}]})
    yield _chunk(env, {}, out.finish_reason)
    if include_usage:
        body = {"id": env.id, "object": "chat.completion.chunk", "created": env.created,
                "model": env.model, "choices": [], "usage": usage(out)}
        yield f"data: {json.dumps(body)}\n\n"
    yield "data: [DONE]\n\n"
