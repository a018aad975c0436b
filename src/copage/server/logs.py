"""Keep secrets out of logs: a filter that redacts known keys from every record."""

from __future__ import annotations

import logging

from copage.llm.errors import redact

LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "copage", "copage.server")


class RedactingFilter(logging.Filter):
    """Replaces every known secret (and anything key-shaped) in a record by ``***``."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        clean = redact(message, *self.secrets)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.msg = f"{record.msg}\n{redact(text, *self.secrets)}"
            record.exc_info, record.exc_text = None, None
        return True


def install_redaction(secrets: list[str]) -> None:
    """Attach the filter to the handlers (and loggers) that may carry request data."""
    flt = RedactingFilter(secrets)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for target in (logger, *logger.handlers):
            for old in [f for f in target.filters if isinstance(f, RedactingFilter)]:
                target.removeFilter(old)
            target.addFilter(flt)
