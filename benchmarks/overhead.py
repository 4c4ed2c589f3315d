"""Engine CPU per event, against a bare httpx-sse read loop on the same stream.

The built-in endpoint streams one long answer as fast as it can (no step time). Every
variant sends the same request (the body and headers splitdesk's OpenAI chat provider
builds, so the server sends the same chunks, ``usage`` fields included) over loopback to
the same endpoint, opens its own client, reads the whole stream and counts its token
events; the runs must count the same number of events. CPU time is
``time.process_time()`` of this process (every thread) around each run:

* bare: ``httpx_sse.aconnect_sse`` + ``aiter_sse()`` + ``json.loads`` of each event, and
  the content test that counts it: the least any client does (the reference);
* bare, no JSON: the same without ``json.loads`` (for scale only);
* engine → pipe: what the window's engine process does per event: the runner
  (arrival-stamping transport, SSE framing, OpenAI decoder, run events) and
  :class:`splitdesk.core.measure.engine_worker.Worker` encoding each event as a pipe line and
  writing them out per event-loop turn (to ``/dev/null``, through an asyncio pipe);
* engine → RunState: what ``splitdesk bench`` does: the runner and ``RunState.apply``.

With ``--streams N`` it then reads N streams at once at the pace a window sees (the
batching profile at 3×, ~80 tok/s each, answers of ~500 tokens: the window's load of
``benchmarks/ui_load.py``), with bare httpx-sse (one shared client) and with the engine's
Worker, and prints each one's CPU share of a core over the read: there each token is a
read of its own, and the per-read layers cost more than the per-event ones above.

Each repeat reads a stream of ``--tokens`` and one a tenth as long (``max_tokens``) with
every variant;
the cost *per event* is the difference of the two runs' CPU over the difference of their
events, so what a run costs once (the client, its TLS context, the connection) cancels
out. Goal: each engine ≤ 1.5 × bare per event (medians of ``--repeat`` interleaved
repeats). Prints µs and CPU seconds per 1,000 events (also whole-run CPU over events),
and the load average before and after (a shared machine).

    .venv/bin/python benchmarks/overhead.py [--tokens 20000] [--repeat 5] [--streams 64]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import BinaryIO

import httpx
import httpx_sse

from splitdesk.core.measure.engine_protocol import RunCommand
from splitdesk.core.measure.engine_worker import Worker
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers import get_provider
from splitdesk.providers.base import EndpointConfig, GenParams
from splitdesk.sim.launcher import start_sim

FAST = {
    "t_base": 0.0,
    "t_seq": 0.0,
    "t_ctx": 0.0,
    "t_prefill": 0.0,
    "jitter": 0.0,
    "answer_spread": 0.0,
}
GOAL = 1.5


def endpoint(url: str) -> EndpointConfig:
    return EndpointConfig(url, "openai-chat", "splitdesk-sim")


async def bare(url: str, question: str, max_tokens: int, parse: bool) -> int:
    """Token events of one stream read with httpx-sse alone."""
    call = get_provider("openai-chat").build_request(
        endpoint(url), question, GenParams(max_tokens=max_tokens)
    )
    n = 0
    async with (
        httpx.AsyncClient(timeout=60) as client,
        httpx_sse.aconnect_sse(
            client, call.method, call.url, json=call.json, headers=call.headers
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


def config(url: str) -> RunConfig:
    return RunConfig(endpoint(url), warm_connections=False)


async def bare_shared(client: httpx.AsyncClient, url: str, question: str, max_tokens: int) -> int:
    """:func:`bare` on a client shared by every stream (a client each costs its TLS
    context and pool, which no reader of many streams pays per stream)."""
    call = get_provider("openai-chat").build_request(
        endpoint(url), question, GenParams(max_tokens=max_tokens)
    )
    n = 0
    async with httpx_sse.aconnect_sse(
        client, call.method, call.url, json=call.json, headers=call.headers
    ) as es:
        async for event in es.aiter_sse():
            if event.data == "[DONE]":
                break
            chunk = json.loads(event.data)
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                n += 1
    return n


async def bare_many(url: str, questions: list[str], max_tokens: int) -> int:
    """Token events of ``questions`` read at once with httpx-sse alone."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        counts = await asyncio.gather(*(bare_shared(client, url, q, max_tokens) for q in questions))
    return sum(counts)


async def engine_many(url: str, questions: list[str], max_tokens: int) -> int:
    """Token events of ``questions`` read at once by the engine process's Worker."""
    loop = asyncio.get_running_loop()
    with devnull() as sink:
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, sink)
        out = _CountingPipe(transport)
        worker = Worker(out)  # type: ignore[arg-type]
        plan = make_plan("parallel", questions, CombinedTemplate(), max_tokens)
        worker.start(RunCommand(run=1, config=config(url), questions=questions, plan=plan))
        await asyncio.wait(set(worker.tasks))
        await asyncio.sleep(0)  # the last flush
        transport.close()
    return out.texts


async def paced(streams: int, repeat: int) -> None:
    """CPU share of a core of bare httpx-sse and of the engine, each reading ``streams``
    paced streams at once (module docstring), ``repeat`` interleaved runs each."""
    pace = {"answer_tokens": 500, "speed": 3.0, "answer_spread": 0.0}
    sim = await asyncio.to_thread(start_sim, "batching", pace)
    url = sim.openai_base_url
    runs: dict[str, Callable[[str, list[str], int], Awaitable[int]]] = {
        "bare": bare_many,
        "engine → pipe": engine_many,
    }
    shares: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for k in range(repeat):
            counts = {}
            for name, run in runs.items():
                questions = [f"Question {i + 1}, take {k} of {name}?" for i in range(streams)]
                cpu, n, wall = await measure(functools.partial(run, url, questions, 800))
                shares[name].append(cpu / wall)
                counts[name] = n
            low = min(counts.values())
            if max(counts.values()) > low * 1.01:  # answers differ by question, ~0.1 %
                raise SystemExit(f"the variants read different loads: {counts}")
    finally:
        await asyncio.to_thread(sim.stop)
    print(f"{streams} paced streams at once, CPU share of a core (median, range of {repeat}):")
    for name, got in shares.items():
        print(f"  {name:14} {statistics.median(got):5.1%} ({min(got):.1%}–{max(got):.1%})")
    ratio = statistics.median(shares["engine → pipe"]) / statistics.median(shares["bare"])
    print(f"  engine → pipe / bare = {ratio:.2f}×")


async def engine_state(url: str, question: str, max_tokens: int) -> int:
    """Token events of one stream through the runner into ``RunState`` (bench)."""
    state = RunState()
    plan = make_plan("parallel", [question], CombinedTemplate(), max_tokens)
    await Runner(config(url), state.apply).run([question], plan)
    return len(state.requests[0].event_times)


class _CountingPipe:
    """The engine's stdout stand-in: an asyncio pipe to ``/dev/null`` that counts the
    text events among the lines written (the count is charged to the engine). Text events
    travel as rows of ``{"run":1,"texts":[[t,req,"text",false],…]}`` lines (``TextsLine``),
    one alone as an event line (``"kind":"text"``); a row ends ``",false]`` or ``",true]``
    (a text holding that would be counted twice: :func:`main` checks every variant read
    the same number of events, so a miscount stops the run)."""

    def __init__(self, inner: asyncio.WriteTransport) -> None:
        self.inner = inner
        self.texts = 0

    def write(self, data: bytes) -> None:
        self.texts += (
            data.count(b'"kind":"text"') + data.count(b'",false]') + data.count(b'",true]')
        )
        self.inner.write(data)


def devnull() -> BinaryIO:
    """``/dev/null`` for writing (opening it never blocks)."""
    return open(os.devnull, "wb")


async def engine_pipe(url: str, question: str, max_tokens: int) -> int:
    """Token events of one stream through the engine process's own code (its Worker)."""
    loop = asyncio.get_running_loop()
    with devnull() as sink:
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, sink)
        out = _CountingPipe(transport)
        worker = Worker(out)  # type: ignore[arg-type]
        plan = make_plan("parallel", [question], CombinedTemplate(), max_tokens)
        worker.start(RunCommand(run=1, config=config(url), questions=[question], plan=plan))
        await asyncio.wait(set(worker.tasks))
        await asyncio.sleep(0)  # the last flush
        transport.close()
    return out.texts


async def measure(run: Callable[[], Awaitable[int]]) -> tuple[float, int, float]:
    """(CPU seconds, events, wall seconds) of one run."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    n = await run()
    return time.process_time() - cpu0, n, time.perf_counter() - wall0


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main(tokens: int, repeat: int) -> None:
    print(f"before: {load()} ({os.cpu_count()} CPUs)")
    sim = await asyncio.to_thread(start_sim, "batching", {**FAST, "answer_tokens": tokens})
    url = sim.openai_base_url
    variants: dict[str, Callable[[str, int], Awaitable[int]]] = {
        "bare": lambda q, m: bare(url, q, m, True),
        "bare, no JSON": lambda q, m: bare(url, q, m, False),
        "engine → pipe": lambda q, m: engine_pipe(url, q, m),
        "engine → RunState": lambda q, m: engine_state(url, q, m),
    }
    #: per variant and repeat: (µs per event, whole-run µs per event, events, events/s)
    results: dict[str, list[tuple[float, float, int, float]]] = {name: [] for name in variants}
    try:
        await engine_state(
            url, "warm-up", tokens // 10
        )  # imports and first-use costs out of the figures
        for k in range(repeat):
            q = f"How fast can a stream go, take {k}?"
            for name, run in variants.items():
                cpu, n, wall = await measure(functools.partial(run, q, tokens))
                short_cpu, short_n, _ = await measure(functools.partial(run, q, tokens // 10))
                per_event = (cpu - short_cpu) / (n - short_n) * 1e6
                results[name].append((per_event, cpu / n * 1e6, n, n / wall))
            counts = {name: runs[-1][2] for name, runs in results.items()}
            if len(set(counts.values())) != 1:
                raise SystemExit(f"the variants read different streams: {counts}")
    finally:
        await asyncio.to_thread(sim.stop)
    med = {name: statistics.median(r[0] for r in runs) for name, runs in results.items()}
    print(
        f"{'':18} {'µs/event':>9} {'CPU s/1,000 ev':>15} {'whole run':>10} {'events':>7}"
        f" {'events/s':>9}"
    )
    for name, runs in results.items():
        whole = statistics.median(r[1] for r in runs)
        rate = statistics.median(r[3] for r in runs)
        print(
            f"{name:18} {med[name]:9.2f} {med[name] / 1000:15.4f} {whole:10.2f}"
            f" {runs[0][2]:7d} {rate:9,.0f}"
        )
    for name in ("engine → pipe", "engine → RunState"):
        ratio = med[name] / med["bare"]
        verdict = "meets" if ratio <= GOAL else "MISSES"
        print(f"{name} / bare = {ratio:.2f}× per event — {verdict} the {GOAL}× goal")
    print(f"after: {load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--streams", type=int, default=0, help="then N paced streams at once (module docstring)"
    )
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.repeat))
    if args.streams:
        asyncio.run(paced(args.streams, min(args.repeat, 3)))
