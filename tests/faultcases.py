"""What a user must see for each fault the built-in endpoint injects (``sim/faults.py``),
shared by the engine's and the window's fault tests.

One run per dialect asks one question per fault: question ``[fNN] …`` begins with the tag
that ``POST /_splitdesk/faults`` (``by_prompt``) maps to fault NN, and two untagged
questions get no fault. The read timeout is short (:data:`READ_TIMEOUT_S`) so the stalls
end in a timeout quickly; ``stall-mid`` stalls for far longer than it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from splitdesk.core.run.run_state import RequestTrace
from splitdesk.providers.base import ErrorKind

#: Client read timeout of the fault runs (s): the longest silence between two reads. Long
#: enough that a clean request's endpoint, starved of CPU by other processes on the shared
#: 2-core machine, still sends within it (at 0.5 s clean requests timed out under two busy
#: loops); ``stall-mid`` (5 s) still outlasts it.
READ_TIMEOUT_S = 1.5
#: What a pane or bench line says when a read timed out.
_SILENCE = "no data from .* for " + re.escape(f"{READ_TIMEOUT_S:g}") + " s"

#: Built-in endpoint parameters of the fault runs: short answers, fast steps.
SIM_OVERRIDES = {"speed": 20, "answer_tokens": 10, "answer_spread": 0.0}

DIALECTS = [
    "openai-chat",
    "openai-completions",
    "openai-responses",
    "azure-openai",
    "anthropic",
    "ollama-chat",
    "ollama-generate",
    "tgi",
]


@dataclass(frozen=True)
class FaultCase:
    """``fault`` (``NAME[:ARG]``) and what the user must get: ``kind`` None means the request
    ends normally (every token delivered); ``words``: a regex the error message must match
    (the cause, in a user's words); ``events``: token events that arrive before the fault
    strikes (None: all of them)."""

    fault: str
    kind: ErrorKind | None
    words: str = ""
    events: int | None = 0


CASES = [
    FaultCase("refuse", ErrorKind.PROTOCOL, r"closed the connection without answering"),
    FaultCase("reset", ErrorKind.PROTOCOL, r"reset before any answer"),
    FaultCase("hang", ErrorKind.TIMEOUT, _SILENCE),
    FaultCase("status:401", ErrorKind.HTTP, r"HTTP 401.*check the API key"),
    FaultCase("status:404", ErrorKind.HTTP, r"HTTP 404.*unknown model or wrong base URL"),
    FaultCase("status:429", ErrorKind.HTTP, r"HTTP 429.*rate limited; retry after 1 s"),
    FaultCase("status:500", ErrorKind.HTTP, r"HTTP 500.*the server failed"),
    FaultCase("status:503", ErrorKind.HTTP, r"HTTP 503.*overloaded"),
    FaultCase("html:502", ErrorKind.HTTP, r"HTTP 502: 502 Bad Gateway \(HTML page from a proxy"),
    FaultCase("stall-headers", ErrorKind.TIMEOUT, _SILENCE),
    FaultCase("reset-mid:2", ErrorKind.PROTOCOL, r"was reset mid-stream", 2),
    FaultCase("stall-mid:5", ErrorKind.TIMEOUT, _SILENCE, 1),
    FaultCase("malformed:2", ErrorKind.PROTOCOL, r"malformed event", 2),
    FaultCase("error-event:2", ErrorKind.SERVER, r"server had an error", 2),
    FaultCase("huge:300000", None, events=None),
    FaultCase("split-utf8", None, events=None),
    FaultCase("no-end", ErrorKind.TRUNCATED, r"ended without .*may be cut off", None),
]

CLEAN = ["What is rain?", "Why do cats purr?"]


def questions(cases: list[FaultCase] | None = None) -> list[str]:
    """The run's questions: one per fault case (tagged; default: every case), then the
    clean ones."""
    chosen = CASES if cases is None else cases
    return [f"[f{CASES.index(c):02d}] Why is the sky blue?" for c in chosen] + CLEAN


async def arm(root: str) -> None:
    """Map each tagged question to its fault on the built-in endpoint at ``root``."""
    rules = {f"[f{i:02d}]": case.fault for i, case in enumerate(CASES)}
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(f"{root}/_splitdesk/faults", json={"by_prompt": rules})
        response.raise_for_status()


async def server_records(root: str, traces: list[RequestTrace]) -> list[dict[str, Any] | None]:
    """The endpoint's emission log of each request (None: no response headers arrived, so
    the client never learnt its id)."""
    out: list[dict[str, Any] | None] = []
    async with httpx.AsyncClient(timeout=10) as client:
        for r in traces:
            if r.request_id is None:
                out.append(None)
                continue
            response = await client.get(f"{root}/_splitdesk/trace/{r.request_id}")
            response.raise_for_status()
            out.append(response.json())
    return out


def check_request(case: FaultCase | None, r: RequestTrace, record: dict[str, Any] | None) -> None:
    """Assert that request ``r`` ended as a user needs after ``case`` (None: no fault)."""
    where = f"request {r.req} ({case.fault if case else 'no fault'})"
    assert r.t_send is not None and r.t_end is not None and r.t_end >= r.t_send, where
    if case is None or case.kind is None:
        assert r.outcome == "done" and r.error is None, (where, r.error)
        assert r.finish_reason is not None, where
    else:
        assert r.outcome == "failed" and r.error is not None, (where, r.outcome)
        assert r.error.kind == case.kind, (where, r.error)
        assert re.search(case.words, r.error.message), (where, r.error.message)
        assert "Traceback" not in r.error.message and len(r.error.message) <= 300, where
    if record is None:  # cut before any header: nothing arrived, nothing was sent
        assert case is not None and case.fault in ("refuse", "reset", "hang"), where
        assert r.text == "" and not r.event_times, where
        return
    assert record["fault"] == (case.fault if case else None), (where, record["fault"])
    # Nothing lost, duplicated or reordered: the client holds exactly what was delivered.
    assert r.text == record["sent_text"], where
    assert len(r.event_times) == record["sent_events"], where
    if case is not None and case.events is not None:
        assert record["sent_events"] == case.events, (where, record["sent_events"])
    if record["sent_events"]:  # partial text keeps its timings
        assert r.first_text_t is not None and r.last_token_t is not None, where
        assert r.first_text_t <= r.last_token_t <= r.t_end, where
    if case is not None and case.fault == "split-utf8":
        assert any(ord(c) > 0x7FF for c in r.text), where  # 3- and 4-byte characters came
