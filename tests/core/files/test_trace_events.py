"""The Perfetto / Chrome trace of a recording: valid Trace Event Format (required keys on
every event), one track per request named like its lane, wait → streaming → answer spans
on the figure set's times, and a tokens/s counter whose area is the output tokens."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from paths import ROOT
from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.files.recording import load_recording, rebuild_state
from splitdesk.core.files.trace_events import RATE_BIN_S, REQUIRED_KEYS, token_rate, trace_document

DEMOS = ROOT / "resources" / "demos"
BATCHING = DEMOS / "batching.splitdesk.json"
RATE_LIMITED = DEMOS / "rate-limited.splitdesk.json"


def _doc(path: Path) -> dict:
    # through JSON text, as a trace viewer reads it
    return json.loads(json.dumps(trace_document(load_recording(path))))


def test_every_event_has_the_required_keys_and_one_track_per_request() -> None:
    doc = _doc(BATCHING)
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ms"
    for ev in events:
        assert all(k in ev for k in REQUIRED_KEYS), ev
        assert ev["ph"] in ("M", "X", "i", "C")
        if ev["ph"] == "X":
            assert ev["dur"] >= 0
    run = load_recording(BATCHING).runs[0]
    state = rebuild_state(run)
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(names) == [t.req + 1 for t in state.requests]  # one track per request
    assert names[1] == "combined · Q1–Q5" and names[2] == "parallel · Q1"
    span_tids = {e["tid"] for e in events if e["ph"] == "X"}
    assert span_tids == set(names)


def test_spans_are_the_figure_sets_times() -> None:
    doc = _doc(BATCHING)
    state = rebuild_state(load_recording(BATCHING).runs[0])
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for trace in state.requests:
        f = request_figures(trace)
        mine = {e["name"]: e for e in spans if e["tid"] == trace.req + 1}
        assert f.t_send is not None and f.t_first_output is not None
        assert mine["wait"]["ts"] == pytest.approx(f.t_send * 1e6, abs=0.01)
        assert mine["wait"]["dur"] == pytest.approx((f.t_first_output - f.t_send) * 1e6, abs=0.01)
        assert mine["streaming"]["ts"] == pytest.approx(f.t_first_output * 1e6, abs=0.01)
        end = mine["streaming"]["ts"] + mine["streaming"]["dur"]
        assert end == pytest.approx(f.t_last_token * 1e6, abs=0.01)
        answers = [e for n, e in mine.items() if n.startswith("answer ")]
        assert len(answers) == len(trace.questions)  # 5 sections in the combined reply
        for a in answers:  # nested inside streaming, as a viewer stacks them
            assert mine["streaming"]["ts"] <= a["ts"]
            assert a["ts"] + a["dur"] <= end + 0.01


def test_back_offs_show_on_a_rate_limited_run() -> None:
    doc = _doc(RATE_LIMITED)
    state = rebuild_state(load_recording(RATE_LIMITED).runs[0])
    retried = sum(len(request_figures(t).backoffs) for t in state.requests if t.t_send is not None)
    assert retried > 0
    assert Counter(e["name"] for e in doc["traceEvents"])["back-off"] == retried


def test_the_tokens_per_second_counter_adds_up_to_the_output_tokens() -> None:
    state = rebuild_state(load_recording(BATCHING).runs[0])
    rates = token_rate(state.requests)
    assert set(rates) == {"combined", "parallel"}
    for group, series in rates.items():
        tokens = sum(request_figures(t).output_tokens for t in state.requests if t.group == group)
        assert sum(r for _, r in series) * RATE_BIN_S == pytest.approx(tokens, rel=1e-3)
    doc = _doc(BATCHING)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters and all(e["name"] == "tokens/s" for e in counters)
    with pytest.raises(ValueError, match="bin_s"):
        token_rate(state.requests, 0)
