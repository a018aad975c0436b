"""A text tool protocol for models without native function calling.

The tools are described in the system prompt; the model calls one by replying
``TOOL name {"arg": ...}`` (or, for recall, ``RECALL p3`` / ``RECALL "query"``).
:func:`parse_reply` reads such calls back tolerantly: any case, inside backticks
or other text, ``recall(p3)``, ``recall("p3")``, ``recall(page="p3")``,
``RECALL: 3``, and JSON such as ``{"tool": "recall", "page": "p3"}``. Only
names of offered tools are recognised. Call ids are synthetic and deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core.types import ToolCall
from copage.llm.types import ToolSpec

_DECODER = json.JSONDecoder()
_PAGEISH = re.compile(r"(?i)p?\d+")
# ``\b`` first: without it a long word is rescanned from each of its letters.
_PAIR = re.compile(r"\b(\w+)\s*[=:]\s*(\"[^\"]*\"|'[^']*'|[^,\s]+)")
#: Replies are scanned for calls up to this many characters (the rest stays text):
#: the JSON pass tries a decode at every ``{``, so its cost grows with the square.
MAX_SCAN = 20_000


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """What the parser needs to know about one tool."""

    name: str
    params: tuple[str, ...]
    required: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply split into its remaining text and the tool calls found in it."""

    text: str
    tool_calls: tuple[ToolCall, ...]


def tool_infos(tools: Sequence[ToolSpec]) -> dict[str, ToolInfo]:
    """Lower-cased tool name -> :class:`ToolInfo`."""
    out = {}
    for t in tools:
        fn = t.get("function", t)
        schema = fn.get("parameters") or {}
        props = tuple((schema.get("properties") or {}).keys())
        req = tuple(schema.get("required") or ())
        info = ToolInfo(str(fn["name"]), props, req, str(fn.get("description") or ""))
        out[info.name.lower()] = info
    return out


def render_tools(tools: Sequence[ToolSpec]) -> str:
    """Instructions describing ``tools`` and how to call them in plain text."""
    infos = tool_infos(tools)
    lines = [
        "You can use tools. To call a tool, reply with one line and nothing else:",
        'TOOL <name> {"<argument>": <value>}',
        "",
        "Tools:",
    ]
    for info in infos.values():
        lines.append(f"- {info.name}({', '.join(info.params)}): {info.description}".rstrip())
    if "recall" in infos:
        tip = "To recall a page, reply with a line `RECALL p3` and nothing else"
        if "query" in infos["recall"].params:
            tip += ' (or `RECALL "free text query"` to search)'
        lines += ["", tip + "."]
    lines += [
        "",
        (
            "Tool results come back in a message starting with TOOL RESULT. "
            "When you have what you need, answer normally."
        ),
    ]
    return "\n".join(lines)


def format_call(call: ToolCall) -> str:
    """A tool call as the text the model is told to write."""
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        args = None
    if call.name.lower() == "recall" and isinstance(args, dict) and len(args) == 1:
        (value,) = args.values()
        if isinstance(value, str):
            return f"RECALL {value}" if _PAGEISH.fullmatch(value) else f"RECALL {json.dumps(value)}"
    return f"TOOL {call.name} {call.arguments or '{}'}"


def _unquote(value: str) -> tuple[str, bool]:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1], True
    return value, False


def _single(info: ToolInfo, raw: str) -> dict[str, Any] | None:
    """Arguments for a call written with one bare or quoted value."""
    value, quoted = _unquote(raw)
    if not info.params:
        return {}
    pageish = bool(_PAGEISH.fullmatch(value))
    if not pageish and not quoted:
        return None
    pages = [p for p in info.params if "page" in p.lower() or p.lower() == "id"]
    if pageish and pages:
        param = pages[0]
        return {param: value.lower() if value[0] in "pP" else f"p{int(value)}"}
    if "query" in info.params and not pageish:
        return {"query": value}
    return {(info.required or info.params)[0]: value}


def _call_args(info: ToolInfo, inner: str) -> dict[str, Any] | None:
    """Arguments of ``name(inner)``: empty, JSON, ``k=v`` pairs, or one value."""
    inner = inner.strip()
    if not inner:
        return {}
    if inner.startswith("{"):
        try:
            obj = json.loads(inner)
        except json.JSONDecodeError:
            return None
        return obj if isinstance(obj, dict) else None
    pairs = _PAIR.findall(inner)
    if pairs:
        return {k: _unquote(v)[0] for k, v in pairs}
    return _single(info, inner)


def _json_call(obj: Mapping[str, Any], infos: Mapping[str, ToolInfo]) -> tuple[str, Any] | None:
    name = obj.get("tool") or obj.get("name") or obj.get("function")
    if isinstance(name, Mapping):  # {"function": {"name": ..., "arguments": ...}}
        return _json_call(name, infos)
    if not isinstance(name, str) or name.lower() not in infos:
        return None
    args = next((obj[k] for k in ("arguments", "args", "parameters", "input") if k in obj), None)
    if args is None:
        args = {k: v for k, v in obj.items() if k not in ("tool", "name", "function", "type")}
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = _single(infos[name.lower()], args)
    return (infos[name.lower()].name, args) if isinstance(args, dict) else None


def parse_reply(text: str, tools: Sequence[ToolSpec]) -> ParsedReply:
    """Find text-protocol tool calls in ``text`` (only for names in ``tools``)."""
    infos = tool_infos(tools)
    if not infos or not text:
        return ParsedReply(text, ())
    work = text[:MAX_SCAN].replace("`", " ")
    found: list[tuple[int, int, str, dict[str, Any]]] = []

    def take(start: int, end: int, name: str, args: dict[str, Any] | None) -> None:
        nonlocal work
        if args is not None:
            found.append((start, end, name, args))
            work = work[:start] + " " * (end - start) + work[end:]

    names = "|".join(re.escape(n) for n in sorted(infos, key=len, reverse=True))
    for m in list(re.finditer(rf"(?im)\b(?:TOOL|CALL)\s*(?::\s*)?({names})\b[ \t]*", work)):
        info, rest = infos[m.group(1).lower()], work[m.end() :]
        if rest.startswith("{"):
            try:
                obj, size = _DECODER.raw_decode(rest)
            except json.JSONDecodeError:
                continue
            take(m.start(), m.end() + size, info.name, obj if isinstance(obj, dict) else None)
        else:
            line = rest.split("\n", 1)[0]
            take(m.start(), m.end() + len(line), info.name, _single(info, line.strip(" .")))
    for m in list(re.finditer(r"\{", work)):
        try:
            obj, size = _DECODER.raw_decode(work, m.start())
        except json.JSONDecodeError:
            continue
        hit = _json_call(obj, infos) if isinstance(obj, dict) else None
        if hit:
            take(m.start(), size, hit[0], hit[1])
    for m in list(re.finditer(rf"(?i)\b({names})\s*\(([^()]*)\)", work)):
        info = infos[m.group(1).lower()]
        take(m.start(), m.end(), info.name, _call_args(info, m.group(2)))
    value = r"(\"[^\"\n]+\"|'[^'\n]+'|[pP]?\d+)"
    for m in list(re.finditer(rf"(?im)^[^\w\n]*({names})\s*(?:[:=\-]\s*)?{value}[^\w\n]*$", work)):
        info = infos[m.group(1).lower()]
        take(m.start(), m.end(), info.name, _single(info, m.group(2)))
    upper = "|".join(re.escape(i.name.upper()) for i in infos.values())
    for m in list(re.finditer(rf"\b({upper})\b\s*(?::\s*)?{value}", work)):
        info = infos[m.group(1).lower()]
        take(m.start(), m.end(), info.name, _single(info, m.group(2)))

    found.sort()
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    calls = tuple(
        ToolCall(id=f"call_text_{digest}_{i}", name=name, arguments=json.dumps(args))
        for i, (_, _, name, args) in enumerate(found)
    )
    if not calls:
        return ParsedReply(text, ())
    work += text[MAX_SCAN:].replace("`", " ")
    rest = "\n".join(line.rstrip() for line in work.split("\n") if line.strip())
    return ParsedReply(rest.strip(), calls)
