"""Loader for the LoCoMo file format (Maharana et al., ACL 2024, ``locomo10.json``).

Format: a JSON list of samples, each with ``sample_id``, ``conversation``
(``speaker_a``, ``speaker_b``, ``session_N_date_time``, ``session_N``: turns with
``speaker``, ``dia_id``, ``text`` and sometimes ``blip_caption``) and ``qa``
(``question``, ``answer`` or ``adversarial_answer``, ``evidence``, ``category``).

Repair and skip rules (counted per reason, reported as ``repairs`` and
``probes_skipped``):

* an evidence item that equals a turn id (as text: custom ids such as ``"t12"`` and
  integer ``dia_id``s are accepted for turns, so for evidence too) is that id;
  otherwise every ``D<session>:<turn>`` found in it is an id, or, if there is none,
  every part between ``,``, ``;`` and spaces; an item giving several ids
  (``"D8:6; D9:17"``) counts as ``evidence_split``;
* evidence ids absent from the conversation are dropped (``evidence_unknown_id``);
* a probe left with no usable evidence is skipped: ``empty_evidence`` when the file
  gave none (an empty list or blank strings), ``no_usable_evidence`` when none of
  its ids exist;
* a probe with no question text is skipped (``no_question``); a category outside
  1..5 is skipped (``bad_category``);
* numeric answers become text; category 5 items keep ``adversarial_answer`` and
  have ``answer = None`` when the file gives none;
* image turns keep their caption as text (``blip_caption`` in ``Turn.meta``);
* a duplicate turn id keeps its first occurrence's id; later ones get ``#2``,
  ``#3``... (``duplicate_turn_id``) and evidence refers to the first;
* a sample with no turns is left out (``empty_conversation``); a file with no turns
  at all is an error.

Speakers: ``speaker_a`` maps to role ``user``, ``speaker_b`` to ``assistant``
(names kept in ``Turn.speaker``); a speaker called ``User``/``Assistant`` maps to
that role. Anything structurally invalid raises :class:`DatasetError` naming the
file and the field; so does JSON nested too deeply to read.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from copage.core.types import Turn
from copage.eval.datasets.probes import Conversation, Dataset, DatasetError, Probe

_SESSION = re.compile(r"session_(\d+)\Z")
_EVID = re.compile(r"D\d+:\d+")
_SEPARATORS = re.compile(r"[,;\s]+")


def load_locomo(path: str | Path, *, name: str | None = None) -> Dataset:
    """Load a LoCoMo-format file. Raises :class:`DatasetError` on invalid structure."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise DatasetError(f"{p}: cannot read file: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DatasetError(f"{p}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{p}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise DatasetError(f"{p}: JSON nested too deeply to read (not a LoCoMo file?)") from None
    return parse_locomo(data, source=str(p), name=name or p.stem)


def parse_locomo(data: Any, *, source: str = "<data>", name: str = "data") -> Dataset:
    """Parse already-decoded LoCoMo JSON (see module docstring for the rules)."""
    try:
        return _parse(data, source, name)
    except RecursionError:  # e.g. str() of a deeply nested value in an evidence list
        raise DatasetError(f"{source}: a value is nested too deeply to read") from None


def _parse(data: Any, source: str, name: str) -> Dataset:
    if isinstance(data, dict) and "conversation" in data:
        data = [data]
    if not isinstance(data, list):
        raise DatasetError(f"{source}: top level must be a list of samples, got {type(data).__name__}")
    skipped: Counter[str] = Counter()
    repairs: Counter[str] = Counter()
    convs: list[Conversation] = []
    seen_ids: set[str] = set()
    for i, sample in enumerate(data):
        where = f"{source}: sample[{i}]"
        conv = _parse_sample(sample, where, skipped, repairs)
        if conv is None:
            continue
        if conv.id in seen_ids:
            raise DatasetError(f"{where}.sample_id: duplicate sample_id {conv.id!r}")
        seen_ids.add(conv.id)
        convs.append(conv)
    if not convs:
        raise DatasetError(f"{source}: no conversation with turns")
    return Dataset(
        name=name, conversations=tuple(convs), probes_skipped=dict(sorted(skipped.items())),
        repairs=dict(sorted(repairs.items())), path=source if source != "<data>" else None,
    )


def _field(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise DatasetError(f"{where}: missing field {key!r}")
    val = obj[key]
    if not isinstance(val, kind):
        raise DatasetError(f"{where}.{key}: expected {_kind(kind)}, got {type(val).__name__}")
    return val


def _kind(kind: type | tuple[type, ...]) -> str:
    names = [k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,))]
    return " or ".join(names)


def _parse_sample(
    sample: Any, where: str, skipped: Counter[str], repairs: Counter[str]
) -> Conversation | None:
    sid = str(_field(sample, "sample_id", where, (str, int)))
    conv = _field(sample, "conversation", where, dict)
    roles = _roles(conv)
    sessions = sorted(
        (int(m.group(1)), k) for k in conv if (m := _SESSION.match(k))
    )
    turns: list[Turn] = []
    ids: set[str] = set()
    for num, key in sessions:
        stamp = conv.get(f"{key}_date_time")
        items = conv[key]
        if not isinstance(items, list):
            raise DatasetError(f"{where}.conversation.{key}: expected a list of turns")
        for j, t in enumerate(items):
            tw = f"{where}.conversation.{key}[{j}]"
            speaker = str(_field(t, "speaker", tw, (str, int)))
            text = _field(t, "text", tw, str) if "text" in t or "blip_caption" not in t else ""
            tid = str(_field(t, "dia_id", tw, (str, int)))
            if tid in ids:
                repairs["duplicate_turn_id"] += 1
                n = 2
                while f"{tid}#{n}" in ids:
                    n += 1
                tid = f"{tid}#{n}"
            ids.add(tid)
            meta = {"blip_caption": t["blip_caption"]} if t.get("blip_caption") else {}
            turns.append(Turn(
                id=tid, role=roles.get(speaker, "user"), text=text, speaker=speaker,
                timestamp=str(stamp) if stamp else None, session=num, meta=meta,
            ))
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise DatasetError(f"{where}.qa: expected a list")
    if not turns:
        repairs["empty_conversation"] += 1
        skipped["empty_conversation"] += len(qa)
        return None
    probes = [p for k, q in enumerate(qa) if (p := _parse_probe(q, f"{where}.qa[{k}]", f"{sid}/q{k}", ids, skipped, repairs))]
    speakers = tuple(dict.fromkeys(t.name for t in turns))
    return Conversation(id=sid, turns=tuple(turns), probes=tuple(probes), speakers=speakers)


def _roles(conv: dict[str, Any]) -> dict[str, str]:
    roles: dict[str, str] = {}
    for key, role in (("speaker_a", "user"), ("speaker_b", "assistant")):
        name = conv.get(key)
        if isinstance(name, str):
            low = name.lower()
            roles[name] = low if low in ("user", "assistant") else role
    return roles


def _evidence_ids(item: str | int, ids: set[str]) -> list[str]:
    """The turn ids one evidence item names (see the module docstring's rule)."""
    text = str(item).strip()
    if text in ids:
        return [text]
    return _EVID.findall(text) or [p for p in _SEPARATORS.split(text) if p]


def _parse_probe(
    q: Any, where: str, pid: str, ids: set[str], skipped: Counter[str], repairs: Counter[str]
) -> Probe | None:
    if not isinstance(q, dict):
        raise DatasetError(f"{where}: expected an object, got {type(q).__name__}")
    question = q.get("question")
    if not isinstance(question, str) or not question.strip():
        skipped["no_question"] += 1
        return None
    cat = q.get("category")
    if isinstance(cat, str) and cat.isdigit():
        cat = int(cat)
    if not isinstance(cat, int) or isinstance(cat, bool) or not 1 <= cat <= 5:
        skipped["bad_category"] += 1
        return None
    raw_ev = q.get("evidence", [])
    if isinstance(raw_ev, str):
        raw_ev = [raw_ev]
    if not isinstance(raw_ev, list):
        raise DatasetError(f"{where}.evidence: expected a list of turn ids")
    found: list[str] = []
    for k, e in enumerate(raw_ev):
        if e is None:
            continue
        if isinstance(e, bool) or not isinstance(e, str | int):
            raise DatasetError(
                f"{where}.evidence[{k}]: expected a turn id (text or integer), "
                f"got {type(e).__name__}")
        parts = _evidence_ids(e, ids)
        if len(parts) > 1:
            repairs["evidence_split"] += 1
        found.extend(parts)
    usable = [e for e in dict.fromkeys(found) if e in ids]
    if len(usable) < len(dict.fromkeys(found)):
        repairs["evidence_unknown_id"] += len(dict.fromkeys(found)) - len(usable)
    if not usable:
        skipped["empty_evidence" if not found else "no_usable_evidence"] += 1
        return None
    answer = q.get("answer")
    adv = q.get("adversarial_answer")
    return Probe(
        id=pid, question=question.strip(), category=cat, evidence=tuple(usable),
        answer=None if answer is None else str(answer),
        adversarial_answer=None if adv is None else str(adv),
        fact_type=q.get("fact_type") if isinstance(q.get("fact_type"), str) else None,
        meta=_probe_meta(q),
    )


def _probe_meta(q: dict[str, Any]) -> dict[str, Any]:
    """What else a probe carries: ``probe_kind``, and the synthetic generator's
    ``answer_forms`` (accepted surface forms of the answer, for exact match)."""
    meta: dict[str, Any] = {k: v for k, v in q.items() if k in ("probe_kind",)}
    forms = q.get("answer_forms")
    if isinstance(forms, list) and forms and all(isinstance(f, str) for f in forms):
        meta["answer_forms"] = tuple(forms)
    return meta
