"""The seed article's measurement next to ``splitdesk bench``, on one built-in endpoint.

The seed's script (shared/seed) times non-streaming completions with plain asyncio: the
combined prompt as one request, then the questions as parallel requests, and prints
combined latency, parallel latency (the slowest of them) and their ratio. This script
does exactly that with httpx, then runs ``splitdesk bench`` (streaming, makespans) on the
same endpoint with the same questions, template and token cap, and compares the two
speed-ups. Goal: they agree within ±3 %.

    .venv/bin/python benchmarks/seed_compare.py [--profile batching] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import statistics
import time

import httpx

from splitdesk.cli.main import main as splitdesk_main
from splitdesk.core.run.questions import DEFAULT_SET, builtin_sets
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.sim.launcher import start_sim

MAX_TOKENS = 512


async def seed_method(base: str, questions: list[str]) -> tuple[float, float]:
    """The seed's ``benchmark()``: (combined latency, parallel latency) in seconds."""

    async def ask_single(client: httpx.AsyncClient, prompt: str, max_tokens: int) -> float:
        start = time.perf_counter()
        response = await client.post(
            f"{base}/completions",
            json={"model": "splitdesk-sim", "prompt": prompt, "max_tokens": max_tokens},
        )
        response.json()  # ignore content, just wait for response
        return time.perf_counter() - start

    async with httpx.AsyncClient(timeout=120) as client:
        combined_prompt = CombinedTemplate().render(questions)
        t_combined = await ask_single(client, combined_prompt, MAX_TOKENS * len(questions))
        t_parallel = max(
            await asyncio.gather(*(ask_single(client, q, MAX_TOKENS) for q in questions))
        )
    return t_combined, t_parallel


def splitdesk_bench(base: str, questions: list[str]) -> dict:  # type: ignore[type-arg]
    args = ["bench", "--endpoint", base, "--api", "openai-completions", "--model", "splitdesk-sim"]
    args += ["--mode", "all", "--max-tokens", str(MAX_TOKENS), "--json", "-"]
    for q in questions:
        args += ["-q", q]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = splitdesk_main(args)
    if code != 0:
        raise SystemExit(f"splitdesk bench exited with {code}")
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="batching")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    questions = builtin_sets()[DEFAULT_SET].texts
    sim = start_sim(args.profile, {})
    try:
        seed, ours = [], []
        for k in range(args.repeat):
            tc, tp = asyncio.run(seed_method(sim.openai_base_url, questions))
            doc = splitdesk_bench(sim.openai_base_url, questions)
            s = doc["summary"]
            seed.append(tc / tp)
            ours.append(s["speedup"])
            print(
                f"repeat {k + 1}: seed method combined {tc:.2f} s, parallel {tp:.2f} s, speed-up {tc / tp:.2f}× | "
                f"splitdesk bench combined {s['combined_wall_s']:.2f} s, parallel {s['parallel_wall_s']:.2f} s, "
                f"speed-up {s['speedup']:.2f}×"
            )
    finally:
        sim.stop()
    a, b = statistics.median(seed), statistics.median(ours)
    diff = (b - a) / a * 100
    verdict = "agree" if abs(diff) <= 3 else "DISAGREE"
    print(
        f"median speed-up: seed method {a:.3f}×, splitdesk bench {b:.3f}× — differ by {diff:+.1f} %: {verdict} within ±3 %"
    )


if __name__ == "__main__":
    main()
