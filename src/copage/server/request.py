"""Validating an OpenAI chat-completions request body into a :class:`ChatCall`.

A client that resends its whole history sends every earlier message again on
every turn; validating them all again would make a turn's cost grow with the
conversation. So :func:`parse_call` checks the request's own fields and only
that ``messages`` is a non-empty list; messages are validated when they are
needed (:meth:`ChatCall.convert`): the new ones, or all of them on the slow path
that must read the whole history. A message that was validated in an earlier
request and comes back unchanged (compared with ``==``, in C) needs no check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from copage.ids import CONVERSATION_ID_RULE, is_conversation_id
from copage.server.body import Messages
from copage.server.error_body import bad_request

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool"}
#: Body fields passed on to the upstream unchanged.
PASSTHROUGH = ("top_p", "stop", "presence_penalty", "frequency_penalty", "seed", "user",
               "response_format", "logit_bias", "parallel_tool_calls", "max_completion_tokens",
               "reasoning_effort")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_\-]{1,64}\Z")


@dataclass(frozen=True, slots=True)
class Message:
    """One incoming message, normalised (text content, tool calls as dicts)."""

    role: str
    text: str
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    tool_call_id: str | None = None

    def canonical(self) -> list[Any]:
        """The fields that identify the message in the transcript hash.

        Tool-call arguments are compared as JSON values, not text: clients
        re-serialise them (LangChain sends ``{"city": "Paris"}`` back for the
        model's ``{"city":"Paris"}``), see :func:`canonical_arguments`.
        """
        calls = [[c["id"], c["function"]["name"], canonical_arguments(c["function"]["arguments"])]
                 for c in self.tool_calls]
        return [self.role, self.text, calls, self.tool_call_id or ""]


def canonical_arguments(arguments: str) -> str:
    """Tool-call arguments as compact JSON with sorted keys (unparseable text as is)."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ChatCall:
    """A chat-completions request; its fields validated, its messages on demand.

    ``raw`` holds the messages as parsed from JSON. :attr:`messages` validates
    all of them (once); :meth:`convert` only a range.
    """

    model: str | None
    raw: Messages
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: Any = None
    stream: bool = False
    include_usage: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Who is asking, when the client says (:func:`identity_of`): "" when it does not.
    identity: str = ""

    @property
    def tool_names(self) -> set[str]:
        return {str(t["function"]["name"]) for t in self.tools}

    @cached_property
    def messages(self) -> tuple[Message, ...]:
        """Every message, validated (a 400 naming the first bad one)."""
        return self.convert(0)

    def convert(self, start: int, stop: int | None = None) -> tuple[Message, ...]:
        """Messages ``start:stop``, validated (errors name their index in the request)."""
        end = len(self.raw) if stop is None else stop
        return tuple(_message(self.raw[i], i) for i in range(start, end))

    @cached_property
    def fingerprint(self) -> str:
        """A digest of everything but the messages and ``stream`` that shapes the answer
        (model, tools, sampling settings): a retry must match it."""
        import hashlib

        fields = [self.model, list(self.tools), self.tool_choice, self.temperature,
                  self.max_tokens, dict(self.extra), self.identity]
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=str)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


    @property
    def who(self) -> str:
        """A digest of :attr:`identity` ("" without one): what a stored turn keeps of it."""
        import hashlib

        if not self.identity:
            return ""
        return hashlib.sha256(self.identity.encode("utf-8", "surrogatepass")).hexdigest()[:16]


    @property
    def start(self) -> str:
        """Where the transcript chain of this caller's conversations starts: the empty
        chain, or (an identity given) one of that identity's own, so that two users'
        identical exchanges never hash alike and are never taken for each other's."""
        return f"who:{self.who}" if self.identity else ""


#: The header that names the end user for clients whose body cannot (plain HTTP, any format).
USER_HEADER = "X-Copage-User"
#: Body fields that name the end user: Chat Completions' and the Responses API's
#: ``safety_identifier`` and ``user``; the Messages format's ``metadata.user_id`` is
#: brought here as ``safety_identifier`` by its parser.
IDENTITY_FIELDS = ("safety_identifier", "user")


def identity_of(data: Mapping[str, Any], header: str | None = None) -> str:
    """Who a request says it is for: the :data:`USER_HEADER` value, else the first
    string of :data:`IDENTITY_FIELDS` in the body, else "" (nobody said)."""
    if header is not None and header.strip():
        return header.strip()[:256]
    for name in IDENTITY_FIELDS:
        value = data.get(name)
        if isinstance(value, str) and value:
            return value[:256]
    return ""


def check_conversation_id(value: str) -> str:
    """A conversation id from the header or a URL (:mod:`copage.ids`' rule), or a 400."""
    if not is_conversation_id(value):
        raise bad_request(f"X-Copage-Conversation must be {CONVERSATION_ID_RULE}",
                          "invalid_conversation_id")
    return value


def _text(content: Any, i: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type") == "text" and isinstance(
                part.get("text"), str
            ):
                parts.append(part["text"])
            else:
                raise bad_request(f"messages[{i}].content: only text parts are supported",
                                  param=f"messages[{i}].content")
        return "".join(parts)
    raise bad_request(f"messages[{i}].content must be a string, a list of text parts or null",
                      param=f"messages[{i}].content")


def _tool_calls(raw: Any, i: int) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad_request(f"messages[{i}].tool_calls must be a list", param=f"messages[{i}]")
    out = []
    for j, c in enumerate(raw):
        fn = c.get("function") if isinstance(c, Mapping) else None
        if not (isinstance(fn, Mapping) and isinstance(c.get("id"), str)
                and isinstance(fn.get("name"), str)):
            raise bad_request(f"messages[{i}].tool_calls[{j}] needs an id and function.name",
                              param=f"messages[{i}].tool_calls")
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args)
        out.append({"id": c["id"], "type": "function",
                    "function": {"name": fn["name"], "arguments": args}})
    return tuple(out)


def _message(m: Any, i: int) -> Message:
    if not isinstance(m, Mapping):
        raise bad_request(f"messages[{i}] must be an object", param=f"messages[{i}]")
    raw_role = m.get("role")
    role = ROLES.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise bad_request(f"messages[{i}].role must be one of {sorted(ROLES)}",
                          param=f"messages[{i}].role")
    calls = _tool_calls(m.get("tool_calls"), i) if role == "assistant" else ()
    tcid = m.get("tool_call_id")
    if role == "tool" and not isinstance(tcid, str):
        raise bad_request(f"messages[{i}] (tool) needs a string tool_call_id",
                          param=f"messages[{i}].tool_call_id")
    text = _text(m.get("content"), i)
    for value in (text, tcid, *(json.dumps(c, ensure_ascii=False) for c in calls)):
        if isinstance(value, str) and not _is_utf8(value):
            raise bad_request(f"messages[{i}] contains a lone surrogate (\\ud800-\\udfff), "
                              "which is not valid Unicode text", param=f"messages[{i}]")
    return Message(role, text, calls, tcid if role == "tool" else None)


def _is_utf8(text: str) -> bool:
    """False if ``text`` holds a lone surrogate (JSON allows ``"\\ud800"``; UTF-8 does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _tools(raw: Any, limit: int) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad_request("tools must be a list", param="tools")
    if len(raw) > limit:
        raise bad_request(f"at most {limit} tools per request", "too_many_tools", "tools")
    for j, t in enumerate(raw):
        fn = t.get("function") if isinstance(t, Mapping) else None
        if not (isinstance(fn, Mapping) and isinstance(fn.get("name"), str)
                and _TOOL_NAME.match(fn["name"])):
            raise bad_request(f"tools[{j}] must be {{'type': 'function', 'function': "
                              "{'name': ..., 'parameters': ...}}", param=f"tools[{j}]")
    return tuple(raw)


def _number(data: Mapping[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if value is None:
        return None
    ok = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
    if not ok or isinstance(value, bool):
        raise bad_request(f"{name} must be a {'number' if kind is float else 'integer'}",
                          param=name)
    return value


def parse_call(data: Mapping[str, Any], *, max_messages: int = 0, max_tools: int = 128,
               user: str | None = None) -> ChatCall:
    """Validate a chat-completions body but its messages (see module docstring); every
    problem is a 400 naming the field. ``max_messages`` 0: no limit. ``user``: the
    :data:`USER_HEADER` value, if sent (see :func:`identity_of`)."""
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise bad_request("model must be a string", param="model")
    msgs = data.get("messages")
    if isinstance(msgs, list):
        msgs = Messages.of(msgs)
    if not isinstance(msgs, Messages) or not len(msgs):
        raise bad_request("messages must be a non-empty list", param="messages")
    if max_messages and len(msgs) > max_messages:
        raise bad_request(f"at most {max_messages} messages per request", "too_many_messages",
                          "messages")
    stream = data.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise bad_request("stream must be a boolean", param="stream")
    opts = data.get("stream_options") or {}
    if not isinstance(opts, Mapping):
        raise bad_request("stream_options must be an object", param="stream_options")
    n = data.get("n")
    if n not in (None, 1):
        raise bad_request("only n=1 is supported", param="n")
    choice = data.get("tool_choice")
    if choice is not None and not (choice in ("auto", "none", "required")
                                   or isinstance(choice, Mapping)):
        raise bad_request("tool_choice must be 'auto', 'none', 'required' or an object",
                          param="tool_choice")
    max_tokens = _number(data, "max_tokens", int)
    extra = {k: data[k] for k in PASSTHROUGH if data.get(k) is not None}
    return ChatCall(
        model=model, raw=msgs,
        tools=_tools(data.get("tools"), max_tools), tool_choice=choice, stream=bool(stream),
        include_usage=bool(opts.get("include_usage")),
        temperature=_number(data, "temperature", float), max_tokens=max_tokens, extra=extra,
        identity=identity_of(data, user),
    )
