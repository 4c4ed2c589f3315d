"""Five questions about one document on the built-in endpoint: what a shared context costs
each way, with the prefix cache off and on, on a batching and a compute-bound server.

For context lengths 0 / 2k / 8k tokens (``--contexts``) × prefix cache off / on × profile
``batching`` / ``compute-bound``, runs ``splitdesk bench --mode one-after-another`` (the
bench's own engine: combined, then parallel, each on an idle endpoint, a nonce per side)
with the shipped document cut to that length, and prints per side the makespan, the
median TTFT, the prompt and cached tokens (the server's usage), and each figure beside the
cost model's prediction. Goal: every measured makespan within 5 % of its prediction.

    .venv/bin/python benchmarks/shared_context.py [--speed 4] [--contexts 0,2000,8000]

Quote the figures with the load average (printed at the end).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
from typing import Any

from splitdesk.core.bench.compare import run_bench
from splitdesk.core.bench.context_sweep import context_of_length, shipped_document
from splitdesk.core.bench.options import BenchOptions
from splitdesk.core.run.questions import builtin_sets
from splitdesk.sim.launcher import start_sim

GOAL = 0.05


def measure(profile: str, cache: bool, context: str, speed: float) -> dict[str, Any]:
    """The bench JSON document of one configuration."""
    opts = BenchOptions(
        questions=builtin_sets()["document-five"].texts,
        profile=profile,
        sim_params={"speed": speed, "prefix_cache": cache},
        mode="one-after-another",
        context=context,
        json_path="-",
    )
    out, err = io.StringIO(), io.StringIO()
    code = run_bench(opts, out, err, launch=start_sim)
    if code != 0:
        raise SystemExit(f"bench failed ({code}): {err.getvalue()[-500:]}")
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def side(doc: dict[str, Any], mode: str) -> dict[str, Any]:
    run = next(r for r in doc["runs"] if r["mode"] == mode)
    reqs = run["requests"]
    ttft = statistics.median(r["ttft_s"] for r in reqs)
    ttft_pred = statistics.median(r["predicted"]["ttft_s"] for r in reqs)
    p = run["prompt"] or {}
    return {
        "wall": run["wall_s"],
        "wall_pred": run["predicted_wall_s"],
        "ttft": ttft,
        "ttft_pred": ttft_pred,
        "prompt": p.get("prompt_tokens"),
        "cached": p.get("cached_prompt_tokens") or 0,
        "cached_pred": sum(r["predicted"]["cached_prompt_tokens"] or 0 for r in reqs),
        "slip": run.get("endpoint_slip_s"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--speed", type=float, default=4.0, help="built-in endpoint speed (4)")
    ap.add_argument("--contexts", default="0,2000,8000", help="context lengths in tokens")
    args = ap.parse_args(argv)
    lengths = [int(x) for x in args.contexts.split(",")]
    base = shipped_document()
    print(
        f"{'profile':<14}{'ctx':>6} {'cache':<5} {'side':<9}{'makespan':>9}{'pred':>8}{'err':>7}"
        f"{'TTFT':>8}{'pred':>8}{'prompt':>8}{'cached':>8}{'pred':>8}  speed-up (pred)"
    )
    worst = 0.0
    for profile in ("batching", "compute-bound"):
        for n in lengths:
            context = context_of_length(base, n)
            for cache in (False, True):
                doc = measure(profile, cache, context, args.speed)
                s = doc["summary"]
                for mode in ("combined", "parallel"):
                    f = side(doc, mode)
                    err = (f["wall"] - f["wall_pred"]) / f["wall_pred"]
                    worst = max(worst, abs(err))
                    tail = (
                        f"  {s['speedup']:.2f}× ({s['predicted_speedup']:.2f}×) "
                        f"{s['diagnosis']['code']}"
                        if mode == "parallel"
                        else ""
                    )
                    slip = f"  slip {f['slip'] * 1000:.0f} ms" if f["slip"] else ""
                    print(
                        f"{profile:<14}{n:>6} {'on' if cache else 'off':<5} {mode:<9}"
                        f"{f['wall']:>8.3f}s{f['wall_pred']:>7.3f}s{err:>+7.1%}"
                        f"{f['ttft']:>7.3f}s{f['ttft_pred']:>7.3f}s"
                        f"{f['prompt']:>8}{f['cached']:>8}{f['cached_pred']:>8}{tail}{slip}"
                    )
                sys.stdout.flush()
    load = os.getloadavg()
    verdict = "met" if worst <= GOAL else "NOT met"
    print(
        f"worst makespan error {worst:.1%} (goal within {GOAL:.0%}: {verdict}); "
        f"speed {args.speed:g}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
