"""An instrument that knows its own weight (issue 25), as a user sees it: a run beside a
CPU-bound local server (a busy loop on every CPU, the built-in endpoint the server
measured) says in the summary's details line what splitdesk's own processes took, with
the numbers, and the live views paint fewer frames while the CPUs are busy — the end of
the run is shown exact all the same. Real window (offscreen), real engine process, the
built-in endpoint over loopback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.measure.client_cpu import ClientCpu, ObserverEffect, observer_effect
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.common.throttle import BUSY_PACE, live_pace
from splitdesk.ui.stage.summary import SummaryStrip

BUSY_LOOP = "while True: pass\n"


def busy_cpus() -> list[subprocess.Popen[bytes]]:
    """A CPU-bound local "server": a busy loop on every CPU (killed by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(os.cpu_count() or 1)]


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads the machine's load (Linux)")
@pytest.mark.asyncio
async def test_a_run_beside_a_busy_local_server_says_what_splitdesk_took(
    make_window: Any,
) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=2.0)))
    paces: list[float] = []
    figures: list[ClientCpu] = []

    def seen(cpu: ClientCpu) -> None:
        figures.append(cpu)
        paces.append(live_pace())

    window.controller.clientCpu.connect(seen)
    server = busy_cpus()
    try:
        window.run_button.click()
        (state,) = await wait_signal(window.runFinished, 120, "the default run beside a busy CPU")
    finally:
        for p in server:
            p.kill()
            p.wait()
    assert all(r.outcome == "done" for r in state.requests)
    # while the CPUs were busy the live views took a longer frame; after the run, the usual
    assert BUSY_PACE in paces, f"the pace never slowed: {paces}"
    assert live_pace() == 1.0
    # the summary says it, with the figures the controller measured over the whole run
    final = window.controller.client_cpu
    assert final is not None and final is figures[-1]
    effect = observer_effect(final, local_endpoint=True)
    assert effect is not None, final
    details = window.stage.summary.details.text()
    said = re.search(
        r"splitdesk used (\d+) % of a core beside the built-in endpoint's (\d+) %", details
    )
    assert said, details
    assert int(said.group(1)) == round(100 * effect.client_share)
    assert effect.endpoint_share is not None
    assert int(said.group(2)) == round(100 * effect.endpoint_share)
    assert "splitdesk bench</code> measures without it" in details
    # fewer frames, the same end: every pane shows its whole answer
    for req, pane in window.stage.panes.items():
        if state.requests[req].group == "parallel":
            assert pane.text.toPlainText() == state.requests[req].text, req


def test_the_sentence_names_the_local_server_and_is_gone_for_the_next_run(qtbot: Any) -> None:
    strip = SummaryStrip(DARK)
    qtbot.addWidget(strip)
    strip.set_observer(ObserverEffect(0.12, 0.09, None, 0.97, 2))
    assert strip.observer_text() == (
        "splitdesk used 12 % of a core while the local server ran, the 2 CPUs 97 % busy; "
        "results may be slower than without the window — <code>splitdesk bench</code> "
        "measures without it"
    )
    strip.bind(RunState())  # the next run: nothing said until it measures its own
    assert strip.observer_text() == ""
