"""The client wire formats, equal sibling adapters on the one edge (:mod:`copage.server.edge`):
Chat Completions (:mod:`.chat`), the Responses API (:mod:`.responses`) and Anthropic
Messages (:mod:`.messages`); each a parser, a renderer and its endpoints."""

__all__ = ["chat", "messages", "responses"]
