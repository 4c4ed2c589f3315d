"""``splitdesk bench`` prints the diagnosis line and writes it to its JSON, with the
speed-up split into the prompt's shape and concurrency (real built-in endpoint)."""

from __future__ import annotations

import json

import pytest

from bench_contract import BenchDocument
from splitdesk.cli import main


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
