"""A recording's figures as files: a CSV table (one row per request) and the bench JSON
document (:func:`splitdesk.core.files.report.bench_document`, the ``splitdesk bench --json``
contract). Every value is read from the figure set (:func:`splitdesk.core.analyse.metrics.
request_figures`) of the run rebuilt from its events; nothing is computed here.

CSV columns (:data:`CSV_COLUMNS`; seconds, tokens; empty = not observed):

=================  =====================================================================
run                1-based index of the run in the recording
run_label          the run's label ("side by side", "parallel · repeat 1" …)
req                0-based request index within the run
group              combined | parallel | sequential
questions          1-based question numbers the request asks, separated by spaces
outcome            done | failed | stopped (empty: never finished)
t_send_s           first send, seconds from the run's start
ttfb_s             response headers, from t_send
ttft_s             first visible output (TTFT), from t_send
attempt_ttft_s     the same, from the answered attempt's send
ttft_answer_s      first answer text (reasoning excluded), from t_send
e2e_s              last token (E2E latency), from t_send
stream_end_s       the stream's end, from t_send
tpot_s             (E2E − TTFT) / (output_tokens − 1)
decode_tok_s       (output_tokens − 1) / (E2E − TTFT)
output_tokens      usage when the server reported it, else the event count
tokens_source      usage | events
prompt_tokens      the server's prompt count (usage; empty: none reported)
cached_prompt_tokens  the part of it the server's prefix cache served (empty: none reported)
queue_s            the server's queue time before prefill (empty: not reported)
prefill_s          the server's prefill time (empty: not reported)
attempts           sends (1 + retries after a 429)
finish_reason      the API's finish reason
error_kind         the failure's kind (empty when none)
error              the failure's message (already scrubbed of keys in the recording)
=================  =====================================================================
"""

from __future__ import annotations

import csv
import io
from typing import Any

from splitdesk.core.analyse.metrics import request_figures
from splitdesk.core.files.recording import Recording, predictions_of, rebuild_state
from splitdesk.core.files.report import BenchRun, bench_document, split_run

CSV_COLUMNS = (
    "run",
    "run_label",
    "req",
    "group",
    "questions",
    "outcome",
    "t_send_s",
    "ttfb_s",
    "ttft_s",
    "attempt_ttft_s",
    "ttft_answer_s",
    "e2e_s",
    "stream_end_s",
    "tpot_s",
    "decode_tok_s",
    "output_tokens",
    "tokens_source",
    "prompt_tokens",
    "cached_prompt_tokens",
    "queue_s",
    "prefill_s",
    "attempts",
    "finish_reason",
    "error_kind",
    "error",
)

_BENCH_MODES = ("combined", "parallel", "sequential")


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6f}"
    return value


def figures_csv(recording: Recording) -> str:
    """The CSV text (header :data:`CSV_COLUMNS`, then one row per request of every run).
    Raises :class:`~splitdesk.core.files.recording.RecordingError` for inconsistent events."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for i, run in enumerate(recording.runs):
        state = rebuild_state(run)
        for trace in state.requests:
            f = request_figures(trace)
            sent = f.t_send is not None
            row = {
                "run": i + 1,
                "run_label": run.label,
                "req": f.req,
                "group": f.group,
                "questions": " ".join(str(q + 1) for q in f.questions),
                "outcome": f.outcome,
                "t_send_s": f.t_send,
                "ttfb_s": f.ttfb_s,
                "ttft_s": f.ttft_s,
                "attempt_ttft_s": f.attempt_ttft_s,
                "ttft_answer_s": f.ttft_answer_s,
                "e2e_s": f.e2e_s,
                "stream_end_s": f.stream_end_s,
                "tpot_s": f.tpot_s,
                "decode_tok_s": f.decode_tok_s,
                "output_tokens": f.output_tokens if sent else None,
                "tokens_source": f.tokens_source if sent else None,
                "prompt_tokens": f.prompt_tokens,
                "cached_prompt_tokens": f.cached_prompt_tokens,
                "queue_s": f.split.queue_s if f.split else None,
                "prefill_s": f.split.prefill_s if f.split else None,
                "attempts": f.attempts,
                "finish_reason": f.finish_reason,
                "error_kind": f.error.kind if f.error else None,
                "error": f.error.message if f.error else None,
            }
            writer.writerow([_cell(row[c]) for c in CSV_COLUMNS])
    return out.getvalue()


def bench_runs(recording: Recording) -> list[BenchRun]:
    """The recording's runs as the bench document takes them: a bench recording's runs as
    they were; a window run (side by side, one after another) split into one entry per
    group it sent (each holding only that group's requests, so a makespan is one group's)."""
    runs: list[BenchRun] = []
    for run in recording.runs:
        state = rebuild_state(run)
        if run.mode in _BENCH_MODES:
            runs.append(BenchRun(run.mode, run.repeat, state))
            continue
        # one entry per side it sent, with the prediction the window shows beside it
        runs.extend(split_run(state, run.repeat, predictions_of(run)))
    return runs


def endpoint_json(recording: Recording) -> dict[str, str]:
    """The bench document's ``endpoint`` object for ``recording`` (URL as recorded,
    already redacted)."""
    ep = recording.endpoint
    out = {"url": ep.url, "api": ep.api, "model": ep.model}
    if ep.preset == "builtin" and ep.profile:
        out["url"] = f"builtin:{ep.profile} ({ep.url})"
        out["profile"] = ep.profile
    return out


def figures_json(recording: Recording) -> dict[str, Any]:
    """The bench JSON document of ``recording`` (the ``splitdesk bench --json`` contract)."""
    return bench_document(endpoint_json(recording), recording.question_texts, bench_runs(recording))
