"""The built-in endpoint on a CPU of its own, its client off it (Linux).

The built-in endpoint stands for a server on another machine, but it runs on this one,
beside the client that measures it. When one of its steps ends it writes every stream's
event back to back (256 socket writes at 256 streams, ~1.2 ms). Measured with
``benchmarks/sim_capacity.py`` at 256 streams on a 2-CPU machine (``perf sched``): the
kernel woke the client on the *endpoint's* CPU, though the other CPU was idle (a socket
wake-up is a "sync" one: the waker is expected to sleep next, so the wakee is put beside
it), and the endpoint, still writing, waited a whole scheduler tick (4 ms) for the client
to yield: about one step in ten held up, lateness p99 5.0–5.3 ms. With the endpoint's
event loop on one CPU and the client kept to the others the wake-up lands elsewhere: p99
2.0–2.2 ms.

A pinned thread cannot move away from a busy neighbour, though: with another process
burning a CPU, at 64 streams pinned was the worse (p99 3.5 against 2.3–2.8 ms), at 256 the
better (3.6–4.1 against 5.2 ms); on an idle machine 64 streams gain nothing (1.2 ms either
way), because a step's writes end before the client's burst of reading outlasts a tick.
So only a run of :data:`MANY_STREAMS` or more concurrent requests on the built-in endpoint
is placed: its event-loop thread gets the last CPU this process may use and the client's
thread the others (the window's engine process; ``bench``'s own thread). Smaller runs, and
every run on another endpoint (a real server, placed by the operating system as it would
be without splitdesk), leave both free again (:func:`rejoin`). Affinity is per thread on Linux
(``sched_setaffinity(2)``: a pid names the process's main thread; threads made later
inherit it). Elsewhere, or with one CPU, nothing is done.

This module imports nothing of splitdesk: the window's controller, the CLI and the
benchmarks all use it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

log = logging.getLogger(__name__)

#: From this many requests streaming at once, the built-in endpoint and its client are
#: placed on separate CPUs (measured above; ``benchmarks/sim_capacity.py``).
MANY_STREAMS = 128

_allowed: frozenset[int] | None = None


def allowed_cpus() -> frozenset[int]:
    """The CPUs this process may run on, as first read (a client thread pinned later still
    gets them all back from :func:`rejoin`); empty where affinity cannot be set."""
    global _allowed
    if _allowed is None:
        get = getattr(os, "sched_getaffinity", None)
        try:
            _allowed = frozenset(get(0)) if get is not None else frozenset()
        except OSError as exc:  # a sandbox that refuses the call: place nothing
            log.info("the CPUs this process may use are unknown: %s", exc)
            _allowed = frozenset()
    return _allowed


def separate(endpoint_tid: int, client_tids: Iterable[int]) -> int | None:
    """Pin thread ``endpoint_tid`` (the built-in endpoint's event loop: its process id) to
    the highest CPU of :func:`allowed_cpus` and each of ``client_tids`` (thread ids; a
    process id names its main thread) to the other CPUs. Returns the endpoint's CPU, or
    None when nothing was done (fewer than two CPUs, no affinity on this system, a thread
    gone or the change refused, which is logged). Never raises."""
    cpus = allowed_cpus()
    if len(cpus) < 2:
        return None
    cpu = max(cpus)
    try:
        os.sched_setaffinity(endpoint_tid, {cpu})
        for tid in client_tids:
            os.sched_setaffinity(tid, cpus - {cpu})
    except OSError as exc:
        log.info("the built-in endpoint and its client were not given separate CPUs: %s", exc)
        return None
    return cpu


def rejoin(tids: Iterable[int]) -> None:
    """Let each thread of ``tids`` run on every CPU of :func:`allowed_cpus` again (a client
    that measured the built-in endpoint, now measuring a real server). Never raises."""
    cpus = allowed_cpus()
    if len(cpus) < 2:
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError as exc:
            log.info("thread %d keeps its CPUs: %s", tid, exc)
