"""Every input file is read with a bound (core/run/bounded_read.py): a device, a pipe or a
FIFO that reports no size is read up to the limit and refused, never read to the end of
memory; a FIFO with no writer does not hang the reader."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from splitdesk.core.run import bounded_read
from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded, read_bounded_text

LIMIT = 64 * 1024


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO a real process keeps writing zeros into, for as long as anyone reads."""
    fifo = tmp_path / "endless.toml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'exec cat /dev/zero > "{fifo}"'])
    try:
        yield fifo
    finally:
        writer.kill()
        writer.wait(timeout=30)


def test_dev_zero_is_refused_after_the_limit_not_read_to_the_end() -> None:
    with pytest.raises(FileTooLargeError) as info:
        read_bounded(Path("/dev/zero"), LIMIT, "a question set", "zero")
    assert str(info.value) == (
        "zero: too large for a question set (more than 64 kB read; at most 64 kB)"
    )


def test_a_fifo_fed_without_end_is_refused_after_the_limit(endless_fifo: Path) -> None:
    with pytest.raises(FileTooLargeError, match=r"endless\.toml: too large for a scenario"):
        read_bounded(endless_fifo, LIMIT, "a scenario", endless_fifo.name)


@pytest.mark.parametrize("writer_first", [True, False])
def test_a_fifo_within_the_limit_is_read_whole(tmp_path: Path, writer_first: bool) -> None:
    """``mkfifo f; cat q.txt > f & splitdesk --questions f``: the writer may open before
    the reader or after it; either way every byte written is read."""
    fifo = tmp_path / "questions.txt"
    os.mkfifo(fifo)
    source = tmp_path / "source.txt"
    source.write_text("Why is the sky blue?\nWhat is rust?\n", encoding="utf-8")
    command = ["sh", "-c", f'sleep {0 if writer_first else 0.5}; exec cat "{source}" > "{fifo}"']
    writer = subprocess.Popen(command)
    try:
        assert read_bounded_text(fifo, LIMIT, "a question set") == source.read_text("utf-8")
    finally:
        writer.kill()
        writer.wait(timeout=30)


def test_a_fifo_nobody_writes_to_is_refused_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_read, "FIFO_WAIT_S", 0.2)  # 30 s in use
    fifo = tmp_path / "silent.txt"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def read() -> None:
        try:
            read_bounded(fifo, LIMIT, "a question set")
        except OSError as exc:
            done.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert done, "read_bounded still waiting for a writer after 30 s"
    assert isinstance(done[0], TimeoutError)
    assert done[0].strerror == (
        "nothing was written to it in 0.2 s (a FIFO or pipe with no writer)"
    )


def test_a_regular_file_over_the_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as f:
        f.truncate(2 * 1024 * 1024)  # sparse: nothing written, nothing read
    with pytest.raises(FileTooLargeError) as info:
        read_bounded(big, 1024 * 1024, "a question set", big.name, "why not")
    assert (
        str(info.value)
        == "big.toml: 2.1 MB is too large for a question set (at most 1 MB: why not)"
    )


def test_a_file_within_the_limit_is_read_exactly(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_bytes(b"\xef\xbb\xbfA?\n" + b"x" * (LIMIT - 6))
    assert len(path.read_bytes()) == LIMIT
    assert read_bounded(path, LIMIT, "x") == path.read_bytes()
    assert read_bounded_text(path, LIMIT, "x").startswith("A?\n")  # the BOM dropped


def test_a_folder_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_bounded(tmp_path, LIMIT, "x")
