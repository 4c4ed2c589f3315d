"""``splitdesk bench`` prints the diagnosis line and writes it to its JSON, with the
speed-up split into the prompt's shape and concurrency (real built-in endpoint)."""

from __future__ import annotations

import json

import pytest

from bench_contract import BenchDocument
from splitdesk.cli.main import main


@pytest.mark.parametrize(
    ("profile", "code", "concurrency"),
    [("batching", "batching", (3.0, 6.0)), ("single-slot", "one-at-a-time", (0.85, 1.15))],
)
def test_bench_diagnoses_and_splits_the_speed_up(
    profile: str,
    code: str,
    concurrency: tuple[float, float],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--profile", profile, "--sim-param", "speed=4", "--max-tokens", "80"]
    status = main(["bench", *args, "--json", "-"])
    out, table = capsys.readouterr()
    assert status == 0
    doc = json.loads(out)
    BenchDocument.model_validate(doc)
    s = doc["summary"]
    assert s["diagnosis"]["code"] == code
    # the printed line is the JSON's text, word for word
    assert f"Diagnosis:            {s['diagnosis']['text']}" in table.splitlines()
    lo, hi = concurrency
    assert lo <= s["concurrency_factor"] <= hi
    assert s["prompt_shape_factor"] * s["concurrency_factor"] == pytest.approx(
        s["speedup"], rel=1e-3
    )
    assert "Speed-up split:" in table


def test_refused_requests_are_diagnosed_as_a_rate_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--profile", "rate-limited", "--mode", "parallel", "--sim-param", "speed=4"]
    status = main(["bench", *args, "--max-tokens", "40", "--json", "-"])
    out, table = capsys.readouterr()
    assert status == 1
    s = json.loads(out)["summary"]
    assert s["diagnosis"]["code"] == "rate-limited"
    assert s["diagnosis"]["evidence"]["parallel_refused"] == 3
    assert "prompt_shape_factor" not in s  # nothing to decompose without the baseline
    assert "3 of 5 parallel requests refused with HTTP 429" in table


def test_rate_limited_bench_drops_the_prediction_that_ignores_429s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the cost model predicts an idle server without refusals: on a rate-limited run it
    # would sit beside the measured speed-up as if it applied
    args = ["--profile", "rate-limited", "--sim-param", "speed=4", "--max-tokens", "40"]
    status = main(["bench", *args, "--mode", "all", "--json", "-"])
    out, table = capsys.readouterr()
    assert status == 1
    doc = json.loads(out)
    s = doc["summary"]
    assert s["predicted_speedup"] is None
    assert s["predicted_note"] == "prediction ignores the rate limit"
    parallel = [r for r in doc["runs"] if r["mode"] == "parallel"]
    assert parallel and all(r["predicted_wall_s"] is None for r in parallel)
    assert "Predicted:            not shown: the prediction ignores the rate limit" in table


def test_unreachable_endpoint_is_a_failure_diagnosis_with_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # port 9 (discard) has no listener on loopback: every request is refused at connect
    args = ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--mode", "parallel"]
    status = main(["bench", *args, "--json", "-"])
    out, table = capsys.readouterr()
    assert status == 1
    doc = json.loads(out)
    BenchDocument.model_validate(doc)
    d = doc["summary"]["diagnosis"]
    assert d["code"] == "failed"
    assert d["text"].startswith("every request failed (5 of 5): cannot connect to 127.0.0.1:9")
    assert "no clear pattern" not in table
    errors = [line for line in table.splitlines() if line.startswith("  ! ")]
    assert len(errors) == 1, errors  # five identical errors: one line with the count
    assert errors[0].startswith("  ! 5 requests (parallel Q1–Q5): cannot connect to 127.0.0.1:9")
    assert "request 0" not in table  # numbered like the table (Q1…), never from 0
