"""A run refused before it reached the engine (a header that cannot be sent, a key problem)
still names its endpoint as the runner does, redacted: no URL password, no key-like query
value, no custom header's value — in the run's events, what a recording is made of."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ui.conftest import wait_signal

from splitdesk.core.files.settings import AppSettings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import Question, QuestionSet

URL = "http://alice:PASSWORD99@127.0.0.1:9/v1?api_key=QSECRET77"


@pytest.mark.asyncio
async def test_a_run_refused_before_the_engine_names_its_endpoint_redacted(
    make_window: Any,
) -> None:
    endpoint = EndpointSettings(
        preset="custom",
        base_url=URL,
        model="m",
        headers={"X-Gateway-Key": "GWSECRET55", "X-Note": "café"},  # é: cannot be sent
    )
    window = make_window(AppSettings(endpoint=endpoint))
    window.questions.set_question_set(
        QuestionSet(title="t", questions=[Question(text="a?"), Question(text="b?")])
    )
    finished = wait_signal(window.runFinished, 30, "the refused run's end")
    window.run_button.click()
    (state,) = await finished
    assert state.info is not None
    said = json.dumps(state.info.endpoint) + " ".join(
        r.error.message for r in state.requests if r.error is not None
    )
    assert "header X-Note" in said  # the reason, named
    for secret in ("PASSWORD99", "QSECRET77", "GWSECRET55"):
        assert secret not in said, said
    assert state.info.endpoint["url"] == "http://alice:***@127.0.0.1:9/v1?api_key=***"
