"""Every splitdesk process's C heap: at most :data:`ARENAS` glibc malloc arenas.

Set by :func:`splitdesk.cli.main.main` (the window, ``bench``, ``sweep``, the built-in endpoint,
the bundle's engine child) and by ``python -m splitdesk.core.measure.engine_worker``.

glibc gives each thread that allocates its own malloc arena, up to eight per core. The
window's threads come and go (the engine's reader, ``asyncio.to_thread`` workers for
auto-save and file reads, the server lane's poller); each one leaves a few MB of freed
memory in its arena that the process keeps. Over twenty runs that was RSS growing by about
2 MB per run with the memory in use flat (``benchmarks/soak.py``). Two arenas (the GUI
thread's and one shared by the rest) end that; the other threads allocate little, so
sharing an arena's lock costs nothing measurable.

The call does nothing where the C library is not glibc (macOS, Windows, musl).
"""

from __future__ import annotations

import ctypes
import sys

#: glibc's ``M_ARENA_MAX`` option of ``mallopt``.
M_ARENA_MAX = -8
#: Arenas the process may have: the GUI thread's and one for every other thread.
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap the process's glibc malloc arenas at ``arenas`` (call it early, before threads
    start: a thread that already has an arena keeps it). True when applied; False where the
    C library is not glibc or refused the option."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The symbols the process already has loaded, libc's among them. Not
        # ctypes.util.find_library("c"): it runs ldconfig in a child process, 8 ms on every
        # start and a process the app's tests then see come and go.
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))
