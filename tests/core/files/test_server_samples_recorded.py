"""The server lane's samples in recordings (``RunRecord.server``) and in the Chrome trace:
they survive a save and a load exactly, an older file without them still loads, a damaged
column is refused with its field path, and the trace carries them as counter events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paths import RECORDINGS
from splitdesk.core.files.recording import (
    RecordingError,
    encode_recording,
    load_recording,
    parse_recording,
)
from splitdesk.core.files.trace_events import trace_document
from splitdesk.core.measure.server_metrics import (
    LoadSample,
    ServerLoad,
    ServerSeriesRecord,
    load_series,
    series_of,
    series_record,
)

FIXTURE = RECORDINGS / "v1.splitdesk.json"
T0 = 1_000_000_000  # a run's origin, perf_counter_ns


def _samples() -> list[LoadSample]:
    """A vLLM-like run: batch 1, then 5 with one queued, then back to 1 (KV fraction)."""
    rows = [(0.1, 1, 0, 0.02), (0.35, 5, 1, 0.11), (0.6, 5, 0, 0.14), (0.85, 1, 0, 0.05)]
    return [
        LoadSample(T0 + int(t * 1e9), ServerLoad("vllm", r, w, kv, "fraction"))
        for t, r, w, kv in rows
    ] + [LoadSample(T0 - 5_000_000, ServerLoad("vllm", 9, 9, 0.9, "fraction"))]  # before t0


def test_samples_survive_save_and_load_and_an_old_file_has_none(tmp_path: Path) -> None:
    old = load_recording(FIXTURE)
    assert old.runs[0].server is None  # written before the field existed: still loads
    assert series_of(old.runs[0].server) is None

    record = series_record(load_series(_samples(), T0))
    assert record == ServerSeriesRecord(
        family="vllm",
        kv_unit="fraction",
        t_s=[0.1, 0.35, 0.6, 0.85],  # the sample before the origin is left out
        running=[1.0, 5.0, 5.0, 1.0],
        waiting=[0.0, 1.0, 0.0, 0.0],
        kv=[0.02, 0.11, 0.14, 0.05],
    )
    run = old.runs[0].model_copy(update={"server": record})
    rec = old.model_copy(update={"runs": [run]})
    back = parse_recording(encode_recording(rec), "test")
    assert back.runs[0].server == record
    doc = json.loads(encode_recording(rec))
    assert doc["runs"][0]["server"]["running"] == [1.0, 5.0, 5.0, 1.0]
    assert set(doc["runs"][0]["server"]) == {
        "family",
        "kv_unit",
        "t_s",
        "running",
        "waiting",
        "kv",
        "cache_hit_rate",
    }
    series = series_of(back.runs[0].server)
    assert series is not None
    assert series.at(0.3, 0.7) == [5.0, 5.0] and series.peak_kv == 0.14
    assert series.until(0.4).running == [1.0, 5.0]


def test_a_server_without_kv_keeps_no_kv_column() -> None:
    samples = [
        LoadSample(T0 + 100_000_000, ServerLoad("tgi", 4.0, 3.0, None, "fraction")),
        LoadSample(T0 + 350_000_000, ServerLoad("tgi", 2.0, 0.0, None, "fraction")),
    ]
    record = series_record(load_series(samples, T0))
    assert record is not None and record.kv is None
    series = series_of(record)
    assert series is not None and not series.has_kv and series.peak_kv is None
    assert series_record(load_series([], T0)) is None  # no sample: no record


@pytest.mark.parametrize(
    ("server", "field", "words"),
    [
        ({"running": [1.0]}, "runs[0].server", "one value per sample"),
        ({"kv": [0.1]}, "runs[0].server", "kv must have one value per sample"),
        ({"t_s": [0.1, "soon"]}, "runs[0].server.t_s[1]", "valid number"),
        ({"family": 3}, "runs[0].server.family", "valid string"),
    ],
)
def test_a_damaged_server_column_is_refused_with_its_field(
    server: dict[str, Any], field: str, words: str
) -> None:
    doc = json.loads(FIXTURE.read_text("utf-8"))
    good = {"family": "vllm", "t_s": [0.1, 0.2], "running": [1.0, 2.0], "waiting": [0, 0]}
    doc["runs"][0]["server"] = good | server
    with pytest.raises(RecordingError) as err:
        parse_recording(json.dumps(doc).encode(), "bad.splitdesk.json")
    assert err.value.field == field and words in str(err.value), str(err.value)


def test_nan_in_a_server_column_is_refused() -> None:
    doc = json.loads(FIXTURE.read_text("utf-8"))
    doc["runs"][0]["server"] = {"family": "vllm", "t_s": [0.1], "running": [1.0], "waiting": [0]}
    text = json.dumps(doc).replace('"running": [1.0]', '"running": [NaN]')
    with pytest.raises(RecordingError, match=r"runs\[0\]\.server\.running\[0\]"):
        parse_recording(text.encode(), "nan.splitdesk.json")


def test_trace_has_server_counters_only_when_the_recording_has_samples() -> None:
    old = load_recording(FIXTURE)
    assert not [e for e in trace_document(old)["traceEvents"] if e.get("cat") == "server"]

    run = old.runs[0].model_copy(update={"server": series_record(load_series(_samples(), T0))})
    doc = trace_document(old.model_copy(update={"runs": [run]}))
    server = [e for e in doc["traceEvents"] if e.get("cat") == "server"]
    batch = [(e["ts"], e["args"]) for e in server if e["name"] == "server batch"]
    assert batch == [
        (100000.0, {"running": 1.0, "waiting": 0.0}),
        (350000.0, {"running": 5.0, "waiting": 1.0}),
        (600000.0, {"running": 5.0, "waiting": 0.0}),
        (850000.0, {"running": 1.0, "waiting": 0.0}),
    ]
    kv = [(e["ts"], e["args"]) for e in server if e["name"] == "server KV cache"]
    assert kv == [
        (100000.0, {"kv %": 2.0}),
        (350000.0, {"kv %": 11.0}),
        (600000.0, {"kv %": 14.0}),
        (850000.0, {"kv %": 5.0}),
    ]
    assert all(e["ph"] == "C" and e["pid"] == 1 for e in server)

    no_kv = series_record(
        load_series([LoadSample(T0 + 10**8, ServerLoad("tgi", 4, 3, None, "fraction"))], T0)
    )
    run = old.runs[0].model_copy(update={"server": no_kv})
    doc = trace_document(old.model_copy(update={"runs": [run]}))
    names = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "server"}
    assert names == {"server batch"}  # no KV track at all for a server without one
