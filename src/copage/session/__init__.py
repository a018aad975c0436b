"""The cooperative loop: :class:`PagedChat` joins a paged memory to a chat model.

One streaming recall engine (:mod:`copage.session.engine`) serves both
:class:`PagedChat` and the proxy (``copage.server.proxy_loop``).
"""

from copage.session.engine import (
    CALLS_AFTER_CAP,
    ClientToolDelta,
    LoopEnd,
    LoopEvent,
    LoopOutcome,
    LoopSettings,
    RecallLoopError,
    RecallServed,
    TextDelta,
    run_recall_loop,
)
from copage.session.fill_settings import FillSettings
from copage.session.loop import PagedChat, TurnDone, TurnStream
from copage.session.modes import DEFAULT_RECALL_MODE, RecallMode, auto_mode, parse_mode
from copage.session.prompts import PROMPT_STYLES
from copage.session.records import ProbeRecord, RecallRecord, TurnReport
from copage.session.speculate import (
    DEFAULT_THRESHOLD,
    Speculation,
    Speculator,
    speculate,
    with_fill,
)

__all__ = [
    "CALLS_AFTER_CAP",
    "DEFAULT_RECALL_MODE",
    "DEFAULT_THRESHOLD",
    "PROMPT_STYLES",
    "ClientToolDelta",
    "FillSettings",
    "LoopEnd",
    "LoopEvent",
    "LoopOutcome",
    "LoopSettings",
    "PagedChat",
    "ProbeRecord",
    "RecallLoopError",
    "RecallMode",
    "RecallRecord",
    "RecallServed",
    "Speculation",
    "Speculator",
    "TextDelta",
    "TurnDone",
    "TurnReport",
    "TurnStream",
    "auto_mode",
    "parse_mode",
    "run_recall_loop",
    "speculate",
    "with_fill",
]
