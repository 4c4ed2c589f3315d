"""The one atomic file writer: a file is replaced whole or not at all, a failed or
interrupted write leaves the old file and no temporary file, new files get open()'s
permissions — and every file splitdesk writes goes through it (a scan of the source)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.core.files.atomic import (
    AtomicFile,
    leftovers,
    output_problem,
    same_file,
    write_atomic,
)


def test_a_write_replaces_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    target.write_text("old", encoding="utf-8")
    assert write_atomic(target, "new ✓") == len("new ✓".encode())
    assert target.read_text(encoding="utf-8") == "new ✓"
    assert leftovers(tmp_path, "doc.json") == []


def test_an_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.mp4"
    target.write_bytes(b"the old file")
    seen: list[list[Path]] = []

    def interrupted_write() -> None:
        with AtomicFile(target) as part:
            part.temp.write_bytes(b"half a fi")
            seen.append(leftovers(tmp_path, "run.mp4"))
            raise KeyboardInterrupt  # Ctrl-C mid-write

    with pytest.raises(KeyboardInterrupt):
        interrupted_write()
    assert len(seen[0]) == 1  # the temporary file existed while writing
    assert target.read_bytes() == b"the old file"
    assert leftovers(tmp_path, "run.mp4") == []


def test_a_failed_rename_keeps_the_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "x.csv"
    target.write_text("old", encoding="utf-8")
    part = AtomicFile(target)
    part.temp.write_text("new", encoding="utf-8")
    os.unlink(part.temp)  # the temporary file vanished (a cleaner, a full disk)
    with pytest.raises(FileNotFoundError):
        part.commit()
    assert target.read_text(encoding="utf-8") == "old"


def test_new_files_get_the_permissions_open_would_give(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
    mode = stat.S_IMODE((tmp_path / "a.txt").stat().st_mode)
    assert mode == 0o666 & ~umask


def test_output_problems_are_named(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    assert output_problem(tmp_path / "dir") == "is a folder; give a file name"
    assert (
        output_problem(tmp_path / "nope" / "x.json") == f"folder {tmp_path / 'nope'} does not exist"
    )
    (tmp_path / "plain").write_text("", encoding="utf-8")
    assert output_problem(tmp_path / "plain" / "x.json") == f"{tmp_path / 'plain'} is not a folder"
    assert output_problem(tmp_path / "fine.json") is None


def test_two_spellings_of_one_file_are_the_same(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert same_file(tmp_path / "a" / ".." / "x.png", tmp_path / "x.png")
    (tmp_path / "x.png").write_bytes(b"")
    os.symlink(tmp_path / "x.png", tmp_path / "link.png")
    assert same_file(tmp_path / "link.png", tmp_path / "x.png")
    assert not same_file(tmp_path / "x.png", tmp_path / "y.png")


#: how code writes a file other than through core/files/atomic.py
_DIRECT_WRITE = re.compile(
    r"\.write_text\(|\.write_bytes\(|os\.replace\(|mkstemp\(|shutil\.copy|\.save\(str\("
    r"|open\([^)]*[\"'](?:w|wb|w\+|a|ab|x|xb)[\"']"
)


def test_every_file_splitdesk_writes_goes_through_the_atomic_writer() -> None:
    """A new writer that bypasses ``write_atomic``/``AtomicFile`` fails here: its file
    could be left half-written by a crash or a Ctrl-C. (The atomic writer itself, the
    writers that fill an AtomicFile's temporary file, and log handlers are the only
    writers.)"""
    allowed = {ROOT / "splitdesk" / "core" / "files" / "atomic.py"}
    found = []
    for path in sorted((ROOT / "splitdesk").rglob("*.py")):
        if path in allowed:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if _DIRECT_WRITE.search(code) and "_target.temp" not in code:
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "files written without core/files/atomic.py:\n" + "\n".join(found)


def test_a_device_is_never_replaced_by_a_saved_file() -> None:
    """Saving over ``/dev/null`` is refused, and the device stays a device (renaming a
    saved file over it, as root, replaced it with a file for every program)."""
    target = Path(os.devnull)
    assert output_problem(target) == "is a device, not a file: give a file name"
    with pytest.raises(OSError, match="is a device, not a file"):
        write_atomic(target, b"{}")
    assert stat.S_ISCHR(os.stat(target).st_mode)
