"""API dialects: each module builds one dialect's HTTP request and decodes its stream into
typed deltas (:mod:`splitdesk.providers.base`). No Qt, no metrics."""

from __future__ import annotations

from splitdesk.providers.anthropic import Anthropic
from splitdesk.providers.azure_openai import AzureOpenAI
from splitdesk.providers.base import Provider
from splitdesk.providers.ollama import OllamaChat, OllamaGenerate
from splitdesk.providers.openai_chat import OpenAIChat
from splitdesk.providers.openai_completions import OpenAICompletions
from splitdesk.providers.openai_responses import OpenAIResponses
from splitdesk.providers.tgi import TGI

PROVIDERS: dict[str, Provider] = {
    p.api: p
    for p in (
        OpenAIChat(),
        OpenAICompletions(),
        OpenAIResponses(),
        AzureOpenAI(),
        Anthropic(),
        OllamaChat(),
        OllamaGenerate(),
        TGI(),
    )
}


def get_provider(api: str) -> Provider:
    """The provider of dialect ``api``; raises ``KeyError`` naming the known ones."""
    try:
        return PROVIDERS[api]
    except KeyError:
        raise KeyError(f"unknown API dialect {api!r}; known: {', '.join(PROVIDERS)}") from None
