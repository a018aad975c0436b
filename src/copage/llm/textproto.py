"""A text tool protocol for models without native function calling.

The tools are described in the system prompt with one call syntax each: the
recall tool as ``RECALL <page id>`` (``RECALL "words"`` when it takes a query),
any other tool as ``TOOL name {"arg": ...}``. :func:`parse_reply` reads calls back
tolerantly: any case, inside backticks or other text, ``recall(p3)``,
``recall("p3")``, ``recall(page="p3")``, ``RECALL: 3``, ``RECALL page 3``,
``RECALL [p3]``, ``TOOL recall {"page": p3}`` (unquoted value), JSON such as
``{"tool": "recall", "page": "p3"}``, Hermes/Qwen-style
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` blocks left in the
content by a server that did not parse them, and the same object in doubled
braces, with or without the tags (``{{"name": "recall", "arguments": {...}}}``,
often with a stray extra ``}``): Qwen2.5's own chat template shows the call
format that way, and the model copies it, which llama-server does not parse. Only names of offered tools are
recognised. Call ids are synthetic and deterministic.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core.types import ToolCall, normal_page_id
from copage.llm.model_types import ToolSpec
from copage.llm.scan import balanced_end

#: How far a call's ``{...}`` is searched for its end (calls are short).
CALL_SCAN_LIMIT = 4000

_DECODER = json.JSONDecoder()
_PAGEISH = re.compile(r"(?i)p?\d+")
# "p3", "page 3", "[p3]", "[p3: peanut, satay]", "page p3" -> the page part.
_PAGE_VALUE = re.compile(r"(?i)\[?\s*(?:page\s*)?([pP]?\d{1,9})\s*(?::[^\]\n]*)?\]?")
_BARE_VALUE = re.compile(r"(:\s*)([A-Za-z_][\w\-]*)(\s*[,}])")
_TOOL_TAG, _TOOL_END = "<tool_call>", "</tool_call>"
_DOUBLED = re.compile(r"\{[ \t]*\{")
_PAIRED_OPEN, _PAIRED_CLOSE = re.compile(r"\{[ \t]*\{"), re.compile(r"\}[ \t]*\}")
_STRAY_CLOSE = re.compile(r"(?:[ \t]*\})+")
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


def render_tools(tools: Sequence[ToolSpec], *, force: str | None = None) -> str:
    """Instructions describing ``tools`` and how to call them in plain text (one syntax each).

    ``force`` names a tool the reply must call (a forced ``tool_choice``), or is
    ``"required"`` (some tool must be called).
    """
    infos = tool_infos(tools)
    recall = infos.get("recall")
    others = [i for n, i in infos.items() if n != "recall"]
    lines = ["You can use tools. To call one, reply with one line and nothing else."]
    if recall is not None:
        form = "RECALL <page id>"
        if "query" in recall.params:
            form += ' (or RECALL "a few words" to search the evicted pages)'
        lines += ["", f"- {recall.name}: {recall.description}".rstrip(" :"), f"  Call: {form}"]
    for info in others:
        args = ", ".join(f'"{p}": ...' for p in info.params)
        lines += ["", f"- {info.name}: {info.description}".rstrip(" :"),
                  f"  Call: TOOL {info.name} {{{args}}}"]
    lines += [
        "",
        ("Tool results come back in a message starting with TOOL RESULT. "
         "When you have what you need, answer normally."),
    ]
    if force:
        target = "a tool" if force == "required" else force
        lines += ["", f"Your next reply must be a call of {target}, and nothing else."]
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
    page = _PAGE_VALUE.fullmatch(value)
    if page and not quoted:
        value = page.group(1)
    pageish = bool(_PAGEISH.fullmatch(value))
    if not pageish and not quoted:
        return None
    pages = [p for p in info.params if "page" in p.lower() or p.lower() == "id"]
    if pageish and pages:
        param = pages[0]
        return {param: normal_page_id(value) or value.lower()}
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


def _lenient_object(text: str) -> Any:
    """``text`` as JSON, else with bare word values quoted (``{"page": p3}``); None if hopeless."""
    for candidate in (text, _BARE_VALUE.sub(_quote_bare, text)):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    return None


def _quote_bare(m: re.Match[str]) -> str:
    word = m.group(2)
    if word in ("true", "false", "null"):
        return m.group(0)
    return f"{m.group(1)}{json.dumps(word)}{m.group(3)}"


def _object_at(text: str, start: int) -> tuple[Any, int] | None:
    """The object whose ``{`` is at ``start``, read leniently, and its end; None if none.

    Doubled braces (``{{"name": ..., "arguments": {...}}}``, as Qwen2.5's template
    shows the call format) are read as single ones: first without the outer pair,
    then with every ``{{``/``}}`` pair halved; stray ``}`` right after the object
    (the model closing one brace too many) belong to it.
    """
    end = balanced_end(text, start, limit=CALL_SCAN_LIMIT)
    if end < 0:
        return None
    segment = text[start:end]
    obj = _lenient_object(segment)
    if obj is None and _DOUBLED.match(segment):
        inner = segment[1:-1].strip()
        obj = _lenient_object(inner)
        if obj is None:
            halved = _PAIRED_CLOSE.sub("}", _PAIRED_OPEN.sub("{", segment))
            obj = _lenient_object(halved)
        if obj is not None:
            stray = _STRAY_CLOSE.match(text, end)
            end = stray.end() if stray else end
    return None if obj is None else (obj, end)


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

    lowered = work.lower()
    at = lowered.find(_TOOL_TAG)
    while at >= 0:  # <tool_call>{"name": ..., "arguments": ...}</tool_call> (Hermes, Qwen)
        body = at + len(_TOOL_TAG)
        while body < len(work) and work[body].isspace():
            body += 1
        got = _object_at(work, body) if work.startswith("{", body) else None
        if got is not None:
            obj, end = got
            hit = _json_call(obj, infos) if isinstance(obj, dict) else None
            close = lowered.find(_TOOL_END, end)
            stop = close + len(_TOOL_END) if close >= 0 and not work[end:close].strip() else end
            if hit:
                take(at, stop, hit[0], hit[1])
        at = lowered.find(_TOOL_TAG, body)
    for m in list(_DOUBLED.finditer(work)):  # {{"name": ..., "arguments": ...}} (Qwen2.5)
        if not work.startswith("{", m.start()):
            continue  # blanked by an earlier call
        got = _object_at(work, m.start())
        hit = _json_call(got[0], infos) if got is not None and isinstance(got[0], dict) else None
        if got is not None and hit:
            take(m.start(), got[1], hit[0], hit[1])
    names = "|".join(re.escape(n) for n in sorted(infos, key=len, reverse=True))
    for m in list(re.finditer(rf"(?im)\b(?:TOOL|CALL)\s*(?::\s*)?({names})\b[ \t]*", work)):
        info, rest = infos[m.group(1).lower()], work[m.end() :]
        if rest.startswith("{"):
            try:
                obj, size = _DECODER.raw_decode(rest)
            except json.JSONDecodeError:
                size = balanced_end(rest, 0, limit=CALL_SCAN_LIMIT)
                obj = _lenient_object(rest[:size]) if size > 0 else None
                if obj is None:
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
    # Optional parts start with a literal ("[", "page"), so runs of spaces cannot be
    # split between two patterns in many ways (linear time).
    value = r"(\"[^\"\n]+\"|'[^'\n]+'|(?:\[[ \t]*)?(?:page[ \t]*)?[pP]?\d{1,9}(?:[ \t]*:[^\]\n]{0,200}\])?\]?)"
    for m in list(re.finditer(rf"(?im)^[^\w\n]*({names})\s*(?:[:=\-]\s*)?{value}[^\w\n]*$", work)):
        info = infos[m.group(1).lower()]
        take(m.start(), m.end(), info.name, _single(info, m.group(2)))
    upper = "|".join(re.escape(i.name.upper()) for i in infos.values())
    for m in list(re.finditer(rf"\b({upper})\b\s*(?::\s*)?(?i:{value})", work)):
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
    work = re.sub(r"(?i)<tool_call>\s*</tool_call>", " ", work)
    rest = "\n".join(line.rstrip() for line in work.split("\n") if line.strip())
    return ParsedReply(rest.strip(), calls)
