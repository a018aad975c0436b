"""The three wire formats are sibling adapters on one edge, and copage.server has no circle.

Chat Completions, Responses and Anthropic Messages each parse their body into a
Chat Completions call and render the turn's events; everything else (keys, the
body and its known prefix, the turn streamed or whole, the error body) is the one
edge module's. The import graph shows it: each format module imports
``copage.server.edge``; none imports another format module or the app.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))

from test_import_graph import MODULES, cycles, graph

FORMATS = ("copage.server.formats.chat", "copage.server.formats.responses",
           "copage.server.formats.messages")
EDGE = "copage.server.edge"


def test_no_import_circles_in_the_server() -> None:
    assert cycles(graph("copage.server")) == []


def test_each_format_imports_the_edge() -> None:
    edges = graph("copage.server")
    assert all(f in MODULES for f in FORMATS)
    assert {f: EDGE in edges[f] for f in FORMATS} == dict.fromkeys(FORMATS, True)


def test_no_format_imports_another_format_or_the_app() -> None:
    edges = graph("copage.server")
    banned = {*FORMATS, "copage.server.app"}
    bad = {f: sorted(edges[f] & (banned - {f})) for f in FORMATS if edges[f] & (banned - {f})}
    assert bad == {}


def test_the_edge_and_the_service_import_no_format() -> None:
    """The shared pieces sit below the formats: the edge, the service, the turn's
    events and the streaming response import none of them."""
    edges = graph("copage.server")
    below = ("copage.server.edge", "copage.server.service", "copage.server.events",
             "copage.server.streaming", "copage.server.finder")
    bad = {m: sorted(i for i in edges[m] if i.startswith("copage.server.formats"))
           for m in below}
    assert {m: v for m, v in bad.items() if v} == {}


def test_the_turns_events_need_no_service() -> None:
    """Rendering and streaming a turn read its event types from their own module."""
    edges = graph("copage.server")
    users = ("copage.server.streaming", "copage.server.formats.responses_wire", *FORMATS)
    assert {m: "copage.server.service" in edges[m] for m in users} == dict.fromkeys(users, False)
