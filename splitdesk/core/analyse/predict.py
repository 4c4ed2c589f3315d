"""Predicted timings for a plan on the built-in endpoint.

The built-in endpoint knows its own cost model and text, so it answers
``POST /_splitdesk/predict`` with the expected TTFT and E2E of each request of a plan on an
idle server (:func:`splitdesk.sim.costmodel.predict`). This module builds that query from
the same request bodies the runner sends, one phase at a time (phases run on an idle
server one after another). A sequential phase is predicted one request at a time. The
query and the answer are typed (:class:`PredictQuery`, :class:`PredictAnswer`): a changed
endpoint fails with the field it got wrong, not a ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from splitdesk.core.run.plans import RunPlan
from splitdesk.core.run.run_state import RequestTrace
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, GenParams


@dataclass(frozen=True)
class PredictedRequest:
    """Expected timing of one request: seconds from its own send (``t_send_s`` from its
    phase's start). ``rejected``: the rate limit would refuse it. From endpoints that
    model prefill: ``prompt_tokens``, ``cached_prompt_tokens`` (``None``: no prefix cache),
    ``queue_s`` (reaching the engine → joining the batch) and ``prefill_s`` (joining →
    the first token's step end)."""

    t_send_s: float
    ttft_s: float | None
    e2e_s: float
    output_tokens: int
    rejected: bool
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    queue_s: float | None = None
    prefill_s: float | None = None


class PredictItem(BaseModel):
    """One request of a ``POST /_splitdesk/predict`` query: sent ``send_s`` seconds after
    the phase starts, in dialect ``api``, with the JSON ``body`` the runner would send."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    send_s: float = Field(0.0, ge=0)
    api: str
    body: dict[str, Any]


class PredictQuery(BaseModel):
    """The body of ``POST /_splitdesk/predict``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests: list[PredictItem]
    #: each request sent when the one before it has its last token (a sequential phase)
    sequential: bool = False


class Prediction(BaseModel):
    """The built-in endpoint's answer for one request (seconds from its send; more keys
    may be added by the endpoint, so unknown ones are ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    ttft_s: float | None = Field(ge=0)
    e2e_s: float = Field(ge=0)
    output_tokens: int = Field(ge=0)
    rejected: bool
    events: int | None = None
    send_s: float = Field(0.0, ge=0)
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    queue_s: float | None = None
    prefill_s: float | None = None


class PredictAnswer(BaseModel):
    """The body of the endpoint's answer: one :class:`Prediction` per queried request."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    predictions: list[Prediction]


async def _ask(
    client: httpx.AsyncClient, root: str, items: list[PredictItem], sequential: bool = False
) -> list[Prediction]:
    """Ask the endpoint; raises ``httpx.HTTPError`` or ``ValueError`` (a
    ``pydantic.ValidationError`` naming the field) when the answer is not a prediction of
    every item."""
    query = PredictQuery(requests=items, sequential=sequential)
    response = await client.post(
        f"{root}/_splitdesk/predict",
        content=query.model_dump_json(),
        headers={"content-type": "application/json"},
    )
    response.raise_for_status()
    answer = PredictAnswer.model_validate_json(response.content)
    if len(answer.predictions) != len(items):
        raise ValueError(
            f"the endpoint predicted {len(answer.predictions)} requests of {len(items)}"
        )
    return answer.predictions


def _loopback_client(timeout: float) -> httpx.AsyncClient:
    """A client for the built-in endpoint: plain HTTP on loopback, so no proxy and no TLS
    (``verify=False`` skips loading the CA bundle, ~50 ms per client: a sweep asks the
    endpoint three times per run)."""
    return httpx.AsyncClient(timeout=timeout, trust_env=False, verify=False)


async def predict_plan(
    sim_root: str,
    endpoint: EndpointConfig,
    plan: RunPlan,
    temperature: float | None = None,
    seed: int | None = None,
) -> list[PredictedRequest]:
    """One :class:`PredictedRequest` per request of ``plan``, in index order.

    ``sim_root``: the built-in endpoint's root URL (``http://127.0.0.1:P``). Raises
    ``httpx.HTTPError`` when the endpoint cannot answer (not a built-in endpoint) and
    ``ValueError`` (``pydantic.ValidationError``) when its answer is not a prediction.
    Ask before a run sends its first request: the endpoint computes the prediction on the
    loop that schedules its token steps, which a run's streams must have to themselves.
    """
    provider = get_provider(endpoint.api)
    out: list[PredictedRequest] = []
    # The built-in endpoint is a child process on loopback: never through a proxy.
    async with _loopback_client(10.0) as client:
        for phase in plan.phases:
            bodies = [
                provider.build_request(
                    endpoint, spec.as_prompt(), GenParams(spec.max_tokens, temperature, seed)
                ).json
                for spec in phase.requests
            ]
            items = [PredictItem(api=endpoint.api, body=b) for b in bodies]
            # a sequential phase: each request sent once the one before it ended (the
            # endpoint's prefix cache carries over from one to the next, as it would)
            for p in await _ask(client, sim_root, items, sequential=phase.sequential):
                out.append(
                    PredictedRequest(
                        p.send_s,
                        p.ttft_s,
                        p.e2e_s,
                        p.output_tokens,
                        p.rejected,
                        p.prompt_tokens,
                        p.cached_prompt_tokens,
                        p.queue_s,
                        p.prefill_s,
                    )
                )
    return out


async def schedule_slip_s(sim_root: str) -> float | None:
    """How far the built-in endpoint has fallen behind its own cost-model schedule so far,
    in seconds (``schedule_slip_s`` of ``GET {sim_root}/_splitdesk/info``, cumulative since
    it started): time its engine loop did not get the CPU when a step was due (a starved
    machine), which a measured makespan includes and a prediction does not. The difference
    of two readings is the slip of what ran between them. ``None`` when the endpoint does
    not say (not a built-in endpoint, unreachable): never raises.
    """
    try:
        async with _loopback_client(5.0) as client:
            info = (await client.get(f"{sim_root}/_splitdesk/info")).json()
        slip = info.get("schedule_slip_s") if isinstance(info, dict) else None
    except (httpx.HTTPError, ValueError):
        return None
    return float(slip) if isinstance(slip, int | float) else None


def predicted_makespan(preds: list[PredictedRequest]) -> float | None:
    """Makespan of a group of predicted requests (last token − first send), seconds."""
    accepted = [p for p in preds if not p.rejected]
    if not accepted:
        return None
    return max(p.t_send_s + p.e2e_s for p in accepted) - min(p.t_send_s for p in accepted)


#: What views say in place of a predicted speed-up the rate limit made meaningless.
RATE_LIMIT_NOTE = "prediction ignores the rate limit"


def prediction_ignores_rate_limit(
    preds: Sequence[PredictedRequest] | None, traces: Sequence[RequestTrace]
) -> bool:
    """True when the cost model's prediction does not describe the run because of a rate
    limit: the endpoint predicted it would refuse some request (``rejected``: the profile
    has a rate limit), or a request of ``traces`` was refused with HTTP 429 or retried
    after one. The prediction is of an idle server with no refusals, retries or back-off
    (``POST /_splitdesk/predict``), so a rate-limited run can be several times slower
    than predicted (4.7× predicted, 1.4× measured on the rate-limited profile): views
    show :data:`RATE_LIMIT_NOTE` instead of the predicted speed-up."""
    if preds and any(p.rejected for p in preds):
        return True
    return any(t.retries or (t.error is not None and t.error.status == 429) for t in traces)
