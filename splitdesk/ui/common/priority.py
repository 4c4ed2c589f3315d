"""Who gets the CPU when it is short: the measurement before the window's painting.

Many users run the model server on the same machine. When the CPU is short, the measuring
engine process and the built-in endpoint must win it over the window's painting (issue 13).
An unprivileged process can lower its priority (raise its nice value) but never raise it
again, and a child inherits the nice value of the thread that forks it. So:

* the children — the engine process and the built-in endpoint — are always spawned from
  :class:`Spawner` threads, made when the controller is built, before anything is lowered;
* then :func:`lower_gui_priority` raises the nice value of the *GUI thread only* (on Linux
  nice values are per thread: ``setpriority(PRIO_PROCESS, tid, …)``). Threads the GUI
  thread makes afterwards (Qt's, asyncio's worker threads) inherit it; the spawner
  threads, the engine's reader threads they start, and every child keep theirs.

Lowering the whole window process after spawning its children would also work once, but
a child started later (the built-in endpoint restarted at another speed, the engine after
a crash) would then inherit the lowered priority and lose to the user's own server. On
other systems a nice value belongs to the whole process, so nothing is changed there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

#: How much the GUI thread's nice value is raised: at +5 a busy GUI thread gets about a
#: third of the CPU a nice-0 process (the server, the engine) gets when they compete
#: (Linux CFS weights 335 vs 1024); with a free core nothing changes. +10 (110 vs 1024)
#: starved the window's own shutdown and its frames on a loaded 2-core machine.
GUI_NICE = 5
#: Spawner threads: the engine and the built-in endpoint may start at the same time.
SPAWNERS = 2


class Spawner(ThreadPoolExecutor):
    """A thread pool whose threads exist from construction on (so they keep the priority
    the process had then); submit child-process starts to it. ``shutdown`` as usual."""

    def __init__(self) -> None:
        super().__init__(max_workers=SPAWNERS, thread_name_prefix="splitdesk-spawn")
        barrier = threading.Barrier(SPAWNERS + 1)
        for _ in range(SPAWNERS):  # each blocks until all are up: SPAWNERS threads made
            self.submit(barrier.wait, 10.0)
        barrier.wait(10.0)


def lower_gui_priority(increment: int = GUI_NICE) -> int | None:
    """Raise the calling (GUI) thread's nice value by ``increment``; returns the new value,
    or None where nice values are per process (not Linux) or the call is refused (the
    window then runs at normal priority, which is logged)."""
    if not sys.platform.startswith("linux") or increment <= 0:
        return None
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + increment))
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError as exc:
        log.info("the window's priority was not lowered: %s", exc)
        return None


def thread_nice(tid: int) -> int | None:
    """The nice value of thread ``tid`` of this process, or of process ``tid`` (Linux
    ``/proc``); None when neither exists."""
    for path in (f"/proc/{os.getpid()}/task/{tid}/stat", f"/proc/{tid}/stat"):
        with (
            contextlib.suppress(OSError, IndexError, ValueError),
            open(path, encoding="ascii") as f,
        ):
            return int(f.read().rsplit(")", 1)[1].split()[16])
    return None
