"""What splitdesk's own processes cost the machine they measure: the observer effect.

Most people who explore an endpoint with splitdesk run the model on the same machine
(llama.cpp, Ollama, LM Studio on a CPU or a small GPU): every CPU cycle the window and the
engine take is taken from the server being measured, once the machine's CPUs are busy.
So a run knows, during and after it, the CPU of each of splitdesk's processes and how busy
the machine was, and says so when it matters (:func:`observer_effect`).

The figures, defined here once (the window's summary, its live pacing and ``splitdesk
bench --json`` read them):

* a process's **CPU seconds**: user + system time (``/proc/PID/stat`` fields 14 and 15,
  proc(5); for this process ``os.times()``, on every system);
* its **share of a core** over an interval: CPU seconds ÷ wall seconds (1.0 = one core
  busy all the time; a process may use more than one core);
* the **machine's busy fraction**: the share of all CPUs' time not idle over the interval
  (``/proc/stat``'s first line: user, nice, system, irq, softirq and steal over the same
  plus idle and iowait, proc(5)); ``None`` where there is no ``/proc/stat``.

Every reading is a few small file reads (~20 µs): cheap enough to take once a second
while a run streams. Where ``/proc`` is missing (not Linux), other processes' figures are
``None`` and said as unknown, never as zero.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The machine counts as busy when its CPUs were at least this busy over the run: below,
#: there was idle CPU time left for the server, and splitdesk's share took nothing from it.
BUSY_MACHINE = 0.85

#: The processes of a window's run, as named in the figures and the bench JSON.
PROCESS_NAMES = ("window", "engine", "endpoint")

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds process ``pid`` has used so far (``None``: this process,
    from ``os.times()``). ``None`` when it cannot be read (no ``/proc``, the process is
    gone)."""
    if pid is None or pid == os.getpid():
        t = os.times()
        return t.user + t.system
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name may hold spaces
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


def machine_cpu_s() -> tuple[float, float] | None:
    """All CPUs' (busy, total) seconds so far (``/proc/stat``), or ``None`` without it."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    try:
        # user nice system idle iowait irq softirq steal (guest time is inside user)
        v = [int(x) for x in first[1:9]] + [0] * max(0, 9 - len(first))
    except ValueError:
        return None
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy / _TICK, (busy + v[3] + v[4]) / _TICK


@dataclass(frozen=True)
class CpuReading:
    """One instant: the monotonic clock (s), each named process's CPU seconds so far
    (``None``: unknown), and the machine's (busy, total) CPU seconds so far."""

    wall_s: float
    processes: Mapping[str, float | None]
    machine: tuple[float, float] | None

    @classmethod
    def now(cls, pids: Mapping[str, int | None]) -> CpuReading:
        """Read the processes ``pids`` names (``None``: this process) and the machine."""
        return cls(
            time.monotonic(),
            {name: process_cpu_s(pid) for name, pid in pids.items()},
            machine_cpu_s(),
        )


@dataclass(frozen=True)
class ProcessCpu:
    """One process over an interval: ``cpu_s`` CPU seconds, ``share`` of one core."""

    cpu_s: float
    share: float


@dataclass(frozen=True)
class ClientCpu:
    """splitdesk's processes over one interval (a run): ``wall_s`` seconds; per process
    (``window``, ``engine``, ``endpoint``: the built-in one) its :class:`ProcessCpu`, or
    ``None`` when it could not be read; ``cpus`` the machine's CPU count; ``machine_busy``
    the fraction of all CPUs' time that was busy (0–1; everyone's, splitdesk's included),
    ``None`` when unknown."""

    wall_s: float
    processes: Mapping[str, ProcessCpu | None]
    cpus: int
    machine_busy: float | None

    @classmethod
    def between(cls, start: CpuReading, end: CpuReading, cpus: int | None = None) -> ClientCpu:
        """The figures from ``start`` to ``end`` (the same processes read at both; a
        process read at one end only is unknown)."""
        wall = max(end.wall_s - start.wall_s, 1e-9)
        out: dict[str, ProcessCpu | None] = {}
        for name, after in end.processes.items():
            before = start.processes.get(name)
            if after is None or before is None or after < before:
                out[name] = None  # unknown, or another process under the same name
            else:
                out[name] = ProcessCpu(after - before, (after - before) / wall)
        busy = None
        if start.machine is not None and end.machine is not None:
            total = end.machine[1] - start.machine[1]
            if total > 0:
                busy = min(1.0, max(0.0, (end.machine[0] - start.machine[0]) / total))
        return cls(wall, out, cpus or os.cpu_count() or 1, busy)

    @property
    def client_share(self) -> float | None:
        """splitdesk's own share of a core as a client: the window's and the engine's
        (the built-in endpoint is the server measured, not the client); ``None`` when
        neither is known."""
        known = [p.share for n, p in self.processes.items() if n != "endpoint" and p is not None]
        return sum(known) if known else None

    def to_json(self) -> dict[str, Any]:
        """The bench JSON's ``client_cpu``: ``wall_s``, ``cpus``, ``machine_busy`` and per
        process ``{"cpu_s", "share"}`` (``null``: not measured or unknown)."""
        return {
            "wall_s": round(self.wall_s, 3),
            "cpus": self.cpus,
            "machine_busy": None if self.machine_busy is None else round(self.machine_busy, 3),
            "processes": {
                name: None
                if p is None
                else {"cpu_s": round(p.cpu_s, 3), "share": round(p.share, 4)}
                for name, p in self.processes.items()
            },
        }


@dataclass(frozen=True)
class ObserverEffect:
    """splitdesk's own CPU on a busy machine beside a local server: ``client_share`` (the
    window's and the engine's share of one core), ``window_share`` (``None`` headless),
    ``endpoint_share`` (the built-in endpoint's, when it is the server), ``machine_busy``
    (0–1) and ``cpus``."""

    client_share: float
    window_share: float | None
    endpoint_share: float | None
    machine_busy: float
    cpus: int


def observer_effect(cpu: ClientCpu | None, local_endpoint: bool) -> ObserverEffect | None:
    """Whether splitdesk's own CPU may have slowed what it measured, and the figures that
    say so: only when the endpoint runs on this machine (``local_endpoint``: loopback, or
    the built-in endpoint) and the machine's CPUs were at least :data:`BUSY_MACHINE` busy
    over the run (with idle CPU left, splitdesk's share took nothing from the server).
    ``None`` otherwise, or when the figures are unknown."""
    if cpu is None or not local_endpoint or cpu.machine_busy is None:
        return None
    client = cpu.client_share
    if client is None or cpu.machine_busy < BUSY_MACHINE:
        return None
    window = cpu.processes.get("window")
    endpoint = cpu.processes.get("endpoint")
    return ObserverEffect(
        client,
        window.share if window is not None else None,
        endpoint.share if endpoint is not None else None,
        cpu.machine_busy,
        cpu.cpus,
    )


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost``, 127.0.0.0/8 or ``::1``
    (RFC 6761 §6.3, RFC 1122 §3.2.1.3, RFC 4291 §2.5.3)."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return False
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or host == "::1"
        or (host.startswith("127.") and host.replace(".", "").isdigit())
    )
