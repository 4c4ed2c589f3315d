"""``splitdesk bench`` end to end: the built-in endpoint in a child process, real loopback
HTTP, the JSON contract, exit statuses and one-line errors."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starved import bench_slips, on_schedule

from bench_contract import BenchDocument
from splitdesk.cli.main import main


def bench(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code = main(["bench", *args, "--json", "-"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_batching_speedup_matches_the_cost_model(capsys: pytest.CaptureFixture[str]) -> None:
    def check(result: tuple[int, dict, str]) -> None:  # type: ignore[type-arg]
        code, doc, _ = result
        assert code == 0
        s = doc["summary"]
        assert s["speedup"] >= 4.0
        assert abs(s["speedup"] - s["predicted_speedup"]) <= 0.10 * s["predicted_speedup"], s

    # a starved endpoint's late steps are in the wall times, not the model: starved.py
    _, doc, table = on_schedule(
        lambda: bench(["--mode", "all", "--sim-param", "speed=4"], capsys),
        check,
        lambda result: bench_slips(result[1]),
    )
    parsed = BenchDocument.model_validate(doc)
    assert [r.mode for r in parsed.runs] == ["combined", "parallel", "sequential"]
    s = doc["summary"]
    # the built-in endpoint said how late it ran in each run (seconds, >= 0)
    assert all(r["endpoint_slip_s"] >= 0 for r in doc["runs"]), doc["runs"]
    combined = parsed.runs[0].requests[0]
    assert [x.question for x in combined.sections] == [0, 1, 2, 3, 4]
    assert combined.tokens_source == "usage" and combined.output_tokens > 500
    assert all(
        r.ttft_s is not None and r.error is None for run in parsed.runs for r in run.requests
    )
    assert parsed.runs[0].wall_s == s["combined_wall_s"]
    for line in (
        "Combined request:",
        "Parallel requests:",
        "Speed-up factor:",
        "Answer 5 starts at:",
    ):
        assert line in table


def test_single_slot_has_no_speedup(capsys: pytest.CaptureFixture[str]) -> None:
    def check(result: tuple[int, dict, str]) -> None:  # type: ignore[type-arg]
        code, doc, _ = result
        assert code == 0
        assert doc["summary"]["speedup"] <= 1.2, doc["summary"]

    args = ["--profile", "single-slot", "--mode", "all", "--sim-param", "speed=4"]
    # a starved endpoint's late steps are in the wall times, not the model: starved.py
    on_schedule(
        lambda: bench([*args, "--max-tokens", "80"], capsys),
        check,
        lambda result: bench_slips(result[1]),
    )


def test_failed_requests_exit_1_and_still_write_json(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, doc, _ = bench(
        [
            "--endpoint",
            f"http://127.0.0.1:{port}/v1",
            "--model",
            "m",
            "--mode",
            "parallel",
            "-q",
            "a",
            "-q",
            "b",
        ],
        capsys,
    )
    assert code == 1
    errors = [r["error"] for r in doc["runs"][0]["requests"]]
    assert [e["kind"] for e in errors] == ["connect", "connect"]
    BenchDocument.model_validate(doc)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--nope"], "unrecognized arguments: --nope"),
        (["--mode", "sideways"], "invalid choice"),
        (["--endpoint", "ftp://x"], "expected 'builtin' or an http(s):// URL"),
        (["--repeat", "0"], "--repeat 0: must be 1–1,000"),
        (["--questions", "/no/such/file.toml"], "cannot read"),
        (["--sim-param", "warp=9"], "unknown simulator parameter"),
        (["-q", "  "], "-q/--question needs a non-empty question"),
        (["-q", b"caf\xe9?"], "is not valid UTF-8 text"),
        (["-q", "one", "--mode", "combined"], "needs at least 2 questions to combine (got 1)"),
        (["--read-timeout", "0"], "--read-timeout 0: must be 0.001–3,600 s"),
        (["--connect-timeout", "nan"], "--connect-timeout nan: must be a finite number"),
        (["--retry-429", "-1"], "--retry-429 -1: must be 0–20"),
        (["--json", "/no/such/folder/out.json"], "folder /no/such/folder does not exist"),
        (["--max-tokns", "5"], "--max-tokns (did you mean --max-tokens?)"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str | bytes], words: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unreachable_endpoint_is_a_failed_run_not_a_bad_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No --model: listing the models fails to connect. That is a failed run (exit 1, the
    JSON written with each request's error), as the headless contract says, not exit 2."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, doc, err = bench(
        ["--endpoint", f"http://127.0.0.1:{port}/v1", "--mode", "parallel", "-q", "a", "-q", "b"],
        capsys,
    )
    assert code == 1
    assert f"cannot list the models: cannot connect to 127.0.0.1:{port}" in err
    errors = [r["error"] for r in doc["runs"][0]["requests"]]
    assert [e["kind"] for e in errors] == ["connect", "connect"]
    assert all(
        f"is the server running at http://127.0.0.1:{port}/v1" in e["message"] for e in errors
    )
    BenchDocument.model_validate(doc)


def test_unknown_option_points_to_bench_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", "--repeats", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "splitdesk bench: error: unrecognized arguments: --repeats (did you mean --repeat?) 3 "
        "(see splitdesk bench --help)"
    )


def test_a_question_file_without_questions_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", "--questions", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "splitdesk bench: error: empty.txt: the file holds no questions"


def test_ctrl_c_keeps_the_finished_runs_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "partial.json"
    # 20 repeats: the bench is still running when the signal comes however late this
    # process gets the CPU (one repeat's parallel and sequential runs take ~3 s at 4x speed;
    # under load the whole bench once ended before the signal and exited 0)
    args = ["bench", "--json", str(out), "--sim-param", "speed=4", "--repeat", "20"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "splitdesk", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # interrupt once the combined run is done (~3 s at 4x speed), early in the parallel run
    deadline = time.monotonic() + 30
    while "running parallel" not in (line := proc.stderr.readline()):
        assert line and time.monotonic() < deadline, "the combined run did not finish in 30 s"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the bench did not exit within 30 s of the SIGINT") from None
    assert proc.returncode == 130, stderr
    assert "splitdesk bench: interrupted" in stderr and "Traceback" not in stderr
    doc = BenchDocument.model_validate_json(out.read_text(encoding="utf-8"))
    assert doc.runs[0].mode == "combined"
    assert all(r.error is None and r.e2e_s is not None for r in doc.runs[0].requests)
    assert "Combined request:" in stdout


def test_each_run_says_what_splitdesk_s_own_processes_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An engineer checks an observer effect after the fact: every run of the bench JSON
    carries ``client_cpu`` — the engine's (bench's own process) and the built-in
    endpoint's CPU seconds and share of a core over that run, and the machine's load."""
    code, doc, _ = bench(["--mode", "all", "--sim-param", "speed=4"], capsys)
    assert code == 0
    for run in doc["runs"]:
        cpu = run["client_cpu"]
        assert cpu["wall_s"] >= 0.9 * run["wall_s"], (cpu, run["wall_s"])  # the run's span
        assert cpu["cpus"] >= 1
        engine, endpoint = cpu["processes"]["engine"], cpu["processes"]["endpoint"]
        assert engine["cpu_s"] > 0 and endpoint["cpu_s"] > 0, cpu  # both worked the run
        for p in (engine, endpoint):
            assert p["share"] == pytest.approx(p["cpu_s"] / cpu["wall_s"], abs=0.01)
        assert "window" not in cpu["processes"]  # bench has none
        if cpu["machine_busy"] is not None:  # /proc/stat (Linux)
            assert 0 < cpu["machine_busy"] <= 1


def test_each_retry_after_a_429_is_said_as_it_is_scheduled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--retry-429`: every back-off is said on stderr when it starts (which request, the
    server's words, the attempt it precedes and how long it waits), not a silent pause
    that may last up to the 600 s cap."""
    code, doc, err = bench(
        [
            *("--profile", "rate-limited", "--mode", "parallel"),
            *("--retry-429", "1", "--sim-param", "speed=8"),
        ],
        capsys,
    )
    assert code in (0, 1), err  # 1: a request refused again after its one retry
    said = [line.strip() for line in err.splitlines() if "; attempt " in line]
    backoffs = [
        (i + 1, b)
        for run in doc["runs"]
        for i, r in enumerate(run["requests"])
        for b in r["backoffs"]
    ]
    assert backoffs and len(said) == len(backoffs), err
    for (req, b), line in zip(sorted(backoffs, key=lambda x: x[0]), sorted(said), strict=True):
        assert line.startswith(f"request {req}: HTTP 429"), line
        assert line.endswith(f"; attempt {b['attempt'] + 1} in {b['delay_s']:g} s"), line


@pytest.mark.parametrize(
    ("status", "code", "words"),
    [
        # the requests would be refused too: a failed run, in the server's words
        (
            401,
            1,
            "cannot list the models: HTTP 401: invalid key for this gateway — check the API key",
        ),
        (
            503,
            1,
            "cannot list the models: HTTP 503: invalid key for this gateway — the server failed",
        ),
        # no models list there: the user names the model, told what the server said
        (404, 2, "pass --model NAME: could not list the models at"),
    ],
)
@pytest.mark.asyncio
async def test_listing_the_models_refused_says_the_servers_words(
    status: int, code: int, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --model and the endpoint refuses the models list: a refused key (401, 403) or a
    failing server (5xx) is a failed run (exit 1: the requests fail the same way, each
    error in the JSON), said with the server's message and what to do; any other status
    leaves the user to name the model (exit 2). A 401 had been "pass --model NAME … (HTTP
    401 Unauthorized)", exit 2, the server's message and the hint lost."""
    from streamserver import ReplayServer

    body = json.dumps({"error": {"message": "invalid key for this gateway"}}).encode()
    headers = {"content-type": "application/json"}
    async with ReplayServer(status, headers, [body], pause=0.0) as srv:
        args = ["bench", "--endpoint", f"{srv.url}/v1", "--mode", "parallel", "-q", "a"]
        got = await asyncio.to_thread(main, [*args, "--json", "-"])
    out, err = capsys.readouterr()
    assert got == code, err
    assert words in err, err
    if code == 2:
        assert "HTTP 404: invalid key for this gateway" in err  # the server's words
        return
    errors = [r["error"] for r in json.loads(out)["runs"][0]["requests"]]
    assert [e["status"] for e in errors] == [status]
