"""One figure, one value, everywhere (issue 8, "One definition per figure").

One parallel plan over real HTTP (loopback, :mod:`scripted_server`) holds an ordinary
answer, a reasoning-only reply, a tool-call-only reply, a server error, a stream the user
stops, and a request refused with 429 then answered. The test reads each request's
figures where a user meets them — the pane header, the timeline's segments and their
hover text, the summary strip, the bench table, the bench JSON — and asserts they agree
with each other (at each place's precision) and hold the right values.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from scripted_server import ScriptedServer

from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.bench.table import format_table
from splitdesk.core.files.report import BenchRun, bench_document
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.events import (
    HeadersReceived,
    RequestPlanned,
    RequestRetrying,
    RequestSent,
    RunStarted,
)
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig, ErrorKind, RequestError
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.panes import STATE_LABELS, RequestPane
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import Timeline

QUESTIONS = [
    "[ordinary] Why is the sky blue?",
    "[reasoning] Think about primes.",
    "[tool] Look up the weather.",
    "[fail] What breaks the backend?",
    "[stop] Tell a never-ending story.",
    "[retry] Why do we sleep?",
]
ORDINARY, REASONING, TOOL, FAIL, STOP, RETRY = range(6)


async def wait_for(predicate: Any, what: str, timeout: float = 20.0) -> None:
    """Poll ``predicate`` until it holds; the failure names what was awaited."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


async def run_plan() -> RunState:
    """Run the six-request plan; Stop once every request but the endless one is over."""
    state = RunState()
    async with ScriptedServer(pause=0.02, retry_after=0.3) as server:
        config = RunConfig(EndpointConfig(server.url, "openai-chat", "m"), retry_429=1)
        plan = make_plan("parallel", QUESTIONS, CombinedTemplate(), 64)
        runner = Runner(config, state.apply)
        task = asyncio.ensure_future(runner.run(QUESTIONS, plan))
        await wait_for(
            lambda: (
                len(state.requests) == 6
                and all(r.finished for i, r in enumerate(state.requests) if i != STOP)
                and state.requests[STOP].text_len > 0
            ),
            "every request but the endless one to end, and that one to stream",
        )
        runner.cancel()
        await asyncio.wait_for(task, 10.0)
    return state


def number(pattern: str, text: str) -> float:
    """The number captured by ``pattern`` in ``text`` (fails naming both)."""
    m = re.search(pattern, text)
    assert m is not None, f"{pattern!r} not in {text!r}"
    return float(m.group(1))


@pytest.mark.asyncio
async def test_every_place_shows_the_same_figures(qtbot: Any) -> None:
    # The engine runs on a plain asyncio loop (its own process in the window); qasync's
    # Qt timers may fire a few ms early, which would shorten a Retry-After wait.
    state = await asyncio.to_thread(asyncio.run, run_plan())
    figures = [request_figures(r) for r in state.requests]

    # -- the figures themselves hold the right values ----------------------------------------
    f = figures
    assert [x.outcome for x in f] == ["done", "done", "done", "failed", "stopped", "done"]
    assert f[ORDINARY].tokens_source == "usage" and f[ORDINARY].output_tokens == 7
    assert f[ORDINARY].ttft_s is not None and f[ORDINARY].ttft_answer_s == f[ORDINARY].ttft_s
    assert f[REASONING].ttft_s is not None and f[REASONING].ttft_answer_s is None
    assert f[REASONING].tokens_estimated and f[REASONING].output_tokens == 2
    assert f[TOOL].ttft_s is None and f[TOOL].first_tool_call_s is not None
    assert f[TOOL].output_tokens == 21 and not f[TOOL].tokens_estimated
    assert f[FAIL].error is not None and f[FAIL].error.status == 500
    assert f[FAIL].output_tokens == 0 and not f[FAIL].tokens_estimated  # nothing to estimate
    assert f[STOP].tokens_estimated and f[STOP].output_tokens == 1
    retry = f[RETRY]
    assert retry.attempts == 2 and retry.retries == 1
    (backoff,) = retry.backoffs
    assert backoff.retry_after_s == 0.3 and backoff.status == 429 and backoff.end is not None
    assert backoff.end - backoff.start >= 0.3 - 0.005  # it obeyed Retry-After
    assert retry.ttft_s is not None and retry.attempt_ttft_s is not None
    assert retry.t_send is not None and retry.t_attempt_send is not None
    assert retry.ttft_s == pytest.approx(retry.attempt_ttft_s + retry.t_attempt_send - retry.t_send)
    assert retry.ttft_s - retry.attempt_ttft_s >= 0.3  # the wait is the user's

    # -- bench JSON --------------------------------------------------------------------------
    run = BenchRun("parallel", 0, state)
    doc = bench_document({"url": "u", "api": "openai-chat", "model": "m"}, QUESTIONS, [run])
    (run_doc,) = doc["runs"]
    reqs = run_doc["requests"]
    for x, j in zip(figures, reqs, strict=True):
        assert j["ttft_s"] == (None if x.ttft_s is None else round(x.ttft_s, 6))
        assert j["e2e_s"] == (None if x.e2e_s is None else round(x.e2e_s, 6))
        assert j["output_tokens"] == x.output_tokens
        assert j["tokens_source"] == x.tokens_source
        assert j["tokens_estimated"] == x.tokens_estimated
        assert j["outcome"] == x.outcome and j["attempts"] == x.attempts
    assert reqs[RETRY]["attempt_ttft_s"] == round(retry.attempt_ttft_s, 6)
    (jb,) = reqs[RETRY]["backoffs"]
    assert jb["retry_after_s"] == 0.3 and jb["status"] == 429
    g = run.metrics
    assert run_doc["tokens_estimated_requests"] == [REASONING, STOP]
    assert run_doc["tokens_estimated_note"] == "2 of 5 estimated"
    assert run_doc["output_tokens"] == 7 + 2 + 21 + 0 + 1 + 7 == g.output_tokens
    # makespan keeps the wait: it runs from the first send of any request, the retried
    # one's first send included, to the last token
    sends = [x.t_send for x in figures if x.t_send is not None]
    lasts = [x.t_last_token for x in figures if x.t_last_token is not None]
    assert run_doc["wall_s"] == round(max(lasts) - min(sends), 6)
    assert run_doc["wall_s"] >= reqs[RETRY]["e2e_s"]

    # -- bench table -------------------------------------------------------------------------
    table = format_table(doc, [run])
    for i, x in enumerate(figures):
        line = next(ln for ln in table.splitlines() if f"parallel Q{i + 1} " in ln)
        if x.ttft_s is None:
            assert "TTFT        —" in line
        else:
            assert number(r"TTFT\s+([\d.]+) s", line) == pytest.approx(reqs[i]["ttft_s"], abs=5e-4)
        if reqs[i]["e2e_s"] is None:
            assert "E2E        —" in line
        else:
            e2e = number(r"E2E\s+([\d.]+) s", line)
            assert e2e == pytest.approx(reqs[i]["e2e_s"], abs=5e-3)
        assert number(r"(\d+) tok", line) == reqs[i]["output_tokens"]
        assert ("~" in line) == reqs[i]["tokens_estimated"]
        outcome = re.search(r"tok\s+(\w+)", line)
        assert outcome is not None and outcome.group(1) == reqs[i]["outcome"]
    retry_line = next(ln for ln in table.splitlines() if f"parallel Q{RETRY + 1} " in ln)
    assert number(r"attempt TTFT\s+([\d.]+) s", retry_line) == pytest.approx(
        reqs[RETRY]["attempt_ttft_s"], abs=5e-4
    )
    assert "parallel (repeat 1): 2 of 5 estimated" in table
    header = table.splitlines()[1]
    assert "median over 1 repeat" in header and "range (min–max)" in header
    par_line = next(ln for ln in table.splitlines() if ln.startswith("Parallel requests:"))
    assert number(r"Parallel requests:\s+([\d.]+) s", par_line) == pytest.approx(
        run_doc["wall_s"], abs=5e-3
    )

    # -- pane headers ------------------------------------------------------------------------
    for i, (trace, x) in enumerate(zip(state.requests, figures, strict=True)):
        pane = RequestPane(f"Q{i + 1}", QUESTIONS[i], "#3366cc", DARK)
        qtbot.addWidget(pane)
        pane.resize(900, 300)
        pane.show()
        pane.bind(trace)
        pane.changed(final=True)
        text = pane.stats.full_text()
        assert STATE_LABELS[x.state] in pane.state.text()
        j = reqs[i]
        if i == RETRY:
            # one meaning per word: "TTFT" is the user's (from the first send), as in the
            # summary and the bench table; the answered attempt's is "attempt TTFT"
            assert number(r"^TTFT ([\d.]+) s", text) == pytest.approx(j["ttft_s"], abs=5e-3)
            assert number(r"attempt TTFT ([\d.]+) s", text) == pytest.approx(
                j["attempt_ttft_s"], abs=5e-3
            )
            assert "1 retry after 429" in text
        elif i == FAIL and j["ttft_s"] is None:
            # a failed pane says so, with no placeholder figures that read as still waiting
            assert text == "✕ HTTP 500", text
            assert "backend exploded" in pane.error.text()
            continue
        elif j["ttft_s"] is None:
            assert "TTFT …" in text
        else:
            assert number(r"TTFT ([\d.]+) s", text) == pytest.approx(j["ttft_s"], abs=5e-3)
        assert number(r"(\d+) tok\b", text) == j["output_tokens"]
        if j["e2e_s"] is not None:
            assert number(r"end ([\d.]+) s", text) == pytest.approx(j["e2e_s"], abs=5e-3)
        if j["decode_tok_s"] is not None:
            assert number(r"(\d+) tok/s", text) == pytest.approx(j["decode_tok_s"], abs=0.5)
        if i == FAIL:
            assert "backend exploded" in pane.error.text()

    # -- timeline ----------------------------------------------------------------------------
    timeline = Timeline(DARK)
    qtbot.addWidget(timeline)
    timeline.resize(1000, 400)
    timeline.show()
    timeline.bind(state, QUESTIONS)
    timeline.finish()
    for i, j in enumerate(reqs):
        bars = [b for b in timeline.bars if b.lane == i]
        waits = [b for b in bars if b.kind == "wait"]
        streams = [b for b in bars if b.kind == "stream"]
        last_wait = waits[-1]
        if j["ttft_s"] is not None:
            # TTFT is the user's (from the first send); a retried one's attempt TTFT named
            assert number(r"TTFT ([\d.]+) s", last_wait.tip) == pytest.approx(j["ttft_s"], abs=5e-4)
            expected = j["attempt_ttft_s"] if i == RETRY else j["ttft_s"]
            if i == RETRY:
                shown = number(r"attempt TTFT ([\d.]+) s", last_wait.tip)
                assert shown == pytest.approx(expected, abs=5e-4)
            # the drawn wait is that TTFT, from the answered attempt's send
            assert last_wait.x1 - last_wait.x0 == pytest.approx(expected, abs=1e-6)
        if i == TOOL:
            assert "no TTFT" in last_wait.tip
            assert number(r"first tool call ([\d.]+) s", last_wait.tip) == pytest.approx(
                j["first_tool_call_s"], abs=5e-4
            )
        if j["e2e_s"] is not None and streams:
            # on the run's one clock (seconds since it started), as the server lane
            assert streams[-1].x1 == pytest.approx(j["t_send_s"] + j["e2e_s"], abs=1e-6)
    backoffs = [b for b in timeline.bars if b.kind == "backoff"]
    assert [b.lane for b in backoffs] == [RETRY]
    (bar,) = backoffs
    assert "Retry-After 0.3 s" in bar.tip
    # JSON times are rounded to the microsecond: three of them add up to 2 µs
    j_start = reqs[RETRY]["t_send_s"] + jb["start_s"]
    assert bar.x0 == pytest.approx(j_start, abs=2e-6)
    assert bar.x1 - bar.x0 == pytest.approx(jb["end_s"] - jb["start_s"], abs=2e-6)
    labels = [lb.toPlainText() for lb in timeline.labels if lb.isVisible()]
    assert "Retry-After 0.3 s" in labels

    # -- summary -----------------------------------------------------------------------------
    summary = SummaryStrip(DARK)
    qtbot.addWidget(summary)
    summary.bind(state)
    summary.refresh()
    head, details = summary.headline.text(), summary.details.text()
    # a side with a failed request is counted in the headline, its time is a detail
    assert "Parallel: " in head and "1 of 6 failed (HTTP 500)" in head
    assert number(r"parallel ([\d.]+) s over the 4 that answered", details) == pytest.approx(
        run_doc["wall_s"], abs=0.005
    )
    ttfts = [j["ttft_s"] for j in reqs if j["ttft_s"] is not None]
    lo, hi = number(r"TTFT parallel ([\d.]+)–", details), number(r"–([\d.]+) s", details)
    assert (lo, hi) == (pytest.approx(min(ttfts), abs=5e-3), pytest.approx(max(ttfts), abs=5e-3))
    assert f"output tokens parallel {run_doc['output_tokens']} (parallel: 2 of 5 estimated)" in (
        details
    )
    assert "1 request(s) failed" in details


def test_a_backoff_in_progress_is_drawn_alone(qtbot: Any) -> None:
    """While a refused request waits out its Retry-After, the timeline shows the refused
    attempt's wait, then the back-off growing to "now", and no wait bar over it; the pane
    says it is retrying and when."""
    state = RunState()
    state.clock = lambda: 1.0  # "now", in seconds since the run's origin
    refusal = RequestError(ErrorKind.HTTP, "HTTP 429: slow down", 429, 2.0)
    for event in (
        RunStarted(0.0, "parallel", ("q",), {"url": "u", "api": "openai-chat", "model": "m"}, 0),
        RequestPlanned(0.0, 0, "parallel", (0,), "q"),
        RequestSent(0.0, 0),
        HeadersReceived(0.05, 0, 429),
        RequestRetrying(0.06, 0, 1, 2.0, refusal),
    ):
        state.apply(event)  # type: ignore[arg-type]
    timeline = Timeline(DARK)
    qtbot.addWidget(timeline)
    timeline.resize(800, 300)
    timeline.show()
    timeline.bind(state, ["q"])
    timeline.refresh()
    kinds = sorted((b.kind, round(b.x0, 3), round(b.x1, 3)) for b in timeline.bars)
    assert kinds == [("backoff", 0.06, 1.0), ("wait", 0.0, 0.06)]
    assert "Retry-After 2 s" in [lb.toPlainText() for lb in timeline.labels if lb.isVisible()]
    timeline.finish()
    pane = RequestPane("Q1", "q", "#3366cc", DARK)
    qtbot.addWidget(pane)
    pane.show()
    pane.bind(state.requests[0])
    pane.changed(final=True)
    assert STATE_LABELS["retrying"] in pane.state.text()
    assert "retrying in 2 s" in pane.error.text()
