"""How many concurrent streams the built-in endpoint keeps on schedule.

For 16, 64 and 256 concurrent streams on the ``batching`` profile (max_num_seqs raised to
the stream count so every stream decodes), a client process reads every stream to the end;
the server's emission log gives, per token event, its lateness: the time the bytes were
handed to the socket minus the step end the cost model scheduled. Prints p50/p99 lateness
and the events per second sustained. Goal on a 2-core machine: 256 streams, p99 ≤ 5 ms.

    .venv/bin/python benchmarks/sim_capacity.py [--streams 16 64 256] [--tokens 200]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx

from common import describe, emission_logs, pct
from splitdesk.sim.launcher import start_sim


async def run(n: int, tokens: int) -> None:
    sim = await asyncio.to_thread(
        start_sim,
        "batching",
        {"max_num_seqs": max(64, n), "answer_tokens": tokens, "answer_spread": 0},
    )
    try:
        limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
        async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), limits=limits) as client:
            ids: list[str] = []

            async def stream(i: int) -> None:
                body = {
                    "model": "splitdesk-sim",
                    "messages": [
                        {"role": "user", "content": f"Question number {i} about capacity?"}
                    ],
                    "stream": True,
                }
                async with client.stream(
                    "POST", f"{sim.openai_base_url}/chat/completions", json=body
                ) as r:
                    ids.append(r.headers["x-request-id"])
                    async for _ in r.aiter_raw():
                        pass

            t0 = time.perf_counter()
            await asyncio.gather(*(stream(i) for i in range(n)))
            wall = time.perf_counter() - t0
            logs = await emission_logs(client, sim.url, ids)
    finally:
        await asyncio.to_thread(sim.stop)
    lateness = [(e["emitted_ns"] - e["scheduled_ns"]) / 1e6 for log in logs for e in log["events"]]
    emitted = [e["emitted_ns"] for log in logs for e in log["events"]]
    span = (max(emitted) - min(emitted)) / 1e9
    events = len(emitted)
    print(
        f"{n:4d} streams: {events} events in {span:.2f} s = {events / span:,.0f} events/s (wall {wall:.2f} s)"
    )
    print("      " + describe("lateness vs schedule", lateness))
    verdict = "meets" if pct(lateness, 99) <= 5.0 else "MISSES"
    print(f"      p99 {pct(lateness, 99):.2f} ms {verdict} the 5 ms goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--tokens", type=int, default=200, help="tokens per stream")
    args = parser.parse_args()
    for n in args.streams:
        asyncio.run(run(n, args.tokens))


if __name__ == "__main__":
    main()
