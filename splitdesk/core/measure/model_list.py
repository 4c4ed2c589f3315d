"""The endpoint's model list, asked for and timed: what the window's "List models" and
"Test connection" show.

:func:`check_models` sends the dialect's model-list request (``GET /v1/models``,
``/api/tags`` …, :meth:`~splitdesk.providers.base.Provider.models_request`) through a
client set up as a run's would be (the environment's proxy and CA settings,
:mod:`splitdesk.core.measure.netenv`) and returns the models with how long the endpoint took to
answer: from sending the request to having the whole response. The window only formats
the result.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from splitdesk.core.measure.netenv import client_settings
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, header_problem
from splitdesk.providers.stream import response_error


@dataclass(frozen=True)
class ModelCheck:
    """The endpoint's answer: ``models`` it lists, in its order, and ``answered_s``,
    seconds from sending the request to the end of the response."""

    models: list[str]
    answered_s: float


async def check_models(endpoint: EndpointConfig, client_timeout_s: float) -> ModelCheck:
    """Ask ``endpoint`` for its model list and time the answer (module docstring);
    ``client_timeout_s``: seconds for each of connecting, sending and reading.

    Raises ``ValueError`` for a key or header that cannot be sent
    (:func:`~splitdesk.providers.base.header_problem`) and with the HTTP error explained
    (status, the server's message and what to do),
    :class:`~splitdesk.core.measure.netenv.NetworkSetupError` when the environment's
    proxy or CA settings cannot work for it, and ``httpx.HTTPError`` when it cannot be
    reached (:func:`splitdesk.core.measure.runner.classify_transport_error` words it)."""
    if problem := header_problem(endpoint.api_key, endpoint.headers):
        raise ValueError(problem)  # httpx raised UnicodeEncodeError while sending
    provider = get_provider(endpoint.api)
    call = provider.models_request(endpoint)
    # reads proxy and CA files: off the event loop's thread
    net = await asyncio.to_thread(client_settings, endpoint.base_url, endpoint.verify)
    async with httpx.AsyncClient(
        timeout=client_timeout_s, verify=net.verify, trust_env=net.trust_env, proxy=net.proxy
    ) as client:
        t0 = time.perf_counter()
        response = await client.request(
            call.method, call.url, headers=call.headers, params=call.params or None
        )
        answered_s = time.perf_counter() - t0
    if response.status_code >= 400:
        raise ValueError(response_error(response).message)
    return ModelCheck(provider.parse_models(response.json()), answered_s)
