"""``splitdesk bench --price-in/--price-out``: tokens and cost per side from usage."""

from __future__ import annotations

import json

import pytest

from splitdesk.cli.main import main
from splitdesk.core.analyse.cost import format_costs


def test_bench_cost_per_side_from_usage(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "--sim-param", "speed=8", "--max-tokens", "40"]
    assert main([*args, "--price-in", "3", "--price-out", "15", "--json", "-"]) == 0
    out, table = capsys.readouterr()
    doc = json.loads(out)
    cost = doc["cost"]
    assert cost["prices"] == {
        "input_per_m": 3.0,
        "output_per_m": 15.0,
        "cached_input_per_m": None,
    }
    for side in ("combined", "parallel"):
        s = cost["sides"][side]
        run = next(r for r in doc["runs"] if r["mode"] == side)
        assert s["complete"] and s["output_tokens"] == run["output_tokens"]
        assert s["cost"] == pytest.approx(
            s["prompt_tokens"] * 3 / 1e6 + s["output_tokens"] * 15 / 1e6
        )
    c, p = cost["sides"]["combined"], cost["sides"]["parallel"]
    ratio = (p["prompt_tokens"] + p["output_tokens"]) / (c["prompt_tokens"] + c["output_tokens"])
    assert cost["token_ratio"] == pytest.approx(ratio, abs=1e-4)
    assert cost["tradeoff"] == f"{doc['summary']['speedup']:.1f}× faster, {ratio:.1f}× the tokens"
    assert "Trade-off:" in table and "cost 0.00" in table
    # each side's cost line as the window's summary prints it (one format: digits enough
    # that two costs that differ never print alike, as 0.0004 did on both sides)
    sides = [g for g in ("combined", "parallel", "sequential") if g in cost["sides"]]
    shown = format_costs([cost["sides"][g]["cost"] for g in sides])
    for g, figure in zip(sides, shown, strict=True):
        line = next(x for x in table.splitlines() if x.startswith(f"Tokens {g}:"))
        assert line.endswith(f" · cost {figure}"), line
    if cost["sides"]["combined"]["cost"] != cost["sides"]["parallel"]["cost"]:
        assert shown[0] != shown[1], shown


def test_no_prices_no_cost(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "--mode", "parallel", "--sim-param", "speed=8", "--max-tokens", "20"]
    assert main([*args, "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cost"]["prices"] is None
    assert doc["cost"]["sides"]["parallel"]["cost"] is None


def test_one_price_alone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--price-in", "3"]) == 2
    assert "--price-in and --price-out go together" in capsys.readouterr().err
