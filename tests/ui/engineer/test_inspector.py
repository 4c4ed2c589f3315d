"""The stream inspector dialog (issue 12, must show): one row per event of a fixture
stream with the right flags; from the window, the events of a live request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from PySide6.QtCore import Qt
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
