"""What the end-of-run diagnosis costs on the GUI thread (it runs once, when a run ends).

Builds a finished side-by-side run of N parallel streams with T tokens each (plus the
combined reply of N×T tokens) from the same events a live run emits, then times
``diagnose_state``. Goal: under 0.25 s for 64 streams × 1000 tokens on a loaded 2-core
machine (the window freezes that long once, at the end of a run).

    .venv/bin/python benchmarks/diagnosis_cost.py [--streams 64] [--tokens 1000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.run.events import (
    HeadersReceived,
    RequestEnded,
    RequestPlanned,
    RequestSent,
    RunEnded,
    RunStarted,
    TextReceived,
)
from splitdesk.core.run.run_state import RunState


def finished_run(streams: int, tokens: int, step: float = 0.02) -> RunState:
    """A side-by-side run: every stream starts at once, one token per ``step`` seconds."""
    state = RunState()
    questions = tuple(f"q{i}" for i in range(streams))
    state.apply(RunStarted(0.0, "side-by-side", questions, {"url": "bench"}, 0))
    state.apply(RequestPlanned(0.0, 0, "combined", tuple(range(streams)), "all"))
    for i in range(streams):
        state.apply(RequestPlanned(0.0, i + 1, "parallel", (i,), questions[i]))
    lengths = [streams * tokens] + [tokens] * streams
    for req, n in enumerate(lengths):
        state.apply(RequestSent(0.0, req))
        state.apply(HeadersReceived(0.002, req, 200))
        for j in range(n):
            state.apply(TextReceived(0.01 + j * step, req, "tok "))
        state.apply(RequestEnded(0.01 + n * step, req, "done", "stop"))
    state.apply(RunEnded(0.02 + max(lengths) * step))
    return state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    state = finished_run(args.streams, args.tokens)
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        d = diagnose_state(state)
        times.append(time.perf_counter() - t)
    events = args.streams * args.tokens * 2
    print(
        f"diagnose_state: {args.streams} streams x {args.tokens} tokens ({events} events): "
        f"median {statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms "
        f"over {args.repeat} runs -> {d.code}"
    )


if __name__ == "__main__":
    main()
