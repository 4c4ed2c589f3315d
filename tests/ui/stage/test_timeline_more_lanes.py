"""Lanes out of sight in a short timeline (16 questions at 1280×720 ×1.5 left two lanes of
seventeen): the scroll bar beside them is there to grab, and the axis says how many more
lanes there are and where. The bar, shown from inside the layout pass that made the
timeline short, had kept a hidden widget's geometry, 0 px wide, and nothing said that
lanes were missing. A real llama-server run (8 questions, tests/fixtures/llamacpp)."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_until

from paths import FIXTURES
from splitdesk.core.files.recording import load_recording, rebuild_state
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.timeline import Timeline

RECORDING = FIXTURES / "llamacpp" / "runs-np4-8q.splitdesk.json"


def axis_label(timeline: Timeline) -> str:
    return str(timeline.plot.getPlotItem().getAxis("bottom").labelText)


@pytest.mark.asyncio
async def test_lanes_out_of_sight_have_a_bar_to_grab_and_are_counted(qtbot: Any) -> None:
    run = next(r for r in load_recording(RECORDING).runs if r.mode == "side-by-side")
    state = rebuild_state(run)
    assert state.info is not None
    timeline = Timeline(DARK, 1.5)
    qtbot.addWidget(timeline)
    timeline.resize(1200, 600)
    timeline.show()
    timeline.bind(state, list(state.info.questions))
    timeline.finish()
    await wait_until(lambda: timeline.lanes_shown == 9, 5, "all nine lanes in a tall timeline")
    assert timeline.lane_bar.isHidden() and "more lanes" not in axis_label(timeline)

    timeline.resize(1200, 130)  # too short for nine lanes, even packed: they scroll
    await wait_until(
        lambda: timeline.lane_bar.isVisible() and timeline.lane_bar.width() > 0,
        5,
        "the lane scroll bar shown, and wide enough to grab",
    )
    hidden = len(timeline.lanes) - timeline.lanes_shown
    assert hidden > 0
    assert timeline.lane_bar.width() >= timeline.lane_bar.sizeHint().width() - 1
    assert timeline.lane_bar.geometry().right() <= timeline.width()
    assert f"+{hidden} more lanes ↓ scroll" in axis_label(timeline)

    timeline.lane_bar.setValue(timeline.lane_bar.maximum())  # scrolled to the end
    await wait_until(
        lambda: f"+{hidden} more lanes ↑ scroll" in axis_label(timeline),
        5,
        "the axis saying the lanes out of sight are above",
    )
    timeline.resize(1200, 600)
    await wait_until(
        lambda: "more lanes" not in axis_label(timeline) and timeline.lane_bar.isHidden(),
        5,
        "all lanes in sight again, the note gone",
    )
