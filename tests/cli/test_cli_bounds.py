"""Every number bench and sweep take is bounded, with the reason in one line (exit 2); a
session too large for memory or hours is refused up front with its estimate; and Ctrl-C
stops bench and sweep at once, writing the JSON of what finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from splitdesk.cli.main import main


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-tokens", "10000000"], "--max-tokens 10000000: must be 1–131,072"),
        (["--repeat", "5000", "--max-tokens", "1"], "--repeat 5000: must be 1–1,000"),
        (["--warmup", "1000"], "--warmup 1000: must be 0–100"),
        (["--retry-429", "1000"], "--retry-429 1000: must be 0–20"),
        (["--read-timeout", "inf"], "--read-timeout inf: must be a finite number"),
        (["--connect-timeout", "1e9"], "--connect-timeout 1e+09: must be 0.001–3,600 s"),
        (["--pause", "1e9"], "--pause 1e+09: must be 0–3,600 s"),
        (["--temperature", "nan"], "--temperature nan: must be a finite number"),
        (["--seed", str(2**70)], "APIs take a 64-bit integer"),
        (["--sim-param", "rtt=inf"], "rtt: Input should be a finite number"),
        (["--sim-param", "retry_after=1e999"], "retry_after: Input should be a finite number"),
        (["--sim-param", "speed=0"], "speed: Input should be greater than or equal to 0.01"),
        (["-q", "x" * 100_001, "--mode", "parallel"], "question 1 has 100,001 characters"),
        (["--mode", "parallel"] + ["-q", "q"] * 257, "257 questions"),
    ],
)
def test_a_number_out_of_range_is_one_line_with_its_bound(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and words in err, err
    assert "running" not in err  # nothing was sent


def test_a_session_too_large_is_refused_with_its_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``bench --repeat 1000000000`` grew to 23.8 GB until the kernel killed it."""
    t0 = time.monotonic()
    assert main(["bench", "--repeat", "1000000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert time.monotonic() - t0 < 10
    assert err.startswith("splitdesk bench: error: this session would be 3,000,000,000 runs")
    assert "PB kept in memory" in err and "years" in err and "\n" not in err
    assert main(["sweep", "--max-n", "64", "--repeat", "1000", "--max-tokens", "131072"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("splitdesk sweep: error: this session would be") and "memory" in err


#: The built-in endpoint at 3× speed: a 400-token combined reply still streams for ~1.6 s,
#: well past the 0.3 s after its start when the signal comes, and the repeats before it
#: take a third of the time (the three tests took 26-37 s each at speed 1).
FAST = ["--sim-param", "speed=3"]


def _fast(tokens: int) -> list[str]:
    """:data:`FAST` for the long (mid-stream) runs; the short ones stay at speed 1, so the
    signal still lands before a later repeat (at 3× a fourth repeat had begun)."""
    return FAST if tokens > 100 else []


def _interrupt(
    command: list[str], started: str, out: Path, sig: int = signal.SIGINT
) -> tuple[int, float, str]:
    """Start ``splitdesk …``, send ``sig`` (Ctrl-C's SIGINT) once its stderr shows
    ``started``; the exit status, the seconds from the signal to exit, and its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", *command, "--json", str(out)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if started in line:
                break
        else:
            pytest.fail(f"{command[0]} ended before {started!r}: {''.join(seen)}")
        time.sleep(0.3)  # the run is streaming
        proc.send_signal(sig)
        t0 = time.monotonic()
        try:
            _, rest = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"{command[0]} still ran 30 s after Ctrl-C")
        return proc.returncode, time.monotonic() - t0, "".join(seen) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("tokens", "sig"),
    [(8, signal.SIGINT), (400, signal.SIGINT), (400, signal.SIGTERM)],
    ids=["ctrl-c-between-runs", "ctrl-c-mid-stream", "sigterm-mid-stream"],
)
def test_ctrl_c_stops_bench_at_once_and_writes_what_finished(
    tmp_path: Path, tokens: int, sig: int
) -> None:
    """Short runs: Ctrl-C lands between runs (a prediction, a schedule check); long ones:
    mid-stream, where the run ends stopped. SIGTERM (a terminal closed, a job stopped) is
    handled the same way: it killed bench before, with no JSON."""
    out = tmp_path / "bench.json"
    code, took, err = _interrupt(
        [
            "bench",
            "--repeat",
            "200",
            "--max-tokens",
            str(tokens),
            "-q",
            "a",
            "-q",
            "b",
            *_fast(tokens),
        ],
        "running combined (repeat 3/200)",
        out,
        sig,
    )
    assert code == 130, err
    assert took < 10, f"{took:.1f} s from Ctrl-C to exit"
    assert err.rstrip().endswith("splitdesk bench: interrupted"), err[-300:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    runs = doc["runs"]
    assert 6 <= len(runs) <= 9, len(runs)  # two whole repeats, and what the third reached
    assert all(not r["stopped"] for r in runs[:-1])
    if tokens > 100:  # the signal came mid-stream: the last run ended stopped
        assert runs[-1]["stopped"], runs[-1]["mode"]
    assert "(repeat 5/200)" not in err  # nothing started long after Ctrl-C


@pytest.mark.parametrize("tokens", [8, 400], ids=["between-runs", "mid-stream"])
def test_ctrl_c_stops_sweep_at_once_and_writes_what_finished(tmp_path: Path, tokens: int) -> None:
    out = tmp_path / "sweep.json"
    code, took, err = _interrupt(
        ["sweep", "--max-n", "12", "--repeat", "3", "--max-tokens", str(tokens), *_fast(tokens)],
        "N=3: combined",
        out,
    )
    assert code == 130, err
    assert took < 10, f"{took:.1f} s from Ctrl-C to exit"
    doc = json.loads(out.read_text(encoding="utf-8"))
    finished = [r["n"] for r in doc["rows"] if not r["stopped"]]
    assert finished[:2] == [1, 2] and len(finished) <= 3, finished
    assert "N=5" not in err


def test_a_question_file_too_large_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "questions.txt"
    with big.open("wb") as f:
        f.truncate(9 * 1024 * 1024)  # sparse: 9 MiB without writing them
    assert main(["bench", "--questions", str(big)]) == 2
    err = capsys.readouterr().err.strip()
    assert "questions.txt: 9.4 MB is too large for a question set (at most 8 MB" in err
