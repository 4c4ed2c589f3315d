"""How large a headless session (``splitdesk bench``, ``splitdesk sweep``) will be, worked
out before anything is sent, so one that cannot fit in memory or would run for days is
refused up front with the estimate (``bench --repeat 1000000000`` grew to 23.8 GB until the
kernel killed it).

Memory: every token event is kept until the end (the run's state, then the JSON
document, which holds each request's text and event times): at most ``max_tokens`` events
per answer, :data:`BYTES_PER_EVENT` bytes each (measured: ~200 B in a run's state with 8
streams of 200 tokens, ``tracemalloc``; tripled for the document and its JSON text).
Time: on the built-in endpoint the caller passes how long one decode step takes there and
the expected answer length, so the estimate is the cost model's own order of magnitude
(parallel answers share steps; combined and sequential ones do not); on another endpoint
the time is not known before the first run and only memory is checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from splitdesk.core.bench.options import BenchOptions, modes_of
from splitdesk.core.run.limits import MAX_HOURS, MEMORY_SHARE

#: Bytes kept per token event until the session ends (module docstring).
BYTES_PER_EVENT = 600


@dataclass(frozen=True)
class SessionSize:
    """A session's estimated size: ``runs`` (mode × round), ``requests``, at most
    ``events`` token events, about ``bytes`` of memory, about ``seconds`` (``None`` when
    it cannot be known before running)."""

    runs: int
    requests: int
    events: int
    bytes: int
    seconds: float | None


def _per_round(mode: str, n: int) -> tuple[int, int, int]:
    """(requests, answers written, answers' length in decode steps) of one mode, one
    round: the combined request writes n answers in one stream, parallel ones share steps."""
    if mode == "combined":
        return 1, n, n
    if mode == "parallel":
        return n, n, 1
    return n, n, n  # sequential, chain: one after another


def session_size(
    opts: BenchOptions,
    rounds_per_mode: int | None = None,
    step_s: float | None = None,
    answer_tokens: int | None = None,
    questions: int | None = None,
) -> SessionSize:
    """The size of ``opts`` run as bench runs it (``rounds_per_mode``: override the
    rounds, e.g. a sweep's steps; ``questions``: its largest N). ``step_s``: seconds of
    one decode step and ``answer_tokens`` the expected answer length, on the built-in
    endpoint (both or neither)."""
    n = questions if questions is not None else len(opts.questions)
    rounds = rounds_per_mode if rounds_per_mode is not None else opts.repeat + opts.warmup
    cap = opts.max_tokens or 0
    runs = requests = events = 0
    steps = 0.0
    for mode in modes_of(opts.mode):
        reqs, answers, serial = _per_round(mode, n)
        runs += rounds
        requests += rounds * reqs
        events += rounds * answers * cap
        if answer_tokens is not None:
            steps += rounds * serial * min(cap or answer_tokens, answer_tokens)
    seconds = steps * step_s if step_s is not None and answer_tokens is not None else None
    return SessionSize(runs, requests, events, events * BYTES_PER_EVENT, seconds)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now (Linux ``MemAvailable``), else
    the machine's physical memory, else ``None``."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _amount(b: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB"):
        if b < 1000:
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1000
    return f"{b:.3g} ZB"


def _duration(s: float) -> str:
    if s < 3600:
        return f"{s / 60:.0f} min"
    if s < 86400 * 3:
        return f"{s / 3600:.1f} hours"
    days = s / 86400
    return f"{days:,.0f} days" if days < 3650 else f"{days / 365.25:,.3g} years"


def describe(size: SessionSize) -> str:
    """``3 runs, 11 requests, up to 7,680 token events (about 4.6 MB), about 2 min``."""
    took = f", about {_duration(size.seconds)}" if size.seconds is not None else ""
    return (
        f"{size.runs:,} runs, {size.requests:,} requests, up to {size.events:,} token events "
        f"(about {_amount(size.bytes)} kept in memory){took}"
    )


def size_problem(size: SessionSize, memory: int | None = None) -> str | None:
    """Why a session of ``size`` is refused (more than :data:`MEMORY_SHARE` of the
    ``memory`` available, default :func:`available_memory`, or over :data:`MAX_HOURS`),
    with the estimate; ``None`` when it fits."""
    memory = available_memory() if memory is None else memory
    if memory is not None and size.bytes > MEMORY_SHARE * memory:
        return (
            f"this session would be {describe(size)}: more than half the memory available "
            f"now ({_amount(memory)}); use fewer repeats, questions or --max-tokens"
        )
    if size.seconds is not None and size.seconds > MAX_HOURS * 3600:
        return (
            f"this session would be {describe(size)}: more than {MAX_HOURS:g} hours; use "
            "fewer repeats or questions"
        )
    return None
