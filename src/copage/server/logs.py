"""Keep secrets out of logs and error bodies: one :class:`Redactor`, a logging filter using it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from copage.llm.errors import redact
from copage.session.auth import find_keys

LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "copage", "copage.server")


class Redactor:
    """Replaces known secrets, proxy keys (found by digest) and key-shaped text by ``***``.

    Args:
        secrets: plaintext secrets the server must hold anyway (the upstream key,
            credentials in the upstream or store URL).
        digests: ``sha256:HEX`` digests of the proxy keys (their plaintext is not kept).
    """

    def __init__(self, secrets: Iterable[str | None] = (),
                 digests: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self.digests = frozenset(digests)

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        return redact(text, *self.secrets, *find_keys(text, self.digests))


class RedactingFilter(logging.Filter):
    """Redacts every record's message, arguments and traceback in place.

    The arguments keep their shape (a tuple stays a tuple of the same length;
    uvicorn's access formatter unpacks it), only string arguments holding a
    secret are replaced, so ``%d`` placeholders still get their numbers.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def _arg(self, value: Any) -> Any:
        if isinstance(value, (int, float, bool)) or value is None:
            return value
        text = value if isinstance(value, str) else str(value)
        clean = self.redactor(text)
        return value if clean == text else clean

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redactor(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self._arg(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: self._arg(v) for k, v in record.args.items()}
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = None
        if message is not None and self.redactor(message) != message:
            # A secret built from several pieces: give up the formatting, keep it safe.
            record.msg, record.args = self.redactor(message), ()
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.msg = f"{record.msg}\n{self.redactor(text)}"
            record.exc_info, record.exc_text = None, None
        return True


def install_redaction(redactor: Redactor) -> None:
    """Attach the filter to the handlers (and loggers) that may carry request data."""
    flt = RedactingFilter(redactor)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for target in (logger, *logger.handlers):
            for old in [f for f in target.filters if isinstance(f, RedactingFilter)]:
                target.removeFilter(old)
            target.addFilter(flt)
