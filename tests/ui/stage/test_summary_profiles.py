"""The summary strip on every built-in profile, in both window modes: real runs over
loopback HTTP feed a real :class:`SummaryStrip` (offscreen), and the headline and the
diagnosis line name the right case. One window test follows the fair-mode offer."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from ui.conftest import wait_signal, wait_until

from splitdesk.core.analyse.predict import predict_plan
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.measure.runner import RunConfig, Runner
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.plans import make_plan
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import EndpointConfig
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.stage.summary import SummaryStrip

QUESTIONS = [
    "Why is the sky blue?",
    "How do vaccines work?",
    "What is inflation?",
    "Why do we sleep?",
    "How do tides work?",
]
WHY = {
    "batching": "the server batches them",
    "single-slot": "one at a time (no batching)",
    "rate-limited": "a rate limit capped concurrency",
    "slow-network": "network latency dominates",
    "compute-bound": "per-stream decode rate fell from",
}


@dataclass
class Sim:
    """A running built-in endpoint and the profile it serves."""

    profile: str
    process: Any


@pytest.fixture(scope="module", params=list(WHY))
def sim(request: pytest.FixtureRequest) -> Iterator[Sim]:
    """One built-in endpoint per profile at 4× speed, shared by this module's tests."""
    from splitdesk.sim.launcher import start_sim

    process = start_sim(request.param, {"speed": 4})
    try:
        yield Sim(request.param, process)
    finally:
        process.stop()


async def strip_after(
    sim: Sim, mode: str, qtbot: Any, retry_429: int = 0, predict: bool = False
) -> tuple[SummaryStrip, RunState]:
    """Run the questions in ``mode`` and show the result in a summary strip (with the
    cost model's prediction when ``predict``)."""
    endpoint = EndpointConfig(sim.process.openai_base_url, "openai-chat", "splitdesk-sim")
    state = RunState()
    strip = SummaryStrip(DARK)
    qtbot.addWidget(strip)
    strip.bind(state)
    plan = make_plan(mode, QUESTIONS, CombinedTemplate(), 200, mode == "one-after-another")  # type: ignore[arg-type]
    if predict:
        strip.set_predictions(await predict_plan(sim.process.url, endpoint, plan))
    config = RunConfig(endpoint, retry_429=retry_429)
    await asyncio.wait_for(Runner(config, state.apply).run(QUESTIONS, plan), 60)
    assert state.finished, "the run did not end within 60 s"
    strip.refresh()
    return strip, state


def check_common(sim: Sim, strip: SummaryStrip, state: RunState) -> str:
    headline = strip.headline.text()
    assert strip.explain.isVisible() or not strip.explain.isHidden()
    assert WHY[sim.profile] in strip.explain.text(), strip.explain.text()
    assert strip.diagnosis is not None and strip.diagnosis.text
    if sim.profile == "batching":
        assert f"color:{DARK.good}'>Parallel finished" in headline and "× sooner" in headline
        # the verdict once: no second speed-up among the details
        assert headline.count("×") <= 2, headline  # the verdict and its prediction
    if sim.profile == "rate-limited":
        refused = sum(1 for t in state.group("parallel") if t.error and t.error.status == 429)
        assert f"Parallel: <span style='color:{DARK.error}'>{refused} of 5 refused (HTTP 429)" in (
            headline
        )
        assert "Parallel <b>" not in headline  # no time for a side where requests were refused
        assert "faster" not in headline and "slower" not in headline
    if sim.profile != "rate-limited":
        assert not strip.banner.isVisible()
    else:  # an answer that never came is said so, not left as "…"
        assert "…" not in strip.payoff.text()
        refused_last = [
            t for t in state.group("parallel") if t.questions == (4,) and t.outcome == "failed"
        ]
        assert ("no answer (HTTP 429)" in strip.payoff.text()) == bool(refused_last)
    return headline


@pytest.mark.asyncio
async def test_side_by_side_headline_and_diagnosis(sim: Sim, qtbot: Any) -> None:
    strip, state = await strip_after(sim, "side-by-side", qtbot)
    headline = check_common(sim, strip, state)
    assert "slower" not in headline or DARK.error not in headline  # never a red "slower"
    if sim.profile == "compute-bound":
        # both ways shared a server that does not batch: the ratio is inflated by the
        # competition (compute-bound: 2.1× side by side, 1.2× one after another), so no
        # green verdict, and the fair-mode offer instead
        assert f"color:{DARK.good}'>Parallel" not in headline
        assert "sooner" not in headline
        assert "× side by side, no verdict: both ways shared" in headline
        assert "href='fair-mode'" in strip.explain.text()
    if sim.profile == "slow-network":
        # the network set both ways' times, not the shared server: a verdict, and no offer
        # to measure one after another (both modes give the same ratio)
        assert "Parallel finished" in headline and "no verdict" not in headline
        assert "href='fair-mode'" not in strip.explain.text()
    if sim.profile == "single-slot":
        assert "no verdict: the server ran one request at a time" in headline
        assert "slower" not in headline and "faster" not in headline
        assert "href='fair-mode'" in strip.explain.text()
        with qtbot.waitSignal(strip.fairModeRequested, timeout=1000):
            strip.explain.linkActivated.emit("fair-mode")


@pytest.mark.asyncio
async def test_one_after_another_headline_diagnosis_and_split(sim: Sim, qtbot: Any) -> None:
    strip, state = await strip_after(sim, "one-after-another", qtbot)
    check_common(sim, strip, state)
    explain = strip.explain.text()
    if sim.profile == "rate-limited":
        assert "from concurrency" not in explain  # refused requests: nothing to split
        return
    assert "from the prompt's shape (combined → sequential)" in explain
    assert "from concurrency (sequential → parallel)" in explain
    assert "href='fair-mode'" not in explain


@pytest.mark.asyncio
async def test_prediction_is_not_shown_as_if_it_applied_under_a_rate_limit(
    sim: Sim, qtbot: Any
) -> None:
    # retries let every request finish, so a speed-up is measured; the cost model knows
    # no 429s, so on the rate-limited profile its prediction does not describe the run
    strip, state = await strip_after(sim, "one-after-another", qtbot, retry_429=5, predict=True)
    headline = strip.headline.text()
    assert all(t.outcome == "done" for t in state.requests), headline
    if sim.profile == "rate-limited":
        assert "(prediction ignores the rate limit)" in headline
        assert "predicted " not in headline
    else:
        assert re.search(r"\(predicted \d+\.\d×\)", headline), headline


@pytest.mark.asyncio
async def test_fair_mode_offer_runs_one_after_another(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(profile="single-slot", speed=4.0)))
    window.mode.setCurrentIndex(window.mode.findData("side-by-side"))
    window.run_button.click()
    await wait_signal(window.runFinished, 60)
    assert "no verdict" in window.stage.summary.headline.text()
    assert window.stage.summary.explain.isVisible()
    window.stage.summary.explain.linkActivated.emit("fair-mode")
    (state,) = await wait_signal(window.runFinished, 60)
    assert window.mode.currentData() == "one-after-another"
    assert state.info.mode == "one-after-another"
    assert "one at a time" in window.stage.summary.explain.text()


@pytest.mark.asyncio
async def test_a_queued_pane_names_its_wait_and_keeps_counting(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(profile="single-slot", speed=2.0)))
    window.run_button.click()

    def queued() -> list[float]:
        found = []
        for pane in window.stage.grid.panes:
            m = re.search(r"queued behind \d+ requests? · waiting ([\d.]+) s", pane.state.text())
            if m:
                found.append(float(m.group(1)))
        return found

    await wait_until(lambda: bool(queued()), 20)  # a parallel request queued on one slot
    first = max(queued())
    # no event arrives for a queued request, yet its clock moves on
    await wait_until(lambda: bool(queued()) and max(queued()) >= first + 0.4, 10)
    await wait_signal(window.runFinished, 60)
    assert not queued()  # over: the panes say done


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(1024, 768), (1400, 900)])
async def test_refused_panes_show_their_whole_error_at_the_top(
    make_window: Any, size: tuple[int, int]
) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(profile="rate-limited", speed=4.0)))
    window.resize(*size)
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 60)
    assert "refused (HTTP 429)" in window.stage.summary.headline.text()
    assert not window.stage.summary.banner.isVisible()  # not every request failed: no banner
    failed = [window.stage.panes[t.req] for t in state.requests if t.outcome == "failed"]
    assert failed
    for pane in failed:
        window.stage.grid.ensureWidgetVisible(pane)
        await wait_until(lambda p=pane: not p.visibleRegion().isEmpty(), 5)
        error = pane.error
        assert error.isVisible() and "HTTP 429" in error.text()
        assert error.wordWrap()
        # wrapped, whole, inside its pane and right under the header (above the text)
        assert error.height() >= error.heightForWidth(error.width()), error.text()
        top_left = error.mapTo(pane, error.rect().topLeft())
        assert pane.rect().contains(top_left)
        assert top_left.y() + error.height() <= pane.height()
        head = pane.badge.mapTo(pane, pane.badge.rect().bottomLeft()).y()
        assert top_left.y() > head  # under the header
        if pane.text.isVisible():  # above the text
            assert top_left.y() < pane.text.mapTo(pane, pane.text.rect().topLeft()).y()
        else:  # refused before any text: no empty text view under the message
            assert pane.no_text and not pane.text.toPlainText()
