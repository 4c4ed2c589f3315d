"""Repeat the comparison from the window (issue 12): K runs with progress, then the median
and spread per side; Cancel stops the current run and keeps the finished ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtWidgets import QPushButton
from ui.conftest import wait_until

from splitdesk.core.analyse.metrics import spread, summarize
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.ui.engineer.repeat_session import spread_text


@pytest.mark.asyncio
async def test_three_runs_give_median_and_spread(make_window: Any) -> None:
    # fast built-in endpoint, short answers (CI time): the figures are read, not timed
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=20.0, max_tokens=24)))
    session = window.engineer.repeat(3)
    await wait_until(lambda: session.figures is not None, 120, "three runs and their figures")
    f = session.figures
    assert f.runs == 3 and len(session.states) == 3
    # the medians are over the runs the machine did not disturb (all three on a quiet one;
    # a run the loaded machine starved is named and left out, core/analyse/disturbance.py)
    kept = [s for k, s in enumerate(session.states) if k not in f.left_out]
    speedups = [summarize(s).speedup for s in kept]
    assert f.speedup == spread(speedups) and f.speedup.n == len(kept) >= 1
    assert set(f.makespan) >= {"combined", "parallel"}
    assert f.makespan["parallel"].n == len(kept)
    text = session.text.text()
    assert f"Speed-up: <b>{spread_text(f.speedup, '×')}</b>" in text
    assert "Parallel: makespan " + spread_text(f.makespan["parallel"]) in text
    assert session.progress.isHidden()


@pytest.mark.asyncio
async def test_cancel_stops_and_keeps_finished_runs(make_window: Any) -> None:
    # answers long enough that the second run is still sending when Cancel comes
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=20.0, max_tokens=200)))
    session = window.engineer.repeat(5)
    await wait_until(lambda: len(session.states) == 1, 120, "the first run finished")
    await wait_until(lambda: window.controller.busy, 30, "the second run started")
    await asyncio.sleep(0)
    session.progress.findChild(QPushButton).click()  # the dialog's Cancel button
    await wait_until(lambda: session.figures is not None, 60, "the session ended on Cancel")
    assert session.figures.runs == 1 and session.cancelled
