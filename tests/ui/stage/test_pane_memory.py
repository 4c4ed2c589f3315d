"""A run's panes do not outlive it: when the next run's panes are built, the previous run's
parallel panes are already gone (not left for the event loop's next turn, when both sets
were alive at once and 64 panes' worth of memory stayed in the allocator: soak RSS +20 MB),
and they no longer hold the run (its state and events were kept until a full garbage
collection, up to a minute later). The answer views are read-only and keep no undo history
(their text only ever grows)."""

from __future__ import annotations

import weakref
from typing import Any

import pytest
import shiboken6
from PySide6.QtWidgets import QApplication

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.ui.stage.panes import RequestPane


def live_parallel_panes() -> list[RequestPane]:
    return [
        w
        for w in QApplication.allWidgets()
        if type(w) is RequestPane and shiboken6.isValid(w)  # not the combined/sequential
    ]


@pytest.mark.asyncio
async def test_the_next_runs_panes_replace_the_previous_ones_at_once(make_window: Any) -> None:
    window = make_window(AppSettings())
    first = [f"First run question {i + 1}?" for i in range(12)]
    window.stage.plan(make_plan("side-by-side", first, CombinedTemplate(), 256), first)
    old = list(window.stage.grid.panes)
    assert len(old) == 12 and len(live_parallel_panes()) == 12
    run = RunState()
    for pane in window.stage.panes.values():  # the combined pane and the 12 parallel ones
        pane.set_run(run)  # as when the run's requests are planned
    run_gone = weakref.ref(run)
    del run, pane
    for pane in window.stage.panes.values():  # read-only answer views: no undo history kept
        for view in (pane.text, pane.reasoning):
            assert view.isReadOnly() and not view.document().isUndoRedoEnabled()

    second = [f"Second run question {i + 1}?" for i in range(5)]
    window.stage.plan(make_plan("side-by-side", second, CombinedTemplate(), 256), second)
    # no turn of the event loop in between: the first run's 12 panes are deleted already
    assert not any(shiboken6.isValid(p) for p in old), "a previous run's pane is still alive"
    assert run_gone() is None, "the previous run is still held (by its replaced panes)"
    assert set(live_parallel_panes()) == set(window.stage.grid.panes)
    assert [p.title.full_text() for p in window.stage.grid.panes] == window.stage._labels
