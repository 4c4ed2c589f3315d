"""``splitdesk bench`` against a built-in endpoint injecting every fault: exit status 1,
each faulted request's JSON ``error`` names the cause and keeps what arrived, the clean
requests have no error (the fault catalogue and expectations: ``tests/faultcases.py``)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import faultcases
import pytest

from splitdesk.cli.main import main
from splitdesk.providers import get_provider
from splitdesk.sim.launcher import SimProcess, start_sim


@pytest.fixture(scope="module")
def fault_sim() -> Iterator[SimProcess]:
    sim = start_sim("batching", faultcases.SIM_OVERRIDES)
    try:
        yield sim
    finally:
        sim.stop()


@pytest.mark.parametrize("api", ["openai-chat", "anthropic", "ollama-generate", "tgi"])
def test_bench_reports_each_fault_and_fails(
    api: str, fault_sim: SimProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(faultcases.arm(fault_sim.url))
    args = ["bench", "--endpoint", get_provider(api).base_url_for_root(fault_sim.url)]
    args += ["--api", api, "--model", "splitdesk-sim", "--mode", "parallel", "--json", "-"]
    args += ["--read-timeout", str(faultcases.READ_TIMEOUT_S)]
    for q in faultcases.questions():
        args += ["-q", q]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 1, err  # some requests failed
    doc = json.loads(out)
    (run,) = doc["runs"]
    cases = [*faultcases.CASES, *[None] * len(faultcases.CLEAN)]
    assert len(run["requests"]) == len(cases)
    for case, r in zip(cases, run["requests"], strict=True):
        if case is None or case.kind is None:
            assert r["error"] is None, (case, r["error"])
            assert r["output_tokens"] == len(r["event_times_s"]) > 0
            continue
        assert r["error"]["kind"] == str(case.kind), (case.fault, r["error"])
        assert re.search(case.words, r["error"]["message"]), (case.fault, r["error"])
        if case.events is not None:
            assert len(r["event_times_s"]) == case.events, case.fault
        if r["event_times_s"]:  # partial text with its timings
            assert r["text"] and r["ttft_s"] is not None
