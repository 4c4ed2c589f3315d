"""How many concurrent streams the built-in endpoint keeps on schedule.

For 16, 64 and 256 concurrent streams on the ``batching`` profile (max_num_seqs raised to
the stream count so every stream decodes), a client in this process reads every stream to
the end; the server's emission log gives, per token event, its lateness: the time the
bytes were handed to the socket minus the step end the cost model scheduled. Prints p50/p99
lateness, what it is made of (how late a step's first event left: the wake-up; how long
the step's events took to leave: the spread), the events per second sustained, the
endpoint's CPU seconds per 1,000 events, and the load average (a shared machine: other
processes take the endpoint's CPU). Goal on a 2-core machine: 256 streams, p99 ≤ 5 ms.

From 128 streams on (``MANY_STREAMS``) the endpoint's event loop gets a CPU of its own and
the client the others, as in the window and ``splitdesk bench`` (``splitdesk/cpus.py``);
``--no-own-cpu`` leaves both where the OS puts them at every count. The client is splitdesk's own engine (``Runner``, a parallel run of N questions): one
connection pool per request, arrival stamping, as the window and ``splitdesk bench`` read
the endpoint. ``--client httpx`` reads with one shared ``httpx.AsyncClient`` instead (the
client before: its pool bookkeeping and anyio reads cost several times the engine's CPU
per event, taken from the same two cores as the endpoint).

    .venv/bin/python benchmarks/sim_capacity.py [--streams 16 64 256] [--tokens 200] [--no-own-cpu]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import threading
import time

import httpx

from common import cpu_seconds, describe, emission_logs, pct
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.cpus import MANY_STREAMS, rejoin, separate
from splitdesk.providers.base import EndpointConfig
from splitdesk.sim.launcher import SimProcess, start_sim


async def read_with_engine(sim: SimProcess, n: int) -> list[str]:
    """Every stream read to its end by a parallel run; the requests' ids."""
    questions = [f"Question number {i} about capacity?" for i in range(n)]
    state = RunState()
    config = RunConfig(EndpointConfig(sim.openai_base_url, "openai-chat", "splitdesk-sim"))
    plan = make_plan("parallel", questions, CombinedTemplate(), None)
    await Runner(config, state.apply).run(questions, plan)
    failed = [r.error for r in state.requests if r.error is not None]
    if failed:
        raise SystemExit(f"{len(failed)} of {n} requests failed: {failed[0]}")
    return [r.request_id for r in state.requests if r.request_id is not None]


async def read_with_httpx(sim: SimProcess, n: int) -> list[str]:
    """Every stream read to its end through one shared ``httpx.AsyncClient``."""
    limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
    ids: list[str] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits) as client:

        async def stream(i: int) -> None:
            body = {
                "model": "splitdesk-sim",
                "messages": [{"role": "user", "content": f"Question number {i} about capacity?"}],
                "stream": True,
            }
            async with client.stream(
                "POST", f"{sim.openai_base_url}/chat/completions", json=body
            ) as r:
                ids.append(r.headers["x-request-id"])
                async for _ in r.aiter_raw():
                    pass

        await asyncio.gather(*(stream(i) for i in range(n)))
    return ids


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def run(n: int, tokens: int, client: str, own_cpu: bool) -> None:
    sim = await asyncio.to_thread(
        start_sim,
        "batching",
        {"max_num_seqs": max(64, n), "answer_tokens": tokens, "answer_spread": 0},
    )
    # as the window and `splitdesk bench` place them (splitdesk/cpus.py): from MANY_STREAMS
    # on, the endpoint's loop on a CPU of its own, this thread (the client) on the others
    placed = separate(sim.pid, [threading.get_native_id()]) if own_cpu else None
    try:
        before = load()
        cpu0, t0 = cpu_seconds(sim.pid), time.perf_counter()
        read = read_with_engine if client == "engine" else read_with_httpx
        ids = await read(sim, n)
        wall, cpu = time.perf_counter() - t0, cpu_seconds(sim.pid) - cpu0
        async with httpx.AsyncClient(timeout=httpx.Timeout(60.0)) as control:
            logs = await emission_logs(control, sim.url, ids)
    finally:
        await asyncio.to_thread(sim.stop)
    events = [e for log in logs for e in log["events"]]
    lateness = [(e["emitted_ns"] - e["scheduled_ns"]) / 1e6 for e in events]
    emitted = [e["emitted_ns"] for e in events]
    span = (max(emitted) - min(emitted)) / 1e9
    steps: dict[int, list[int]] = collections.defaultdict(list)
    for e in events:
        steps[e["scheduled_ns"]].append(e["emitted_ns"])
    wake = [(min(em) - s) / 1e6 for s, em in steps.items()]
    spread = [(max(em) - min(em)) / 1e6 for em in steps.values()]
    print(
        f"{n:4d} streams: {len(events)} events in {span:.2f} s = {len(events) / span:,.0f} events/s"
        f" (wall {wall:.2f} s); endpoint CPU {cpu / len(events) * 1000:.3f} s per 1,000 events;"
        f" {before} → {load()}"
    )
    where = f"endpoint on CPU {placed}, client off it" if placed is not None else "placed by the OS"
    print(f"      CPUs: {where}")
    print("      " + describe("lateness vs schedule", lateness))
    print("      " + describe("a step's first event (wake-up)", wake))
    print("      " + describe("a step's first to last event (spread)", spread))
    verdict = "meets" if pct(lateness, 99) <= 5.0 else "MISSES"
    print(f"      p99 {pct(lateness, 99):.2f} ms {verdict} the 5 ms goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--tokens", type=int, default=200, help="tokens per stream")
    parser.add_argument(
        "--client", choices=["engine", "httpx"], default="engine", help="what reads the streams"
    )
    parser.add_argument(
        "--no-own-cpu",
        action="store_true",
        help="leave the endpoint and the client where the OS puts them at every stream "
        "count (splitdesk/cpus.py says why the app places them from 128 streams on)",
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, {load()}")
    for n in args.streams:
        own_cpu = n >= MANY_STREAMS and not args.no_own_cpu
        asyncio.run(run(n, args.tokens, args.client, own_cpu))
        if own_cpu:  # this thread keeps every CPU for the next stream count
            rejoin([threading.get_native_id()])


if __name__ == "__main__":
    main()
