"""Questions about one document in the window: a real run of the "one document" scenario
(engine process, built-in endpoint with its prefix cache on, real loopback HTTP). The
timeline marks each request's prefill apart from its decode, the summary says how many
prompt tokens each side read and how many came from cache, the questions editor's context
size becomes the server's count, and the server lane names the cache's hit rate — each
view showing the figures of ``core/analyse/metrics.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.analyse.metrics import context_prompt_tokens, request_figures, summarize
from splitdesk.core.files.scenarios import builtin_scenarios
from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.template import estimated_tokens
from splitdesk.ui.common.theme import DARK
from splitdesk.ui.inputs.questions_editor import QuestionsEditor


@pytest.mark.asyncio
async def test_a_document_run_shows_its_prefill_and_its_cache(make_window: Any) -> None:
    window = make_window(AppSettings(endpoint=EndpointSettings(speed=4.0)))
    window.presentation.open_scenario(builtin_scenarios()["document-batching-cache"])
    editor = window.questions
    context = editor.context()
    assert context.startswith("HARBOUR STREET") and editor.context_toggle.text().endswith(
        f"≈ {estimated_tokens(context):,} tokens"
    )
    window.run_button.click()
    (state,) = await wait_signal(window.runFinished, 90, "the document run finished")
    assert all(t.outcome == "done" for t in state.requests)

    # every prompt carried the document; the parallel side's server read it from cache
    groups = summarize(state).groups
    comb, par = groups["combined"].prompt, groups["parallel"].prompt
    assert comb is not None and par is not None and par.cached is not None
    assert par.cached > 3 * estimated_tokens(context) * 0.9  # four of five from cache
    details = window.stage.summary.details.text()
    assert (
        f"prompt tokens with the shared context: combined {comb.prompt:,}, "
        f"{comb.cached:,} from cache / parallel {par.prompt:,}, {par.cached:,} from cache"
    ) in details

    # the timeline: one prefill bar inside each request's wait, ending at its first token
    prefill = [b for b in window.stage.timeline.bars if b.kind == "prefill"]
    waits = {b.lane: b for b in window.stage.timeline.bars if b.kind == "wait"}
    assert len(prefill) == len(state.requests)
    for r in state.requests:  # the run's one time axis: seconds since it started
        f = request_figures(r)
        assert f.prefill_span is not None and f.split is not None
        assert f.split.prefill_s is not None and f.t_first_output is not None
        (bar,) = [b for b in prefill if b.x1 == pytest.approx(f.t_first_output, abs=1e-9)]
        wait = waits[bar.lane]  # drawn over the request's own wait, never beyond it
        assert wait.x0 <= bar.x0 < bar.x1 <= wait.x1 + 1e-9
        assert bar.x0 == pytest.approx(max(f.prefill_span[0], wait.x0))
        assert f"prefill {f.split.prefill_s:.3f} s" in bar.tip
        assert (
            f"{f.prompt_tokens:,} prompt tokens, {f.cached_prompt_tokens:,} from cache" in bar.tip
        )
    assert "█</span> prefill)" in window.stage.timeline.legend.text()  # the mark is named

    # the editor: the server's count replaces the estimate
    counted = context_prompt_tokens(state)
    assert counted is not None
    assert editor.context_toggle.text().endswith(f"Shared context · {counted:,} tokens")
    assert "the server's count" in editor.context_size.text()

    # the server lane: the prefix cache's hit rate from the endpoint's own counters
    lane = window.stage.server_lane
    rate = lane.series.last_cache_hit_rate
    assert rate is not None and 0.5 < rate <= 1.0
    assert f"cache hits {rate:.0%}" in lane.caption.text() or (
        f"prefix-cache hits {rate:.0%}" in lane.caption.text()
    )


def test_the_context_field_edits_the_set_and_its_place(qtbot: Any, tmp_path: Path) -> None:
    editor = QuestionsEditor(DARK)
    qtbot.addWidget(editor)
    assert editor.context() == "" and "Shared context (none)" in editor.context_toggle.text()
    editor.context_toggle.setChecked(True)
    editor.context_text.setPlainText("Clause 1. Loans last seven days.")
    assert editor.context() == "Clause 1. Loans last seven days."
    assert editor.context_toggle.text() == "▾ Shared context · ≈ 8 tokens"
    assert "estimated at 4 characters a token" in editor.context_size.text()
    editor.context_place.setCurrentIndex(editor.context_place.findData("system"))
    editor.context_place.activated.emit(editor.context_place.currentIndex())
    editor.context_cache.setChecked(True)
    qs = editor.question_set()
    assert qs.context == "Clause 1. Loans last seven days."
    assert qs.template is not None and qs.template.context_as == "system"
    assert qs.template.cache_control
    editor.set_question_set(qs)  # a set keeps its context and template through a round trip
    assert editor.context() == qs.context
    assert editor.context_place.currentData() == "system" and editor.context_cache.isChecked()
