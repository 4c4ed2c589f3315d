"""The built-in endpoint's prediction is in before a run's first request is sent (issue 8):
the endpoint computes it on the loop that schedules its token steps, so it must never be
asked while the run streams."""

from __future__ import annotations

from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.run_state import RunState

FAST = AppSettings(endpoint=EndpointSettings(speed=4.0))


@pytest.mark.asyncio
async def test_prediction_arrives_before_any_request_is_sent(make_window: Any) -> None:
    window = make_window(FAST)
    controller = window.controller
    seen: list[tuple[bool, int, list[PredictedRequest], RunState | None]] = []

    def on_predictions(preds: list[PredictedRequest]) -> None:
        state = controller.state
        sent = sum(1 for r in state.requests if r.t_send is not None) if state else -1
        gate_open = controller.live is None or controller.live.released
        seen.append((gate_open, sent, preds, state))

    controller.predictionsReady.connect(on_predictions)
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 30)

    assert len(seen) == 1, f"expected one prediction for the run, got {len(seen)}"
    gate_open, sent_then, preds, for_state = seen[0]
    assert for_state is state
    # the engine had the run but was still holding its first request back
    assert not gate_open and sent_then == 0
    assert len(preds) == len(state.requests)
    assert all(p.e2e_s > 0 and not p.rejected for p in preds)
    # and the run's views drew it: ghost bars on the timeline, the predicted ratio in the
    # headline (both bound to the run before the prediction was handed over)
    assert window.stage.timeline.predictions == preds
    assert any(b.kind == "ghost" for b in window.stage.timeline.bars)
    assert "predicted" in window.stage.summary.headline.text()
