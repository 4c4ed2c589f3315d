"""An input file that reports no size — ``/dev/zero``, a FIFO fed without end, a pipe — is
read up to its kind's limit and refused in one line with exit status 2, by every command
that takes one. Before, the size check looked at ``st_size`` only: ``splitdesk --quit
--questions /dev/zero`` grew to 24 GB, ``bench``/``sweep`` hung and, under a memory limit,
ended in a ``MemoryError`` traceback. Each command runs as a real process under a 2 GB
address-space limit, so that a regression fails here instead of exhausting the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The address space each command may use: ample for splitdesk, far below what an
#: unbounded read reaches.
MEMORY_LIMIT = 2 * 1024**3


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def splitdesk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "splitdesk", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_limit_memory,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )


@pytest.fixture
def endless_fifo(tmp_path: Path) -> Iterator[Path]:
    """``endless.toml``: a FIFO a real process keeps writing zeros into."""
    fifo = tmp_path / "endless.toml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f'exec cat /dev/zero > "{fifo}"'])
    try:
        yield fifo
    finally:
        writer.kill()
        writer.wait(timeout=30)


QUESTIONS = "too large for a question set (more than 8 MB read; at most 8 MB"
CONTEXT = "--context '/dev/zero': too large for a shared context (more than 3.81 MB read"
ZERO_CASES = [
    (["bench", "--questions", "/dev/zero"], f"splitdesk bench: error: zero: {QUESTIONS}"),
    (
        ["bench", "-q", "a", "--mode", "parallel", "--context", "/dev/zero"],
        f"splitdesk bench: error: {CONTEXT}",
    ),
    (
        ["sweep", "--max-n", "2", "--questions", "/dev/zero"],
        f"splitdesk sweep: error: zero: {QUESTIONS}",
    ),
    (
        ["sweep", "--max-n", "2", "--context-tokens", "0,100", "--context", "/dev/zero"],
        f"splitdesk sweep: error: {CONTEXT}",
    ),
    (
        ["--run", "--quit", "--questions", "/dev/zero"],
        f"splitdesk: error: --questions: zero: {QUESTIONS}",
    ),
    (
        ["replay", "/dev/zero"],
        "splitdesk replay: error: /dev/zero: too large for a recording (more than 256 MB read",
    ),
    (["export", "/dev/zero", "--csv", "{tmp}/out.csv"], "/dev/zero: too large for a recording"),
]


@pytest.mark.parametrize(("args", "words"), ZERO_CASES)
def test_dev_zero_as_an_input_file_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], words: str
) -> None:
    proc = splitdesk(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(words) if words.startswith("splitdesk") else words in lines[0]
    assert list(tmp_path.iterdir()) == [], "nothing written"


FIFO_CASES = [
    (["bench", "--questions", "{fifo}"], "splitdesk bench: error: endless.toml: " + QUESTIONS),
    (
        ["--run", "--quit", "--scenario", "{fifo}"],
        "splitdesk: error: --scenario: {fifo}: too large for a scenario (more than 8 MB read",
    ),
    (["scenarios", "--check", "{fifo}"], "splitdesk scenarios: error: {fifo}: too large for"),
]


@pytest.mark.parametrize(("args", "words"), FIFO_CASES)
def test_a_fifo_fed_without_end_is_one_line_and_exit_2(
    endless_fifo: Path, args: list[str], words: str
) -> None:
    proc = splitdesk(*(a.replace("{fifo}", str(endless_fifo)) for a in args))
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(words.replace("{fifo}", str(endless_fifo)))
