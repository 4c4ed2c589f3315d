"""A run whose first request went out late, on the run's real time axis: the connection wait
drawn as its own phase, the lanes where their requests really went out, the server's samples
under them; the server lane's words after a failed run or an HTML page; the summary saying
"no markers" and naming its costs alike. The run is a real llama-server's (4 slots, side by
side: its ninth connection waited 5.11 s for a free HTTP thread; tests/fixtures/llamacpp)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from loopback import Connections
from ui.conftest import wait_until

from paths import FIXTURES
from splitdesk.core.analyse.cost import Prices, format_costs, side_tokens
from splitdesk.core.files.recording import load_recording, rebuild_state
from splitdesk.core.measure.server_metrics import LoadSeries, MetricsPoller
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.events import RequestSent
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.server_lane import ServerLane
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import Timeline

RECORDING = FIXTURES / "llamacpp" / "runs-np4-8q.splitdesk.json"


def recorded(mode: str) -> RunState:
    rec = load_recording(RECORDING)
    return next(rebuild_state(r) for r in rec.runs if r.mode == mode)


def test_the_connection_wait_is_its_own_phase_and_lanes_start_where_they_went_out(
    qtbot: Any,
) -> None:
    state = recorded("side-by-side")
    questions = list(state.info.questions) if state.info else []
    timeline = Timeline(DARK)
    qtbot.addWidget(timeline)
    timeline.resize(1200, 500)
    timeline.show()
    timeline.bind(state, questions)
    timeline.finish()
    # the run's own axis: t = 0 at the run's origin, not at the first send (5.14 s)
    connects = [b for b in timeline.bars if b.kind == "connect"]
    assert len(connects) == 9  # one per request: its connection's set-up
    slow = max(connects, key=lambda b: b.x1 - b.x0)
    assert slow.x1 - slow.x0 == pytest.approx(5.11, abs=0.05)
    assert "waited to be taken up" in str(slow.tip)
    # every request's wait bar starts where it was sent: 5.1 s into the run
    waits = [b for b in timeline.bars if b.kind == "wait"]
    assert waits and min(b.x0 for b in waits) == pytest.approx(5.11, abs=0.05)
    shown = [lb.toPlainText() for lb in timeline.labels if lb.isVisible()]
    assert "connection waited 5.1 s" in shown


def test_server_samples_sit_under_the_bars_of_a_late_run(qtbot: Any) -> None:
    state = recorded("side-by-side")
    questions = list(state.info.questions) if state.info else []
    timeline = Timeline(DARK)
    qtbot.addWidget(timeline)
    timeline.bind(state, questions)
    timeline.finish()
    # samples as the poller read them, seconds from the run's origin: while the 8 requests
    # streamed (5.2–14 s), drawn on the lane at the same x as the bars above them
    series = LoadSeries([5.3, 6.0, 7.0], [4.0, 4.0, 2.0], [5.0, 1.0, 0.0], family="llamacpp")
    lane = ServerLane(DARK, 1.0, timeline.plot)
    qtbot.addWidget(lane)
    lane.replay(state, series)
    xs, _ys = lane.running_curve.getData()
    assert list(xs) == pytest.approx([5.3, 6.0, 7.0])
    streams = [b for b in timeline.bars if b.kind == "stream"]
    assert min(b.x0 for b in streams) < 5.3 and max(b.x1 for b in streams) > 7.0


@contextlib.asynccontextmanager
async def html_server(content_type: str) -> AsyncIterator[int]:
    """A loopback server answering every GET with an nginx-like HTML page (HTTP 200)."""
    page = b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>hi</body></html>\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            head = (
                f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
                f"content-length: {len(page)}\r\n\r\n"
            )
            writer.write(head.encode() + page)
            await writer.drain()

    connections = Connections(handle)
    server = await asyncio.start_server(connections.accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        await connections.close(server)


@pytest.mark.asyncio
@pytest.mark.parametrize("content_type", ["text/html", "text/plain"])
async def test_an_html_page_on_metrics_is_named_not_printed(content_type: str) -> None:
    async with html_server(content_type) as port:
        poller = MetricsPoller(f"http://127.0.0.1:{port}/metrics", give_up=1).start()
        await wait_until(lambda: not poller.running, 10, "the poller gave up")
    assert "HTML page" in poller.status, poller.status
    assert "<" not in poller.status and "Welcome" not in poller.status


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.asyncio
async def test_after_a_failed_run_the_lane_says_why_not_asking(qtbot: Any) -> None:
    state = recorded("side-by-side")
    lane = ServerLane(DARK)
    qtbot.addWidget(lane)
    dead = EndpointSettings(preset="custom", base_url=f"http://127.0.0.1:{_free_port()}/v1")
    fresh = RunState()  # a run that sent nothing (its key was missing, say)
    fresh.info = state.info
    lane.start(fresh, dead, None)
    assert lane.caption.text().startswith("Server: asking")
    lane.finish(fresh)
    assert lane.caption.text() == "Server: not asked (the run sent no request)"
    # a run whose requests went out to a server that is not there
    lane.start(fresh, dead, None)
    lane._on_event(RequestSent(0.0, 0))
    poller = lane.poller
    assert poller is not None
    await wait_until(lambda: poller.status != "not started", 10, "the first /metrics attempt")
    lane.finish(fresh)
    assert lane.caption.text() == "Server metrics: none (/metrics not reachable (ConnectError))"
    # one that ended before the server's first answer came says so, not "asking"
    lane.start(fresh, dead, None)
    lane._on_event(RequestSent(0.0, 0))
    lane.finish(fresh)
    assert not lane.caption.text().startswith("Server: asking")
    assert lane.caption.text().startswith("Server metrics: none (")


@pytest.mark.asyncio
async def test_a_finished_runs_last_word_does_not_land_on_the_next_run(qtbot: Any) -> None:
    """The caption's re-read after a failed run belongs to that run: a new run started before
    it fires keeps saying "asking", and the re-read dies with the lane."""
    state = recorded("side-by-side")
    lane = ServerLane(DARK)
    qtbot.addWidget(lane)
    dead = EndpointSettings(preset="custom", base_url=f"http://127.0.0.1:{_free_port()}/v1")
    fresh = RunState()
    fresh.info = state.info
    lane.start(fresh, dead, None)
    lane._on_event(RequestSent(0.0, 0))
    poller = lane.poller
    assert poller is not None
    await wait_until(lambda: poller.status != "not started", 10, "the first /metrics attempt")
    lane.finish(fresh)
    delay_ms = round(max(poller.period_s, 1.0) * 1000) + 200
    lane.start(RunState(), dead, None)  # the next run, before the re-read is due
    assert lane.caption.text().startswith("Server: asking")
    qtbot.wait(delay_ms + 500)  # past the moment the finished run's re-read was due
    assert lane.caption.text().startswith("Server: asking"), lane.caption.text()
    lane.stop()


def test_the_summary_says_no_markers_and_formats_costs_alike(qtbot: Any) -> None:
    state = recorded("one-after-another")
    strip = SummaryStrip(DARK)
    qtbot.addWidget(strip)
    strip.prices = Prices(input_per_m=3.0, output_per_m=15.0)
    strip.bind(state)
    strip.refresh()
    n = len(state.info.questions) if state.info else 0
    payoff = strip.payoff.text()
    # the random model's reply has text but no markers: not "no answer"
    assert payoff.startswith(f"answer {n}: <b>no markers</b> in the combined reply"), payoff
    costs = [side_tokens(state.requests, g).cost(strip.prices) for g in ("combined", "parallel")]
    shown = format_costs([c for c in costs if c is not None])
    assert all(f"cost {x}" in strip.headline.text() for x in shown)
