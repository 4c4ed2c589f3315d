"""``splitdesk bench --endpoint builtin --api <dialect>`` for every dialect besides
openai-chat (``test_cli_bench.py``): the built-in endpoint speaks it, the runner reads it,
the combined reply's five answers are found, usage is the server's, and the speed-up is
the cost model's prediction within 10 %.

Answers are kept short (``answer_tokens=40`` at 4× speed: ~2.5 s per dialect, all modes)."""

from __future__ import annotations

import json

import pytest
from starved import bench_slips, on_schedule

from bench_contract import BenchDocument
from splitdesk.cli.main import main
from splitdesk.dialects import API_NAMES as APIS
from splitdesk.providers import PROVIDERS

DIALECTS = [api for api in APIS if api != "openai-chat"]


def test_every_cli_dialect_has_a_provider() -> None:
    assert set(APIS) <= set(PROVIDERS)


@pytest.mark.parametrize("api", DIALECTS)
def test_bench_on_the_builtin_endpoint(api: str, capsys: pytest.CaptureFixture[str]) -> None:
    def measure() -> tuple[int, str, str]:
        code = main(
            [
                "bench",
                "--endpoint",
                "builtin",
                "--api",
                api,
                "--sim-param",
                "speed=4",
                "--sim-param",
                "answer_tokens=40",
                "--mode",
                "all",
                "--json",
                "-",
            ]
        )
        out, err = capsys.readouterr()
        return code, out, err

    def check(result: tuple[int, str, str]) -> None:
        code, out, err = result
        assert code == 0, err
        s = json.loads(out)["summary"]
        assert s["predicted_speedup"] > 3
        assert abs(s["speedup"] - s["predicted_speedup"]) <= 0.10 * s["predicted_speedup"], s

    # a starved endpoint's late steps are in the wall times, not the model: starved.py
    _, out, _ = on_schedule(measure, check, lambda result: bench_slips(json.loads(result[1])))
    doc = json.loads(out)
    parsed = BenchDocument.model_validate(doc)
    assert parsed.endpoint.api == api
    assert [r.mode for r in parsed.runs] == ["combined", "parallel", "sequential"]
    combined = parsed.runs[0].requests[0]
    assert [s.question for s in combined.sections] == [0, 1, 2, 3, 4]
    for run in parsed.runs:
        for r in run.requests:
            assert r.error is None and r.ttft_s is not None
            assert r.tokens_source == "usage" and r.output_tokens > 20
    assert doc["summary"]["predicted_speedup"] > 3  # checked in check(), kept on schedule
