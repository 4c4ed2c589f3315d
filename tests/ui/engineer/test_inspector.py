"""The stream inspector dialog (issue 12, must show): one row per event of a fixture
stream with the right flags; from the window, the events of a live request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from ui.conftest import wait_signal

from paths import FIXTURES
from splitdesk.core.analyse.stream_inspector import inspect_stream
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.engineer.inspector import COLUMNS, InspectorDialog

STREAM = FIXTURES / "streams" / "05-openrouter-processing-comments.json"


def test_dialog_lists_exactly_the_fixture_events_with_their_flags(qtbot: Any) -> None:
    doc = json.loads(STREAM.read_text("utf-8"))
    reads = [(k * 1_000_000, c.encode()) for k, c in enumerate(doc["body_chunks"])]
    dialog = InspectorDialog("fixture 05", inspect_stream(reads, doc["api"]))
    qtbot.addWidget(dialog)
    table = dialog.table
    col = {name: i for i, name in enumerate(COLUMNS)}

    def cells(name: str) -> list[str]:
        return [table.item(r, col[name]).text() for r in range(table.rowCount())]

    assert table.rowCount() == 17
    assert cells("event") == [
        "keep-alive",
        "keep-alive",
        "role-only",
        *["text"] * 11,
        "finish",
        "usage",
        "end",
    ]
    ttft = cells("TTFT")
    assert ttft[3] == "first token: TTFT stamped here"
    assert ttft[4:14] == ["counted"] * 10
    assert [ttft[i] for i in (0, 1, 2, 14, 15, 16)] == ["not counted for TTFT"] * 6
    assert cells("arrival (s)")[:4] == ["0.0000", "0.0010", "0.0020", "0.0030"]
    assert cells("gap (ms)")[:3] == ["", "1.0", "1.0"]
    assert cells("bytes")[0] == "23" and cells("raw")[0] == ": OPENROUTER PROCESSING"
    assert cells("raw")[-1] == "data: [DONE]"
    assert "17 events" in dialog.summary.text() and "11 carried text" in dialog.summary.text()


@pytest.mark.asyncio
async def test_window_inspects_a_live_request(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=8.0)))
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the run finished")
    req = next(t.req for t in state.requests if t.group == "parallel")
    pane = window.stage.panes[req]
    assert pane.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu
    dialog = window.engineer.open_inspector(req)
    assert dialog is not None
    trace = state.requests[req]
    rows = dialog.events
    assert [e.text for e in rows if e.counts_for_ttft] and "".join(
        e.text for e in rows if e.counts_for_ttft
    ) == trace.text
    assert sum(e.counts_for_ttft for e in rows) == len(trace.event_times)
    assert dialog.table.rowCount() == len(rows)
    dialog.close()


def test_the_raw_column_holds_each_whole_line_and_the_text_column_tells_rows_apart(
    qtbot: Any,
) -> None:
    # a real llama-server stream: every event begins data: {"choices":[{"finish_reason"…
    doc = json.loads((FIXTURES / "llamacpp" / "stream-np4.json").read_text("utf-8"))
    reads = [(k * 1_000_000, c.encode()) for k, c in enumerate(doc["body_chunks"])]
    events = inspect_stream(reads, doc["api"])
    dialog = InspectorDialog("llama-server", events)
    qtbot.addWidget(dialog)
    dialog.show()
    table = dialog.table
    col = {name: i for i, name in enumerate(COLUMNS)}
    assert table.textElideMode() == Qt.TextElideMode.ElideNone and not table.wordWrap()
    width = table.columnWidth(col["raw"])
    for r, e in enumerate(events):
        item = table.item(r, col["raw"])
        assert item.text() == e.raw.replace("\n", " ⏎ ")  # the whole line, as it came
        # and the column is wide enough to show all of it (scrolled to, never cut)
        assert QFontMetrics(item.font()).horizontalAdvance(item.text()) <= width
    texts = [table.item(r, col["text"]).text() for r in range(table.rowCount())]
    assert texts[1] == "'a'" and texts[2] == "' very'"  # what each event carried
    assert len({t for t in texts if t}) > 10
    table.setCurrentCell(2, 0)
    assert dialog.detail.toPlainText() == events[2].raw
