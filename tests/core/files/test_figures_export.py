"""Figures exported from a recording: the CSV has one row per request with the documented
columns and the figure set's values; the JSON is the bench document, split by group for a
window run, with the speed-up the run had when it was recorded."""

from __future__ import annotations

import csv
import io

import pytest

from paths import ROOT
from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.files import figures_export
from splitdesk.core.files.figures_export import CSV_COLUMNS, figures_csv, figures_json
from splitdesk.core.files.recording import load_recording, rebuild_state

BATCHING = ROOT / "resources" / "demos" / "batching.splitdesk.json"


def test_csv_has_one_row_per_request_with_the_figure_sets_values() -> None:
    recording = load_recording(BATCHING)
    rows = list(csv.DictReader(io.StringIO(figures_csv(recording))))
    state = rebuild_state(recording.runs[0])
    assert len(rows) == len(state.requests) == 6
    assert tuple(rows[0]) == CSV_COLUMNS
    for column in CSV_COLUMNS:  # every column is documented in the module docstring
        assert f"\n{column} " in (figures_export.__doc__ or "")
    for row, trace in zip(rows, state.requests, strict=True):
        f = request_figures(trace)
        assert row["group"] == f.group and int(row["req"]) == f.req
        assert float(row["ttft_s"]) == pytest.approx(f.ttft_s, abs=1e-6)
        assert float(row["e2e_s"]) == pytest.approx(f.e2e_s, abs=1e-6)
        assert int(row["output_tokens"]) == f.output_tokens
        assert row["outcome"] == "done"
    assert rows[0]["questions"] == "1 2 3 4 5" and rows[3]["questions"] == "3"


def test_json_is_the_bench_document_split_by_group() -> None:
    recording = load_recording(BATCHING)
    doc = figures_json(recording)
    assert [r["mode"] for r in doc["runs"]] == ["combined", "parallel"]
    assert [len(r["requests"]) for r in doc["runs"]] == [1, 5]
    recorded = recording.runs[0].figures
    assert doc["summary"]["speedup"] == pytest.approx(recorded["speedup"], abs=1e-3)
    assert doc["runs"][0]["wall_s"] == pytest.approx(
        recorded["groups"]["combined"]["makespan_s"], abs=1e-6
    )
    assert doc["endpoint"]["profile"] == "batching"
    assert doc["questions"] == recording.question_texts
