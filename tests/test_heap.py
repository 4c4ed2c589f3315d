"""The window process keeps at most two glibc malloc arenas (:mod:`splitdesk.heap`): threads
that come and go no longer each leave an arena of freed memory behind. Checked in a fresh
process, whose arenas are counted from glibc's own report (``malloc_info``)."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

#: Starts six threads that allocate at the same time, then prints how many arenas glibc has.
PROBE = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile, threading
    from splitdesk.heap import limit_malloc_arenas
    applied = limit_malloc_arenas() if sys.argv[1] == "limit" else None
    together = threading.Barrier(6)
    def work():
        together.wait()
        kept = [bytearray(4096) for _ in range(200)]  # malloc'd, not Python's small blocks
        together.wait()
    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads: t.start()
    for t in threads: t.join()
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    path = tempfile.mktemp()
    f = libc.fopen(path.encode(), b"w"); libc.malloc_info(0, f); libc.fclose(f)
    with open(path) as report:
        arenas = report.read().count("<heap nr=")
    os.unlink(path)
    print(applied, arenas)
    """
)


def arenas_after_six_threads(mode: str) -> tuple[str, int]:
    """Whether the limit applied ("None" when not asked) and the arenas glibc reports."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    applied, arenas = out.stdout.split()
    return applied, int(arenas)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas are glibc's")
def test_six_threads_share_two_arenas_once_limited() -> None:
    applied, arenas = arenas_after_six_threads("limit")
    assert applied == "True"
    assert arenas <= 2, f"{arenas} malloc arenas with the limit of 2 applied"
    # without it, the same threads each take an arena of their own (what the limit ends)
    _, unlimited = arenas_after_six_threads("none")
    assert unlimited > 2, f"{unlimited} arenas without the limit: the probe does not probe"
