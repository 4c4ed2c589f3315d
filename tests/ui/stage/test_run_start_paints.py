"""A live run's start, as the window paints it: the panes are built a slice per event-loop
turn (so Run never freezes the window), and the stage is painted once they are all built
and laid out, never half built (each paint of half-built panes cost ~8 ms in the turns
from Run to the laid-out panes, while the event loop waited). Real widgets (offscreen),
the real engine process and the built-in endpoint over loopback."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QEvent, QObject
from ui.conftest import wait_signal

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import Question, QuestionSet


class Seen(QObject):
    """Counts the events of ``kinds`` a widget gets, with what ``probe()`` said then."""

    def __init__(self, widget: Any, kinds: tuple[QEvent.Type, ...], probe: Any) -> None:
        super().__init__(widget)
        self.kinds, self.probe = kinds, probe
        self.events: list[tuple[QEvent.Type, Any]] = []
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in self.kinds:
            self.events.append((event.type(), self.probe()))
        return False


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
        grid = Seen(
            stage.grid, (QEvent.Type.Paint,), lambda: (bool(planned), len(stage.grid.panes))
        )
        window.run_button.click()
        await wait_signal(window.runFinished, 60, f"a run of {n} questions")
        grid.deleteLater()
        painted = [panes for _, (after, panes) in grid.events if after]
        assert painted, "the panes were never painted"
        # 16 panes take more than one turn's slice to build: they were painted at 0 and 8
        assert min(painted) == n, f"painted with {min(painted)} of {n} panes built: {painted}"
