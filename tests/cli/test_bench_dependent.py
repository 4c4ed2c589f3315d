"""``splitdesk bench --mode dependent``: the combined request against the chain of
dependent questions, on the built-in endpoint over real loopback HTTP. The table has a row
for the chain and the Diagnosis line compares the two makespans (the JSON's own figures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench_contract import BenchDocument
from splitdesk.cli.main import main


def test_dependent_bench_prints_the_chain_row_and_compares_it_with_combined(
    sim_batching: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "bench",
            "--mode",
            "dependent",
            "--endpoint",
            sim_batching.openai_base_url,
            "--api",
            "openai-chat",
            "--model",
            "splitdesk-sim",
            "--max-tokens",
            "8",
            "-q",
            "What is 2+2?",
            "-q",
            "Double that.",
            "--json",
            "-",
        ]
    )
    out, table = capsys.readouterr()
    assert code == 0, table
    doc = json.loads(out)
    BenchDocument.model_validate(doc)
    walls = {r["mode"]: r["wall_s"] for r in doc["runs"]}
    assert set(walls) == {"combined", "chain"}
    combined, chain = walls["combined"], walls["chain"]
    rows = [line for line in table.splitlines() if line.startswith("Chained requests:")]
    assert len(rows) == 1, table
    assert rows[0].split()[2:4] == [f"{chain:.2f}", "s"], rows[0]
    faster = "sooner" if combined < chain else "later"
    why = (
        f"the combined request finished in {combined:.1f} s, the chain of 2 requests in "
        f"{chain:.1f} s — combining finished {abs(chain - combined):.1f} s {faster}."
    )
    diagnosis = doc["summary"]["diagnosis"]
    assert diagnosis["code"] == "chained" and diagnosis["text"] == why
    assert f"Diagnosis:            {why}" in table.splitlines()
    assert "parallel" not in diagnosis["text"]
