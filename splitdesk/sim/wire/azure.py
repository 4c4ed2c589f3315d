"""Azure OpenAI chat completions, as an Azure OpenAI deployment streams them.

Wire format: https://learn.microsoft.com/azure/ai-services/openai/reference —
``POST /openai/deployments/{deployment}/chat/completions?api-version=…``: OpenAI's chat
completions request and stream (:mod:`splitdesk.sim.wire.openai`), routed by the
*deployment* in the path (the body's ``model`` is optional and ignored), with the
``api-version`` query parameter required (400 without). The stream opens with Azure's
``choices: []`` chunk of ``prompt_filter_results``, and every choice carries
``content_filter_results``. No key is checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from splitdesk.sim.wire.base import GenRequest, Reply, WireError, require_object, sse
from splitdesk.sim.wire.openai import OpenAIChat

_SAFE = {"filtered": False, "severity": "safe"}
FILTER_RESULTS = {k: _SAFE for k in ("hate", "self_harm", "sexual", "violence")}


class AzureChat(OpenAIChat):
    """``POST /openai/deployments/{deployment}/chat/completions``."""

    name = "azure-openai"

    def parse(self, body: Any) -> GenRequest:
        body = require_object(body)
        if not isinstance(body.get("model"), str) or not body["model"]:
            body = {**body, "model": "-"}  # Azure routes by deployment; the path names it
        return super().parse(body)

    def parse_http(
        self, body: Any, path_params: Mapping[str, str], query: Mapping[str, str]
    ) -> GenRequest:
        if not query.get("api-version"):
            raise WireError(
                400,
                "Missing required query parameter 'api-version' (e.g. ?api-version=2024-10-21).",
                param="api-version",
                code="MissingApiVersionParameter",
            )
        gen = self.parse(body)
        return dataclasses.replace(gen, model=path_params.get("deployment", gen.model))

    def model_not_found(self, asked: str, served: str) -> WireError:
        return WireError(
            404,
            f"The API deployment {asked} for this resource does not exist "
            f"(this resource serves the deployment {served}).",
            code="DeploymentNotFound",
        )

    def _chunk(self, reply: Reply, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        chunk = super()._chunk(reply, delta, finish)
        chunk["choices"][0]["content_filter_results"] = FILTER_RESULTS if delta else {}
        return chunk

    def stream_start(self, reply: Reply) -> list[bytes]:
        prompt_filter = {
            "id": "",
            "object": "",
            "created": 0,
            "model": "",
            "choices": [],
            "prompt_filter_results": [
                {"prompt_index": 0, "content_filter_results": FILTER_RESULTS}
            ],
        }
        return [sse(prompt_filter), *super().stream_start(reply)]
