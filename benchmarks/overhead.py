"""Engine overhead per event, against a bare httpx-sse read loop on the same stream.

The built-in endpoint streams one long answer as fast as it can (steps of ~0.2 ms). The
client reads the same kind of stream three ways and we divide its CPU time
(``time.process_time``) by the number of token events:

* bare: ``httpx_sse.aconnect_sse`` + ``aiter_sse()``, nothing else;
* bare + JSON: the same, plus ``json.loads`` of each event (what any client must do);
* engine: splitdesk's runner (arrival-stamping transport, SSE decoder, OpenAI decoder,
  run events, ``RunState.apply``) — what the window and ``splitdesk bench`` run.

Goal: engine ≤ 1.5 × bare (each figure is the median of ``--repeat`` runs).

    .venv/bin/python benchmarks/overhead.py [--tokens 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable

import httpx
import httpx_sse

from splitdesk.core.plans import make_plan
from splitdesk.core.run_state import RunState
from splitdesk.core.runner import RunConfig, Runner
from splitdesk.core.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import start_sim

FAST = {
    "t_base": 0.0,
    "t_seq": 0.0,
    "t_ctx": 0.0,
    "t_prefill": 0.0,
    "jitter": 0.0,
    "answer_spread": 0.0,
}


def body(question: str) -> dict[str, object]:
    return {
        "model": "splitdesk-sim",
        "messages": [{"role": "user", "content": question}],
        "stream": True,
    }


async def bare(url: str, question: str, parse: bool) -> int:
    n = 0
    async with (
        httpx.AsyncClient(timeout=60) as client,
        httpx_sse.aconnect_sse(
            client, "POST", f"{url}/chat/completions", json=body(question)
        ) as es,
    ):
        async for event in es.aiter_sse():
            if event.data == "[DONE]":
                break
            if parse:
                chunk = json.loads(event.data)
                if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                    n += 1
            elif '"content":"' in event.data and '"content":""' not in event.data:
                n += 1
    return n


async def engine(url: str, question: str) -> int:
    state = RunState()
    endpoint = EndpointConfig(url, "openai-chat", "splitdesk-sim")
    config = RunConfig(endpoint, warm_connections=False)
    await Runner(config, state.apply).run(
        [question], make_plan("parallel", [question], CombinedTemplate(), None)
    )
    return len(state.requests[0].event_times)


async def per_event_us(run: Callable[[], Awaitable[int]]) -> tuple[float, int, float]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    n = await run()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return cpu / n * 1e6, n, n / wall


async def main(tokens: int, repeat: int) -> None:
    sim = await asyncio.to_thread(start_sim, "batching", {**FAST, "answer_tokens": tokens})
    url = sim.openai_base_url
    try:
        results: dict[str, list[tuple[float, int, float]]] = {
            "bare": [],
            "bare + JSON": [],
            "engine": [],
        }
        for k in range(repeat):
            q = f"How fast can a stream go, take {k}?"
            results["bare"].append(await per_event_us(lambda q=q: bare(url, q, False)))
            results["bare + JSON"].append(await per_event_us(lambda q=q: bare(url, q, True)))
            results["engine"].append(await per_event_us(lambda q=q: engine(url, q)))
    finally:
        await asyncio.to_thread(sim.stop)
    med = {name: statistics.median(r[0] for r in runs) for name, runs in results.items()}
    for name, runs in results.items():
        events, rate = runs[0][1], statistics.median(r[2] for r in runs)
        print(
            f"{name:12} {med[name]:6.1f} µs CPU per event  ({events} events, {rate:,.0f} events/s)"
        )
    ratio = med["engine"] / med["bare"]
    verdict = "meets" if ratio <= 1.5 else "MISSES"
    print(
        f"engine / bare = {ratio:.2f}×, engine / (bare + JSON) = {med['engine'] / med['bare + JSON']:.2f}× — {verdict} the 1.5× goal"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.repeat))
