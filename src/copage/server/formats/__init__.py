"""Client wire formats other than Chat Completions, each a parser and a renderer
around the one service: the Responses API and Anthropic Messages."""

__all__ = ["messages", "responses", "routes"]
