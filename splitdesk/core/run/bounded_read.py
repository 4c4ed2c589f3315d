"""Reading a file a user named, with a bound: the one way every input file is read
(question sets and their shared contexts, ``--context``, scenarios, recordings, sweeps,
prices, settings).

A size check on ``stat()`` alone lets through what reports no size: ``/dev/zero``, a pipe
(``<(cmd)``), a FIFO, a character device. :func:`read_bounded` reads at most ``limit + 1``
bytes, whatever the file says it holds, and refuses more with one line that names the file
and the limit. A FIFO is opened without waiting for a writer (``O_NONBLOCK`` for the open
only) and refused when nothing is written to it within :data:`FIFO_WAIT_S` seconds,
instead of hanging the command or the window's loader.
Lives at the bottom of core's layers so every reader above it can use it.
"""

from __future__ import annotations

import errno
import os
import select
import stat
from pathlib import Path

__all__ = ["FileTooLargeError", "read_bounded", "read_bounded_text", "size_words"]


class FileTooLargeError(ValueError):
    """A file holds more than its kind may: ``str()`` is one line naming the file and the
    limit (``q.toml: 9.4 MB is too large for a question set (at most 8 MB)``)."""


def size_words(n: int) -> str:
    """``n`` bytes in words: ``8 MB`` (MiB, as the limits are set), ``64 kB`` or ``512 bytes``."""
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.3g} MB"
    if n >= 1024:
        return f"{n / 1024:.3g} kB"
    return f"{n} bytes"


#: How long a FIFO or pipe may stay silent before its first byte (or its close) (seconds).
FIFO_WAIT_S = 30.0


def _wait_for_writer(fd: int, path: Path) -> None:
    """Wait until the FIFO or pipe ``fd`` has a byte to read or its writer has closed it;
    raise ``TimeoutError`` after :data:`FIFO_WAIT_S` seconds of neither (Linux reports no
    hang-up on a FIFO that never had a writer: ``poll`` waits for one to come and write)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if not poller.poll(FIFO_WAIT_S * 1000):
        raise TimeoutError(
            errno.ETIMEDOUT,
            f"nothing was written to it in {FIFO_WAIT_S:g} s (a FIFO or pipe with no writer)",
            str(path),
        )


def read_bounded(
    path: Path, limit: int, what: str, name: str | None = None, why: str = ""
) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them.

    ``what`` names the kind of file in the refusal (``a question set``), ``name`` how the
    file is called in it (default ``str(path)``), ``why`` the reason for the limit. A
    regular file larger than ``limit`` is refused before it is read, saying its size; any
    other file (a device, a pipe, a FIFO) is read up to ``limit + 1`` bytes — never more —
    and refused when there were more than ``limit``. Raises :class:`FileTooLargeError` for
    both, ``OSError`` (``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``…)
    as ``open``/``read`` do, and ``TimeoutError`` for a FIFO or pipe nothing was written
    to within :data:`FIFO_WAIT_S` seconds. Blocking: call it off the GUI thread.
    """
    shown = name if name is not None else str(path)
    at_most = f"at most {size_words(limit)}" + (f": {why}" if why else "")
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    # O_NONBLOCK only so that opening a FIFO with no writer returns at once (a blocking
    # open waits for one without end); cleared before reading
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISFIFO(st.st_mode) and hasattr(select, "poll"):  # Windows has no FIFOs
            _wait_for_writer(fd, path)
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    with f:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise FileTooLargeError(
                f"{shown}: {st.st_size / 1e6:.1f} MB is too large for {what} ({at_most})"
            )
        data = f.read(limit + 1)  # BufferedReader.read(n) loops until n bytes or EOF
    if len(data) > limit:  # a device or pipe that reports no size, or a file that grew
        raise FileTooLargeError(
            f"{shown}: too large for {what} (more than {size_words(limit)} read; {at_most})"
        )
    return data


def read_bounded_text(
    path: Path,
    limit: int,
    what: str,
    name: str | None = None,
    why: str = "",
    encoding: str = "utf-8-sig",
) -> str:
    """:func:`read_bounded`, decoded (default: UTF-8, a leading byte-order mark dropped).
    Raises what :func:`read_bounded` raises, and ``UnicodeDecodeError``."""
    return read_bounded(path, limit, what, name, why).decode(encoding)
