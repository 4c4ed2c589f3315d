"""``splitdesk bench --repeat`` (issue 12): sides alternate which goes first, warm-up rounds
are discarded, every run's prompts open with their own nonce unless --no-nonce."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splitdesk.cli.main import main
from splitdesk.core.files.recording import load_recording, rebuild_state

FAST = ["--sim-param", "speed=8", "--max-tokens", "20", "-q", "Why?", "-q", "How?"]


def _prompts(path: Path) -> list[list[str]]:
    """Each mode's prompts of each repeat (a repeat's run holds its modes as phases)."""
    out = []
    for run in load_recording(path).runs:
        requests = rebuild_state(run).requests
        for phase in sorted({t.phase for t in requests}):
            out.append([t.prompt for t in requests if t.phase == phase])
    return out


def test_repeats_alternate_discard_warmup_and_use_a_nonce_per_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rec = tmp_path / "r.splitdesk.json"
    args = [*FAST, "--mode", "all", "--repeat", "2", "--warmup", "1", "--record", str(rec)]
    assert main(["bench", *args, "--json", "-"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [(r["mode"], r["repeat"]) for r in doc["runs"]] == [
        ("combined", 0),
        ("parallel", 0),
        ("sequential", 0),
        ("parallel", 1),  # the second repeat sends parallel first
        ("combined", 1),
        ("sequential", 1),
    ]
    assert doc["repeats"]["warmup"] == 1 and doc["repeats"]["nonce"] is True
    assert err.count("warm-up, discarded") == 3  # run, but not in the results
    assert "a per-run nonce opens every prompt" in err
    prompts = _prompts(rec)
    assert len(prompts) == 6
    firsts = [p.split("\n", 1)[0] for run in prompts for p in run]
    assert all(f.startswith("[run ") for f in firsts)
    nonces = {run[0].split("\n", 1)[0] for run in prompts}
    assert len(nonces) == 6  # a different nonce in every run
    assert all(len({p.split("\n", 1)[0] for p in run}) == 1 for run in prompts)
    # the same per-run figures the window's repeat results show (core/repeats.repeats_json)
    rep = doc["repeats"]
    assert rep["alternate"] is True and [r["repeat"] for r in rep["runs"]] == [0, 1]
    assert (
        [r["order"] for r in rep["runs"]]
        == rep["order"]
        == [
            ["combined", "parallel", "sequential"],
            ["parallel", "combined", "sequential"],
        ]
    )
    walls = {(r["mode"], r["repeat"]): r["wall_s"] for r in doc["runs"]}
    for row in rep["runs"]:
        k = row["repeat"]
        assert row["makespan_s"] == {m: walls[(m, k)] for m in row["order"]}
        ratio = walls[("combined", k)] / walls[("parallel", k)]
        assert row["speedup"] == pytest.approx(ratio, abs=1e-4)  # both rounded
        assert row["nonce"].split() == [
            p[0].split("\n", 1)[0][5:-1] for p in prompts[3 * k : 3 * k + 3]
        ]


def test_no_nonce_sends_identical_prompts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rec = tmp_path / "r.splitdesk.json"
    args = [*FAST, "--mode", "parallel", "--repeat", "2", "--no-nonce", "--record", str(rec)]
    assert main(["bench", *args, "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["repeats"]["nonce"] is False
    assert "no nonce: repeated prompts may hit the server's prefix cache" in err
    first, second = _prompts(rec)
    assert first == second == ["Why?", "How?"]


def test_bad_warmup_and_pause_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--warmup", "-1"]) == 2
    assert "--warmup -1: must be 0–100" in capsys.readouterr().err
    assert main(["bench", "--pause", "nan"]) == 2
    assert "--pause nan: must be a finite number" in capsys.readouterr().err
