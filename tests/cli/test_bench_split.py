"""``splitdesk bench --repeat``: the speed-up split beside the median latencies is taken from
those medians, in the printed line and in the JSON (real built-in endpoint)."""

from __future__ import annotations

import json

import pytest

from splitdesk.cli.main import main


def test_split_over_repeats_is_the_ratio_of_the_printed_medians(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--mode", "all", "--repeat", "3", "--sim-param", "speed=80", "--max-tokens", "20"]
    status = main(["bench", *args, "--json", "-"])
    out, table = capsys.readouterr()
    assert status == 0
    s = json.loads(out)["summary"]
    c, p, q = s["combined_wall_s"], s["parallel_wall_s"], s["sequential_wall_s"]
    shape, conc = s["prompt_shape_factor"], s["concurrency_factor"]
    # the medians' ratios, to well within 2 decimals (JSON rounds to 6 and 4 decimals)
    assert shape == pytest.approx(c / q, abs=1e-3)
    assert conc == pytest.approx(q / p, abs=1e-3)
    line = next(x for x in table.splitlines() if x.startswith("Speed-up split:"))
    assert f"{shape:.2f}× prompt shape" in line
    assert f"{conc:.2f}× concurrency" in line
    assert "ratios of the median latencies" in line
