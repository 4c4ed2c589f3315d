"""A shared context through the files people keep: a scenario's bench options carry its
set's document, a recorded run saved and loaded keeps every request's system message,
context, prompt and cached tokens and the predictions' figures, and its exports (CSV,
Perfetto trace) carry the prompt and cache figures and the server's prefill."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.bench.compare import run_bench
from splitdesk.core.bench.scenarios import bench_options
from splitdesk.core.files.figures_export import figures_csv
from splitdesk.core.files.recording import load_recording, plan_of, rebuild_state
from splitdesk.core.files.scenarios import builtin_scenarios
from splitdesk.core.files.trace_events import trace_document
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.sim.launcher import start_sim


def test_a_document_scenario_sends_its_document_with_the_cache_it_names() -> None:
    opts = bench_options(builtin_scenarios()["document-compute-bound-cache"], speed=4)
    assert opts.context.startswith("HARBOUR STREET COMMUNITY TOOL LIBRARY")
    assert opts.sim_params["prefix_cache"] is True  # a boolean, not 1.0
    assert opts.nonce_on  # each side prefills its own document


def test_a_recorded_document_run_keeps_and_exports_its_prompt_figures(tmp_path: Path) -> None:
    opts = bench_options(builtin_scenarios()["document-batching-cache"], speed=8)
    opts.template = CombinedTemplate(context_as="system")
    opts.mode, opts.max_tokens = "parallel", 24
    opts.record_path = str(tmp_path / "run.splitdesk.json")
    out, err = io.StringIO(), io.StringIO()
    assert run_bench(opts, out, err, launch=start_sim) == 0, err.getvalue()
    recording = load_recording(Path(opts.record_path))
    (run,) = recording.runs
    state = rebuild_state(run)
    assert all(t.system is not None and "HARBOUR STREET" in t.system for t in state.requests)
    assert {t.context_chars for t in state.requests} == {len(opts.context.strip())}
    assert all(s.system is not None for s in plan_of(run).requests)  # a replay's plan too
    cached = [t.usage_cached_prompt_tokens for t in state.requests]
    assert sorted(c or 0 for c in cached)[0] == 0 and sum(1 for c in cached if c) == 4
    assert run.predictions is not None
    assert [p.cached_prompt_tokens for p in run.predictions] == cached  # the model agrees

    rows = list(csv.DictReader(io.StringIO(figures_csv(recording))))
    for row, trace in zip(rows, state.requests, strict=True):
        f = request_figures(trace)
        assert row["prompt_tokens"] == str(f.prompt_tokens)
        assert row["cached_prompt_tokens"] == str(f.cached_prompt_tokens)
        assert f.split is not None and f.split.prefill_s is not None
        assert row["prefill_s"] == f"{f.split.prefill_s:.6f}"

    events = trace_document(recording)["traceEvents"]
    prefills = [e for e in events if e.get("name") == "prefill"]
    assert len(prefills) == len(state.requests)
    for e in prefills:
        wait = next(w for w in events if w.get("name") == "wait" and w["tid"] == e["tid"])
        assert wait["ts"] <= e["ts"] and e["ts"] + e["dur"] <= wait["ts"] + wait["dur"] + 1
        assert e["args"]["prompt_tokens"] > 2000
