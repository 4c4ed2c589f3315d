"""The one way splitdesk writes a file: whole or not at all.

Every file splitdesk writes — recordings, settings, exports (CSV, JSON, trace, PNG, SVG,
GIF, MP4), sweeps, question sets, prices, the bench and sweep JSON, screenshots — goes
through this module: the bytes go to a temporary file in the target's own folder (so the
rename cannot cross file systems), are flushed to disk (``fsync``), and the temporary file
is renamed over the target (``os.replace``, atomic on POSIX and Windows); the folder is then
synced so the rename itself survives a crash. A reader, a crash or a Ctrl-C in the middle
sees the old file or the new one, never half of one, and a failed or cancelled write leaves
no temporary file behind.

* :func:`write_atomic` writes bytes or text in one go;
* :class:`AtomicFile` is for writers that stream into a path themselves (the GIF encoder,
  ffmpeg for MP4): they write :attr:`AtomicFile.temp`, then :meth:`~AtomicFile.commit` or
  :meth:`~AtomicFile.discard`.

New files get the permissions ``open()`` would give them (``0o666`` less the umask), not
``mkstemp``'s ``0o600``. Blocking: call off the GUI thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from pathlib import Path
from types import TracebackType

#: What ``open()`` would give a new file (the process's umask, read once: reading it means
#: setting it).
_UMASK = os.umask(0)
os.umask(_UMASK)

#: The suffix of a file being written (seen in a folder only while a write is under way or
#: after a crash mid-write; :func:`leftovers` finds them).
PART_SUFFIX = ".part"


def _folder(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class AtomicFile:
    """A write of ``path`` in progress: the writer fills :attr:`temp` (a new, unique,
    hidden file in ``path``'s folder, ``.<name>.<random>.part``), then :meth:`commit` puts
    it in place or :meth:`discard` removes it. As a context manager it commits when the
    block ends normally and discards on an exception (Ctrl-C included). Raises ``OSError``
    when the temporary file cannot be created (a missing or read-only folder)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if (problem := _not_a_file(self.path)) is not None:
            raise OSError(errno.EINVAL, f"{self.path} {problem}")
        folder = _folder(self.path)
        token = secrets.token_hex(4)
        fd, name = tempfile.mkstemp(
            prefix=f".{self.path.name}.{token}.", suffix=PART_SUFFIX, dir=folder
        )
        os.close(fd)
        os.chmod(name, 0o666 & ~_UMASK)
        self.temp = Path(name)
        self._done = False

    def commit(self) -> None:
        """Flush :attr:`temp` to disk and rename it over :attr:`path`. Raises ``OSError``
        (the temporary file is then removed, the old :attr:`path` untouched)."""
        if self._done:
            return
        try:
            fd = os.open(self.temp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self.temp, self.path)
        except BaseException:
            self.discard()
            raise
        self._done = True
        _sync_folder(_folder(self.path))

    def discard(self) -> None:
        """Remove :attr:`temp` (idempotent); :attr:`path` is left as it was."""
        self._done = True
        with contextlib.suppress(OSError):
            os.unlink(self.temp)

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def write_atomic(path: Path, data: bytes | str, encoding: str = "utf-8") -> int:
    """Write ``data`` (text is encoded with ``encoding``) to ``path`` atomically (module
    docstring); returns the bytes written. Raises ``OSError``; ``path`` is then as it was
    and no temporary file is left."""
    raw = data.encode(encoding) if isinstance(data, str) else data
    with AtomicFile(path) as target, open(target.temp, "wb") as f:
        f.write(raw)  # flushed and synced by commit()
    return len(raw)


def leftovers(folder: Path, name: str) -> list[Path]:
    """Temporary files of unfinished writes of ``name`` in ``folder`` (after a crash; a
    test checks none is left by a cancelled export)."""
    return sorted(folder.glob(f".{name}.*{PART_SUFFIX}"))


def _not_a_file(path: Path) -> str | None:
    """Why ``path``, which exists, is no file to replace: a device, a pipe or a socket
    (``/dev/null``: renaming a saved file over it as root would replace the device with a
    file, for every program on the machine). ``None`` for a regular file, or no file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a pipe or socket"
    return f"is {kind}, not a file: give a file name"


def output_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file (checked before a run or an export starts,
    so a long run never ends in a failed save), or ``None``: ``is a folder``, ``folder …
    does not exist``, ``folder … is not writable``, ``is read-only``, ``folder … does not
    accept new files``. Reads the file system (``stat``/``access``) and creates and removes
    one empty probe file in the folder: a folder can pass ``access`` and still refuse a new
    file (``/proc``, ``/sys``, a read-only mount as root), and every save here writes a
    temporary file beside its target first."""
    folder = _folder(path)
    if path.is_dir():
        return "is a folder; give a file name"
    if (problem := _not_a_file(path)) is not None:
        return problem
    if not folder.is_dir():
        return (
            f"folder {folder} does not exist"
            if not folder.exists()
            else f"{folder} is not a folder"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder {folder} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "is read-only"
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
    except OSError:
        return f"folder {folder} does not accept new files"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def input_problem(path: Path, what: str = "file") -> str | None:
    """Why ``path`` cannot be read as a ``what`` (a CA bundle, a question set…), or
    ``None``: ``does not exist``, ``is not readable``."""
    if not path.exists():
        return "does not exist"
    if not os.access(path, os.R_OK):
        return "is not readable"
    if path.is_dir() and what == "file":
        return "is a folder; give a file"
    return None


def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (after resolving ``..`` and links; an
    existing file is compared by its inode, so two spellings of one file are caught)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()
