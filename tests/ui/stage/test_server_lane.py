"""The server lane under the timeline: the built-in endpoint's own /metrics, polled during
a real run in the window (issue 12, must show), its KV-cache use, the samples kept in the
run's recording and drawn again by its replay; an older recording replays with no lane."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from ui.conftest import wait_signal, wait_until

from paths import RECORDINGS
from splitdesk.core.files.recording import load_recording
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.measure.server_metrics import ServerSeriesRecord, series_of
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.shell.main_window import MainWindow
from splitdesk.ui.stage.server_lane import ServerLane

OLD_RECORDING = RECORDINGS / "v1.splitdesk.json"  # written before recordings kept samples


def ydata(curve: Any) -> list[float]:
    """The y values a curve draws ([] for none)."""
    y = curve.getData()[1]
    return [] if y is None else [float(v) for v in y]


async def replay_to_end(window: MainWindow, recording: object) -> None:
    """Open ``recording`` in the window's replay and show its last moment."""
    driver = window.recordings.replay
    assert window.recordings.show_recording(recording)  # type: ignore[arg-type]
    assert driver.player is not None
    driver.seek(driver.player.duration)
    await wait_until(lambda: driver.player is not None and driver.player.done, 10, "replay at end")


@pytest.mark.asyncio
async def test_lane_shows_batch_of_n_in_parallel_and_1_in_combined(make_window: Any) -> None:
    # speed 1: the parallel phase's full batch lasts ~1.4 s, several 4 Hz samples
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=1.0)))
    window.mode.setCurrentIndex(window.mode.findData("one-after-another"))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the one-after-another run finished")
    lane = window.stage.server_lane
    assert lane.isVisible()
    n = len(state.info.questions)
    combined = next(t for t in state.requests if t.group == "combined")
    parallel = [t for t in state.requests if t.group == "parallel"]
    assert combined.outcome == "done" and all(t.outcome == "done" for t in parallel)
    during_c = lane.series.at(combined.t_send + 0.25, combined.t_end - 0.25)
    assert len(during_c) >= 4 and set(during_c) == {1.0}
    p_start = min(t.t_send for t in parallel)
    p_first_end = min(t.t_end for t in parallel)
    during_p = lane.series.at(p_start + 0.25, p_first_end - 0.25)
    assert during_p and set(during_p) == {float(n)}
    assert lane.series.peak_running == float(n)
    x, y = lane.running_curve.getData()
    assert list(y) == lane.series.running and len(x) == len(y)
    assert f"peak batch {n}" in lane.caption.text() and "splitdesk" in lane.caption.text()
    # KV-cache use: the built-in endpoint publishes tokens, drawn on the right-hand axis
    s = lane.series
    assert s.family == "splitdesk" and s.kv_unit == "tokens" and s.has_kv
    kx, ky = lane.kv_curve.getData()
    assert list(ky) == s.kv and list(kx) == s.t_s
    assert max(v or 0.0 for v in lane.series.kv) > 0
    assert lane.plot.getPlotItem().getAxis("right").isVisible()
    assert f"KV cache (dotted, right) {s.kv[-1]:g} tokens" in lane.caption.text()

    # the run's auto-saved recording holds the samples: 1 in the combined phase, N in the
    # parallel one
    entries = window.recordings.history.entries
    await wait_until(lambda: bool(entries) and entries[0].path is not None, 10, "auto-saved")
    saved = load_recording(entries[0].path)
    kept = series_of(saved.runs[0].server)
    assert kept is not None and kept.family == "splitdesk" and kept.kv_unit == "tokens"
    in_c = kept.at(combined.t_send + 0.25, combined.t_end - 0.25)
    assert len(in_c) >= 4 and set(in_c) == {1.0}
    in_p = kept.at(p_start + 0.25, p_first_end - 0.25)
    assert in_p and set(in_p) == {float(n)}
    assert kept.t_s[-1] <= saved.runs[0].duration_s

    # replaying it draws the lane with those values
    await replay_to_end(window, saved)
    await wait_until(lambda: lane.series.t_s == kept.t_s, 5, "the replayed lane shows every sample")
    assert lane.isVisible() and lane.recorded is not None
    x, y = lane.running_curve.getData()
    assert list(y) == kept.running and list(x) == kept.t_s
    _, wy = lane.waiting_curve.getData()
    assert list(wy) == kept.waiting
    _, ky = lane.kv_curve.getData()
    assert list(ky) == kept.kv
    text = lane.caption.text()
    assert text.startswith("Server (splitdesk, recorded)") and f"peak batch {n}" in text
    # at a moment inside the combined request, only the samples up to then are drawn
    driver = window.recordings.replay
    mid = (combined.t_send + combined.t_end) / 2
    driver.seek(mid)
    assert lane.series.t_s == [t for t in kept.t_s if t <= mid]
    assert lane.series.running[-1] == 1.0


@pytest.mark.asyncio
async def test_an_older_recording_replays_without_a_lane(make_window: Any) -> None:
    window = make_window(AppSettings())
    old = load_recording(OLD_RECORDING)
    assert old.runs[0].server is None
    await replay_to_end(window, old)
    lane = window.stage.server_lane
    assert not lane.isVisible() and not lane.polling()
    assert lane.caption.text() == "" and lane.series.t_s == []
    assert ydata(lane.running_curve) == []


@pytest.mark.asyncio
async def test_replayed_kv_is_percent_or_nothing_as_the_server_published(
    make_window: Any,
) -> None:
    """A fraction (vLLM, SGLang) is drawn and said as percent; a server that publishes no
    KV figure (TGI) gets no KV line, no right-hand axis and no KV words, never a zero."""
    window = make_window(AppSettings())
    old = load_recording(OLD_RECORDING)
    end = old.runs[0].duration_s
    t_s = [round(end * k / 4, 6) for k in range(4)]
    lane = window.stage.server_lane
    right = lane.plot.getPlotItem().getAxis("right")

    vllm = ServerSeriesRecord(
        family="vllm", t_s=t_s, running=[1, 2, 2, 1], waiting=[0, 1, 0, 0],
        kv=[0.05, 0.28, 0.31, 0.12],
    )  # fmt: skip
    run = old.runs[0].model_copy(update={"server": vllm})
    await replay_to_end(window, old.model_copy(update={"runs": [run]}))
    await wait_until(lambda: lane.series.t_s == t_s, 5, "the replayed lane shows every sample")
    assert lane.isVisible() and right.isVisible()
    assert list(lane.kv_curve.getData()[1]) == [0.05, 0.28, 0.31, 0.12]
    assert right.scale == 100.0  # ticks in percent
    assert lane.caption.text().endswith("· KV cache (dotted, right) 12 %")
    # narrower, the caption still says which line is which, with the lines' own glyphs
    caption = lane.caption
    full, keyed = caption._variants[0], caption._variants[1]
    metrics = caption.fontMetrics()
    caption.resize((metrics.horizontalAdvance(full) + metrics.horizontalAdvance(keyed)) // 2, 30)
    assert caption.text() == keyed
    assert "batch ━ 1" in keyed and "queue ╌ 0" in keyed and keyed.endswith("KV ┈ 12 % (right)")
    assert caption.toolTip() == full  # the whole wording on hover
    caption.resize(metrics.horizontalAdvance(full) + 10, 30)

    tgi = ServerSeriesRecord(family="tgi", t_s=t_s, running=[4, 4, 3, 1], waiting=[3, 2, 0, 0])
    run = old.runs[0].model_copy(update={"server": tgi})
    await replay_to_end(window, old.model_copy(update={"runs": [run]}))
    await wait_until(lambda: lane.series.family == "tgi", 5, "the TGI samples are shown")
    await wait_until(lambda: lane.series.t_s == t_s, 5, "the replayed lane shows every sample")
    assert lane.isVisible() and not right.isVisible()
    assert ydata(lane.kv_curve) == []
    assert list(lane.running_curve.getData()[1]) == [4, 4, 3, 1]
    text = lane.caption.text()
    assert "KV" not in text and "peak batch 4" in text and "queue (dashed) 0" in text


def test_the_kv_line_is_dotted_not_dashed_like_the_queue(qtbot: Any) -> None:
    """The caption says "KV cache (dotted)" and "queue (dashed)": the KV pen draws dots
    no longer than its width. (Qt's default square caps grew each 2 px dot into a 4 px
    dash, so the lane showed two dashed lines.)"""
    lane = ServerLane(DARK)
    qtbot.addWidget(lane)

    def runs(pen: Any) -> list[int]:
        """Lengths (px) of the lit runs along a horizontal line drawn with ``pen``."""
        image = QImage(200, 9, QImage.Format.Format_RGB32)
        image.fill(QColor("black"))
        p = QPainter(image)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(pen)
        p.drawLine(QPointF(10, 4.5), QPointF(190, 4.5))
        p.end()
        lit = [QColor(image.pixel(x, 4)).lightness() > 60 for x in range(200)]
        out, n = [], 0
        for on in [*lit, False]:
            if on:
                n += 1
            elif n:
                out.append(n)
                n = 0
        return out

    kv = lane.kv_curve.opts["pen"]
    queue = lane.waiting_curve.curve.opts["pen"]
    assert kv.style() == Qt.PenStyle.DotLine
    dots = runs(kv)
    assert len(dots) > 20 and max(dots) <= kv.width() + 1, dots  # dots: about a pen width
    dashes = runs(queue)
    assert min(dashes) > max(dots), (dashes, dots)  # the queue's dashes are longer
