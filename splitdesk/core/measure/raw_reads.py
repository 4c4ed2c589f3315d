"""A response's raw reads through the engine process's pipe: the runner's optional capture
(:attr:`~splitdesk.core.measure.runner.Runner.raw`, request index → ``(arrival ns,
bytes)`` per read, ``time.perf_counter_ns``) as JSON-safe base64 and back, for the stream
inspector (:mod:`splitdesk.core.analyse.stream_inspector`)."""

from __future__ import annotations

import base64


def encode_raw(raw: dict[int, list[tuple[int, bytes]]]) -> dict[int, list[tuple[int, str]]]:
    """``Runner.raw`` for a JSON line (the engine process's pipe): bytes as base64."""
    return {
        i: [(t, base64.b64encode(b).decode("ascii")) for t, b in reads] for i, reads in raw.items()
    }


def decode_raw(raw: dict[int, list[tuple[int, str]]]) -> dict[int, list[tuple[int, bytes]]]:
    """The inverse of :func:`encode_raw`. Raises ``ValueError`` for bad base64."""
    return {
        i: [(t, base64.b64decode(s, validate=True)) for t, s in reads] for i, reads in raw.items()
    }
