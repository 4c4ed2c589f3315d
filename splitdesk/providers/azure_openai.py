"""Azure OpenAI chat completions: ``POST {base}/chat/completions?api-version=…``.

Wire format: https://learn.microsoft.com/azure/ai-services/openai/reference — the base URL
is a *deployment*, ``https://{resource}.openai.azure.com/openai/deployments/{deployment}``;
the key goes in the ``api-key`` header (never ``Authorization``); every request carries the
``api-version`` query parameter (:data:`DEFAULT_API_VERSION` unless
``EndpointConfig.query`` names one). The stream is OpenAI's chat-completions stream, plus
Azure's ``choices: []`` chunk of ``prompt_filter_results`` first and
``content_filter_results`` on every choice: :class:`~splitdesk.providers.openai_chat.ChatDecoder`
already reads it.

Models: Azure has no per-deployment model list — the deployment in the URL *is* the model,
so :meth:`AzureOpenAI.model_from_url` names it and model discovery never asks the server.
:meth:`AzureOpenAI.models_request` is still a real, cheap, authenticated request (the
resource's ``GET /openai/models``, its base-model catalogue) so the runner can warm
connections with it; its list is not the deployment list, so a 404 is not explained from it
(``lists_models`` is False).
"""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import urlsplit

from splitdesk.providers.base import EndpointConfig, GenParams, HttpCall, Prompt
from splitdesk.providers.openai_chat import OpenAIChat

#: The GA data-plane API version sent when the endpoint names none.
DEFAULT_API_VERSION = "2024-10-21"
#: The deployment the built-in endpoint serves (its model's name).
SIM_DEPLOYMENT = "splitdesk-sim"


def deployment_of(base_url: str) -> str | None:
    """The ``{deployment}`` of ``…/openai/deployments/{deployment}``, or ``None``
    (https://learn.microsoft.com/azure/ai-services/openai/reference)."""
    parts = [p for p in urlsplit(base_url).path.split("/") if p]
    for i in range(len(parts) - 2):
        if parts[i] == "openai" and parts[i + 1] == "deployments":
            return parts[i + 2]
    return None


class AzureOpenAI(OpenAIChat):
    """``azure-openai``: OpenAI chat completions on an Azure OpenAI deployment
    (https://learn.microsoft.com/azure/ai-services/openai/reference)."""

    api = "azure-openai"
    key_env: ClassVar[str | None] = "AZURE_OPENAI_API_KEY"
    root_suffix: ClassVar[str] = f"/openai/deployments/{SIM_DEPLOYMENT}"
    lists_models: ClassVar[bool] = False

    def auth_headers(self, endpoint: EndpointConfig) -> dict[str, str]:
        headers = dict(endpoint.headers)
        if endpoint.api_key:
            headers["api-key"] = endpoint.api_key
        return headers

    @staticmethod
    def query(endpoint: EndpointConfig) -> dict[str, str]:
        """The endpoint's query parameters with ``api-version`` defaulted."""
        return {"api-version": DEFAULT_API_VERSION, **endpoint.query}

    def build_request(
        self, endpoint: EndpointConfig, prompt: str | Prompt, params: GenParams
    ) -> HttpCall:
        call = super().build_request(endpoint, prompt, params)
        return HttpCall(call.method, call.url, call.headers, call.json, self.query(endpoint))

    def model_from_url(self, endpoint: EndpointConfig) -> str | None:
        """The deployment named in the base URL (Azure routes by deployment, not model)."""
        return deployment_of(endpoint.base_url)

    def models_request(self, endpoint: EndpointConfig) -> HttpCall:
        """``GET {resource}/openai/models?api-version=…``: the resource's model catalogue
        (not its deployments; see the module docstring)."""
        base = endpoint.base_url.rstrip("/")
        marker = base.find("/openai/deployments/")
        root = base[:marker] if marker >= 0 else base
        return HttpCall(
            "GET",
            root + "/openai/models",
            self.auth_headers(endpoint),
            params=self.query(endpoint),
        )
