"""``splitdesk sweep`` end to end: the built-in endpoint in a child process, real loopback
HTTP, one row per N, the JSON document and one-line errors."""

from __future__ import annotations

import json

import pytest
from starved import on_schedule

from splitdesk.cli.main import main
from splitdesk.core.bench.sweep import sweep_questions


def test_sweep_on_batching_matches_the_cost_model_at_every_n(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Medians of 3 repeats: one scheduling hiccup of the client on a busy shared machine
    # (seen once: N=1 measured 0.79x against 0.98x) does not decide a row. Answers of ~40
    # tokens at speed 6 (~3 ms steps) keep the 48 runs at ~19 s of requests; measured
    # within 5 % of the model at every N under a load of 4.7 on two cores (speed 8 came
    # within 11 %, too close to the 10 % bound; speed 3 took ~38 s). A row measured while
    # the endpoint itself was starved of CPU (its steps ran late: endpoint_slip_s) does
    # not test the model; starved.py measures again.
    args = ["sweep", "--max-n", "8", "--repeat", "3", "--sim-param", "speed=6"]
    args += ["--sim-param", "answer_tokens=40", "--json", "-"]

    def measure() -> tuple[int, str, str]:
        code = main(args)
        out, table = capsys.readouterr()
        return code, out, table

    def check(result: tuple[int, str, str]) -> None:
        code, out, table = result
        assert code == 0, table
        for r in json.loads(out)["rows"]:
            assert r["predicted_speedup"] is not None and r["speedup"] is not None
            assert abs(r["speedup"] - r["predicted_speedup"]) <= 0.10 * r["predicted_speedup"], r

    def slips(result: tuple[int, str, str]) -> list[tuple[str, float | None, float | None]]:
        rows = json.loads(result[1])["rows"]  # the shorter (parallel) wall: the stricter share
        return [(f"N={r['n']}", r["parallel_wall_s"], r["endpoint_slip_s"]) for r in rows]

    _, out, table = on_schedule(measure, check, slips)
    doc = json.loads(out)
    rows = doc["rows"]
    assert [r["n"] for r in rows] == list(range(1, 9))
    assert doc["generated_questions"] == 3  # the default set holds five questions
    assert len(set(doc["questions"])) == 8
    for r in rows:
        assert len(r["speedup_range"]) == 2
        assert not r["failed"]
    assert rows[-1]["speedup"] > 4.0  # batching: eight requests share the decode steps
    assert "speed-up" in table and "3 of the 8 questions were generated" in table


def test_sweep_questions_take_the_set_first_then_generate_distinct_ones() -> None:
    qs, generated = sweep_questions(["a?", "b?"], 45)
    assert qs[:2] == ["a?", "b?"] and generated == 43 and len(set(qs)) == 45
    assert sweep_questions(["a?", "b?", "c?"], 2) == (["a?", "b?"], 0)
    with pytest.raises(ValueError, match="max_n"):
        sweep_questions(["a?"], 0)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-n", "0"], "--max-n must be between 1 and 64"),
        (["--max-n", "3", "--mode", "parallel"], "--mode is not a sweep option"),
        (["--max-n", "3", "--repeat", "0"], "--repeat 0: must be 1–1,000"),
        (["--max-n", "3", "--endpoint", "ftp://x"], "expected 'builtin' or an http(s):// URL"),
    ],
)
def test_bad_sweep_arguments_exit_2_with_one_line(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("splitdesk sweep: error:") and words in err
    assert len(err.strip().splitlines()) == 1
