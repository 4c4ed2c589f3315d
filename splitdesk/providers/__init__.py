"""API dialects: each module builds one dialect's HTTP request and decodes its stream into
typed deltas (:mod:`splitdesk.providers.base`). No Qt, no metrics."""

from __future__ import annotations

from splitdesk.providers.base import Provider
from splitdesk.providers.openai_chat import OpenAIChat
from splitdesk.providers.openai_completions import OpenAICompletions

PROVIDERS: dict[str, Provider] = {p.api: p for p in (OpenAIChat(), OpenAICompletions())}


def get_provider(api: str) -> Provider:
    """The provider of dialect ``api``; raises ``KeyError`` naming the known ones."""
    try:
        return PROVIDERS[api]
    except KeyError:
        raise KeyError(f"unknown API dialect {api!r}; known: {', '.join(PROVIDERS)}") from None
