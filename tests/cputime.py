"""Time a process tree waited for a CPU, for tests whose bound is on the app's own time.

The test machine has 2 cores shared by several people: a wall-clock bound (a stop that
shows within 0.2 s, an exit within 2 s) is also hit when other processes held both cores.
Such tests subtract the time the app's threads were ready to run but waited for a CPU, read
from Linux ``/proc/<pid>/task/<tid>/schedstat`` (``cpu_ns run_delay_ns timeslices``, see the
kernel's Documentation/scheduler/sched-stats.rst). Time the app spends blocked or busy in
its own code still counts: a blocked or busy thread is not waiting on the run queue.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (``/proc/<pid>/task/*/children``; empty once it ended)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            out.extend(
                int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()
            )
        except (OSError, ValueError):
            continue
    return out


def _delays(pid: int) -> dict[tuple[int, int], int]:
    """``{(pid, tid): run_delay_ns}`` for every thread of ``pid``."""
    out: dict[tuple[int, int], int] = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # the process ended
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as f:
                out[(pid, int(task))] = int(f.read().split()[1])
        except (OSError, IndexError, ValueError):  # a thread that just ended
            continue
    return out


def tree_delays(pids: list[int], descendants: bool = True) -> dict[tuple[int, int], int]:
    """Run-queue wait (ns) of every thread of ``pids`` and, with ``descendants``, of all
    their descendants (the app's engine and endpoint processes)."""
    todo, seen, out = list(pids), set(), {}
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        out.update(_delays(p))
        if descendants:
            todo.extend(_children(p))
    return out


def waited_between(before: dict[tuple[int, int], int], after: dict[tuple[int, int], int]) -> float:
    """Seconds of run-queue wait between two :func:`tree_delays` reads, thread by thread: a
    thread that ended between them drops out (its wait since ``before`` is not known: the
    figure errs towards less), one that started counts from zero. (A difference of two
    sums would go negative when a thread that had waited ended in between.)"""
    return sum(v - before.get(k, 0) for k, v in after.items()) / 1e9


def run_queue_wait_s() -> float:
    """Seconds the threads of this process have spent ready to run but waiting for a CPU,
    since each started. All threads count: while a thread holding the GIL waits for a CPU,
    the GUI thread waits for it."""
    return sum(_delays(os.getpid()).values()) / 1e9


class RunQueueMeter:
    """Seconds the threads of processes ``pids`` (default: this process) and, with
    ``descendants``, of their descendants spent waiting for a CPU between ``__enter__`` and
    the last sample, as a context manager. Name only the processes on the path being timed:
    a busy process beside it (the endpoint streaming) also waits, but delays nothing.

    A thread samples the tree every ``every_s`` seconds, so processes and threads that end
    meanwhile still count (up to their last sample: the meter errs towards less, i.e. a
    stricter test). Threads first seen after the start count from zero.
    """

    def __init__(self, *pids: int, descendants: bool = False, every_s: float = 0.02) -> None:
        self.pids = list(pids) or [os.getpid()]
        self.descendants = descendants
        self.every_s = every_s
        self._start: dict[tuple[int, int], int] = {}
        self._last: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="run-queue-meter", daemon=True)

    def sample(self) -> None:
        """Read the tree now."""
        now = tree_delays(self.pids, self.descendants)
        with self._lock:
            self._last.update(now)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    @property
    def waited_s(self) -> float:
        """Seconds of run-queue wait since the start, summed over the tree's threads."""
        with self._lock:
            return sum(v - self._start.get(k, 0) for k, v in self._last.items()) / 1e9

    def __enter__(self) -> RunQueueMeter:
        self._start = tree_delays(self.pids, self.descendants)
        self._last = dict(self._start)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
