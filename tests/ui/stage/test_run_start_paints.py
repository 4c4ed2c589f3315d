"""A live run's start, as the window paints it: the panes are built a slice per event-loop
turn (so Run never freezes the window), and the stage is painted once they are all built
and laid out, never half built (each paint of half-built panes cost ~8 ms in the turns
from Run to the laid-out panes, while the event loop waited). Real widgets (offscreen),
the real engine process and the built-in endpoint over loopback."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal
from ui.paints import PaintCounter

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import Question, QuestionSet


@pytest.mark.asyncio
async def test_the_stage_is_painted_once_its_panes_are_built_never_half_built(
    make_window: Any,
) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=20.0)))
    stage = window.stage
    planned: list[bool] = []  # the run's plan reached the stage (its panes to build)
    window.controller.runPlanned.connect(lambda *_: planned.append(True))
    for n in (16, 3, 9):
        questions = [f"Question {i + 1}: what is {i + 1} squared?" for i in range(n)]
        window.questions.set_question_set(
            QuestionSet(title="squares", questions=[Question(text=q) for q in questions])
        )
        planned.clear()
        grid = PaintCounter(stage.grid, probe=lambda: (bool(planned), len(stage.grid.panes)))
        window.run_button.click()
        await wait_signal(window.runFinished, 60, f"a run of {n} questions")
        grid.stop(stage.grid)
        painted = [panes for after, panes in grid.seen if after]
        assert painted, "the panes were never painted"
        # 16 panes take more than one turn's slice to build: they were painted at 0 and 8
        assert min(painted) == n, f"painted with {min(painted)} of {n} panes built: {painted}"
