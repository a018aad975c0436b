"""The ``choose`` step: one constrained call picks the evicted page a question needs.

Beyond the paper. Small models rarely call a tool on their own, and choose pages
badly when they do; asking one narrow question first works without native tool
calling: "which of these bookmarks holds what you need: one of the evicted ids,
or none". Where the model supports JSON-schema replies (OpenAI-compatible
servers: OpenAI, vLLM, llama.cpp), the reply is constrained to
``{"page": <one of the evicted ids or "none">}``; elsewhere it is parsed strictly
(a JSON object naming a listed id, else the first listed id in the text, else
``none``). The chosen page is paged in before the answer is asked for, so it
sits in the prompt as messages in its chronological place.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

from copage.core.types import page_ids_in, page_index
from copage.llm.capabilities import JSON_SCHEMA, supports
from copage.llm.errors import RequestRejected
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse
from copage.memory import PagedMemory
from copage.session.prompts import bookmark_lines
from copage.session.records import RecallRecord
from copage.session.view import PagedView

log = logging.getLogger("copage.session")

CHOOSE_SYSTEM = (
    "You find where a long conversation talked about something. You get the list of its "
    "stored pages (id, date, keywords) and a question. Reply with JSON only."
)
CHOOSE_PROMPT = (
    "Stored pages of the conversation:\n{pages}\n\nQuestion: {question}\n\n"
    "Which page most likely holds what is needed to answer the question? "
    'Reply with JSON only: {{"page": "<id>"}} with one id from the list, '
    'or {{"page": "none"}} if no page fits.'
)
NONE = "none"


@dataclass(frozen=True, slots=True)
class Choice:
    """What the choose call returned: the page (None for none or unreadable) and the reply."""

    page: str | None
    response: ChatResponse
    readable: bool


def choose_request(
    pager: PagedView, question: str, *, schema: bool, temperature: float | None, max_tokens: int
) -> ChatRequest:
    """The choose call: bookmarks of the evicted pages and the question."""
    ids = pager.evicted
    prompt = CHOOSE_PROMPT.format(pages="\n".join(bookmark_lines(pager)), question=question)
    extra = {}
    if schema:
        extra["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "page_choice", "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {"page": {"type": "string", "enum": [*ids, NONE]}},
                    "required": ["page"], "additionalProperties": False,
                },
            },
        }
    return ChatRequest(
        messages=({"role": "system", "content": CHOOSE_SYSTEM},
                  {"role": "user", "content": prompt}),
        temperature=temperature, max_tokens=max_tokens, extra=extra,
    )


def parse_choice(text: str, ids: list[str]) -> tuple[str | None, bool]:
    """``(page or None, readable)`` from a choose reply.

    A JSON object ``{"page": id}`` naming a listed id (or ``none``) is read exactly;
    otherwise the first listed id written as a word (``p12``) counts, then ``none``.
    """
    valid = set(ids)
    body = text.strip()
    m = re.search(r"\{.*?\}", body, re.DOTALL)
    if m:
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            value = str(obj.get("page", "")).strip().lower()
            if value in valid:
                return value, True
            if value == NONE:
                return None, True
    for pid in page_ids_in(body):
        if pid in valid:
            return pid, True
    if re.search(r"(?i)\bnone\b", body):
        return None, True
    return None, False


class Chooser:
    """Runs the choose step for one :class:`PagedChat` (remembers whether schemas work)."""

    def __init__(self, model: ChatModel, *, temperature: float | None, max_tokens: int) -> None:
        self.model = model
        self.temperature, self.max_tokens = temperature, max_tokens
        self.schema = supports(model, JSON_SCHEMA)

    async def ask(self, pager: PagedView, question: str) -> Choice | None:
        """The model's choice among the evicted pages (None when nothing is evicted)."""
        ids = pager.evicted
        if not ids:
            return None
        request = choose_request(pager, question, schema=self.schema,
                                 temperature=self.temperature, max_tokens=self.max_tokens)
        try:
            response = await self.model.complete(request)
        except RequestRejected as e:
            if not self.schema:
                raise
            log.warning("%s rejected response_format (%s); choosing without a schema",
                        self.model.spec, str(e)[:120])
            self.schema = False
            request = choose_request(pager, question, schema=False,
                                     temperature=self.temperature, max_tokens=self.max_tokens)
            response = await self.model.complete(request)
        page, readable = parse_choice(response.text, ids)
        return Choice(page, response, readable)


def page_in(mem: PagedMemory, choice: Choice, n: int) -> RecallRecord | None:
    """Page the chosen page in (through the pager's recall); the record, or None for none."""
    raw = choice.response.text[:500]
    if choice.page is None:
        if choice.readable:
            return None
        return RecallRecord(f"choose_{n}", "choose", raw, "error",
                            message="error: the reply named no listed page and not none")
    before = set(mem.resident)
    result = mem.recall_result(choice.page)
    evicted = tuple(sorted(before - set(mem.resident), key=page_index))
    return RecallRecord(f"choose_{n}", "choose", raw, result.status, page=result.page,
                        message=result.text if result.status == "error" else None,
                        evicted=evicted)
