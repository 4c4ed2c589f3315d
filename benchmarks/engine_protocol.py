"""Cost of one engine pipe line (core/engine_protocol.py), per event, each way.

The engine process writes one line per run event and the window's reader thread decodes
it; at 64 streams of ~57 tok/s that is ~3,600 lines a second. Prints microseconds per
line to encode (engine side: the model's ``encode`` and ``encode_event``, which the engine
uses, formatting a text event directly) and to decode and validate (window side), for a
text event and for a request's end with its error, next to plain ``json`` with the
events' own ``event_to_json``/``event_from_json`` as a reference. Goal: decoding stays under 20 µs a
line (≤ 7 % of one core at 3,600 lines/s).

    .venv/bin/python benchmarks/engine_protocol.py
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from splitdesk.core.measure.engine_protocol import EventLine, decode_line, encode, encode_event
from splitdesk.core.run.events import (
    RequestEnded,
    RunEvent,
    TextReceived,
    event_from_json,
    event_to_json,
)
from splitdesk.providers.base import ErrorKind, RequestError

N = 20_000


def per_call_us(fn: Callable[[], object]) -> float:
    """Best of 3 rounds of N calls, microseconds per call."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        best = min(best, time.perf_counter() - t0)
    return best / N * 1e6


def main() -> None:
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    events: list[tuple[str, RunEvent]] = [
        ("text", TextReceived(1.234567891, 3, " scatters", False)),
        (
            "request_ended",
            RequestEnded(
                2.5, 3, "failed", None, RequestError(ErrorKind.HTTP, "HTTP 429", 429, 2.0)
            ),
        ),
    ]
    print(
        f"{'event':14} {'encode':>8} {'enc_event':>9} {'decode':>8}   {'json enc':>8}"
        f" {'json dec':>8}  (µs/line)"
    )
    for name, event in events:
        line = encode(EventLine(run=1, event=event))
        plain = encoder({"run": 1, "event": event_to_json(event)})
        enc = per_call_us(lambda e=event: encode(EventLine(run=1, event=e)))
        fast = per_call_us(lambda e=event: encode_event(1, e))
        dec = per_call_us(lambda b=line: decode_line(b))
        jenc = per_call_us(lambda e=event: encoder({"run": 1, "event": event_to_json(e)}))
        jdec = per_call_us(lambda p=plain: event_from_json(json.loads(p)["event"]))
        print(f"{name:14} {enc:8.2f} {fast:9.2f} {dec:8.2f}   {jenc:8.2f} {jdec:8.2f}")
    print("(timings on a shared machine: other processes load the cores; compare columns)")


if __name__ == "__main__":
    main()
