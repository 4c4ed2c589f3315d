"""``splitdesk bench --context FILE`` and ``splitdesk sweep --context-tokens`` on the
built-in endpoint (a child process, real loopback HTTP): each request's prompt and cached
tokens in the JSON, the parallel side served from cache with the cache on, measured
against the cost model, the cached-input price, and bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starved import bench_slips, on_schedule

from paths import ROOT
from splitdesk.cli.main import main

DOCUMENT = ROOT / "resources" / "questions" / "harbour-library-agreement.txt"
QUESTIONS = [
    "How long can I keep the floor sander?",
    "What is the late fee for a drill?",
    "Which deposit does a concession member pay?",
    "Who is responsible for a junior member's loans?",
]


def bench(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["bench", *args, "--json", "-"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _runs(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["mode"]: r for r in doc["runs"]}


def test_with_the_cache_on_the_parallel_side_reads_the_document_from_cache(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--context", str(DOCUMENT), "--mode", "all", "--sim-param", "speed=4"]
    args += ["--sim-param", "prefix_cache=on", "--max-tokens", "60"]
    for q in QUESTIONS:
        args += ["-q", q]

    def check(result: tuple[int, dict[str, Any], str]) -> None:
        code, doc, err = result
        assert code == 0, err
        for run in doc["runs"]:  # measured against the cost model (timing figures and
            # their 5 % goal: benchmarks/shared_context.py; here the tests' usual 10 %)
            assert run["wall_s"] == pytest.approx(run["predicted_wall_s"], rel=0.10)
            for r in run["requests"]:  # the cache the model predicts is the one measured
                assert r["cached_prompt_tokens"] == r["predicted"]["cached_prompt_tokens"]

    _, doc, table = on_schedule(lambda: bench(args, capsys), check, lambda r: bench_slips(r[1]))
    runs = _runs(doc)
    combined, parallel = runs["combined"], runs["parallel"]
    (c,) = combined["requests"]
    doc_chars = len(DOCUMENT.read_text("utf-8").strip())
    assert c["context_chars"] == doc_chars and c["prompt_tokens"] > doc_chars / 4
    assert c["cached_prompt_tokens"] == 0  # its own side's nonce: nothing left by others
    reads = [r["cached_prompt_tokens"] for r in parallel["requests"]]
    assert reads.count(0) == 1 and all(x > 0.9 * doc_chars / 4 for x in reads if x)
    p = parallel["prompt"]
    assert p["cached_prompt_tokens"] == sum(reads)
    assert p["prompt_tokens"] == sum(r["prompt_tokens"] for r in parallel["requests"])
    assert p["computed_prompt_tokens"] == p["prompt_tokens"] - p["cached_prompt_tokens"]
    for r in parallel["requests"]:  # the server said how long prefill took
        split = r["ttft_split"]
        assert split["prefill_s"] > 0 and split["queue_s"] is not None
        assert split["prefill_s"] + split["queue_s"] + split["rest_s"] == pytest.approx(
            r["ttft_s"], abs=1e-5
        )
    assert f"({p['cached_prompt_tokens']} cached)" in table


def test_the_cached_price_prices_what_the_cache_served(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--context", str(DOCUMENT), "--mode", "parallel", "--sim-param", "speed=8"]
    args += ["--sim-param", "prefix_cache=on", "--max-tokens", "20", "-q", "A?", "-q", "B?"]
    args += ["--price-in", "2", "--price-out", "8", "--price-cached", "0.5"]
    code, doc, err = bench(args, capsys)
    assert code == 0, err
    side = doc["cost"]["sides"]["parallel"]
    prompt, cached, out = side["prompt_tokens"], side["cached_prompt_tokens"], side["output_tokens"]
    assert cached > 0
    want = (prompt - cached) * 2 / 1e6 + cached * 0.5 / 1e6 + out * 8 / 1e6
    assert side["cost"] == pytest.approx(want)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--context", "/no/such/document.txt"], "--context '/no/such/document.txt': cannot read"),
        (["--context-as", "left"], "--context-as: invalid choice"),
        (["--price-cached", "1"], "--price-cached goes with --price-in and --price-out"),
    ],
)
def test_bad_context_arguments_exit_2_with_one_line(args: list[str], words: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_an_empty_context_file_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "bench", "--context", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "the file is empty" in proc.stderr


def test_sweep_over_context_length_shows_where_combining_starts_to_win(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "sweep",
            "--context-tokens",
            "0,4000",
            "--profile",
            "compute-bound",
            "--sim-param",
            "speed=8",
            "--sim-param",
            "answer_tokens=60",
            "--json",
            "-",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["n"] == 5 and doc["context_tokens"] == [0, 4000]
    short, long = doc["rows"]
    assert short["speedup"] > 1 > long["speedup"]  # five prefills of 4,000 tokens lose
    assert long["parallel_prompt"]["prompt_tokens"] > 5 * 3900
    assert long["combined_prompt"]["prompt_tokens"] < long["parallel_prompt"]["prompt_tokens"] / 4
    assert doc["crossover"]["from_context_tokens"] == 4000
    assert "Combining starts to win between 0 and 4,000 context tokens" in err


def test_sweep_context_tokens_bad_list_is_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "sweep", "--context-tokens", "0,lots"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "splitdesk sweep: error: --context-tokens 0,lots: 'lots' is not a whole number of tokens"
    )


def test_an_n_sweep_sends_the_context_and_each_side_prefills_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "sweep",
            "--max-n",
            "3",
            "--context",
            str(DOCUMENT),
            "--sim-param",
            "speed=8",
            "--sim-param",
            "prefix_cache=on",
            "--max-tokens",
            "30",
            "--json",
            "-",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)["rows"]
    doc_tokens = len(DOCUMENT.read_text("utf-8").strip()) / 4
    for row in rows:
        combined, parallel = row["combined_prompt"], row["parallel_prompt"]
        assert combined["context_chars"] > 10_000 and combined["cached_prompt_tokens"] == 0
        # N requests, the first computes the document, the others read it from cache
        assert parallel["requests"] == row["n"]
        cached = parallel["cached_prompt_tokens"]
        assert (row["n"] - 1) * 0.95 * doc_tokens <= cached <= (row["n"] - 1) * 1.02 * doc_tokens
