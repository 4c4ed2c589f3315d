"""Each question's two answers side by side: its section of the combined reply and its own
parallel request's answer, with their lengths in tokens.

The seed article claims two things: parallel requests finish sooner, and each keeps the
model's attention on one question. The second is read, not measured: this module pairs
the texts so a person can compare them (``ui/stage/answers.py`` shows them).

Definitions:

* the combined reply's section for question *k*: its text from the end of answer *k*'s
  marker (``SectionSpan.body_offset``) to the section's end (the next answer's marker, or
  the reply's end), as the answer-section parser found it (:mod:`splitdesk.core.run.sections`);
  ``None`` when the parser found no marker for *k* (the reply skipped it, or had no markers);
* its tokens: the combined request's text events that arrived inside the section's time
  span, each counting :func:`~splitdesk.core.analyse.metrics.tokens_per_event` — one usage
  figure spread over the reply, so always an estimate (``~``);
* the parallel answer: the text of the parallel request asking *k* alone, and its output
  tokens as the figure set counts them (:func:`~splitdesk.core.analyse.metrics.request_figures`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from splitdesk.builtin_endpoint import BUILTIN_MODEL
from splitdesk.core.analyse.metrics import request_figures, tokens_per_event
from splitdesk.core.run.run_state import RequestTrace, RunState


@dataclass(frozen=True)
class AnswerPair:
    """Question ``question`` (0-based): its combined section's text and estimated tokens,
    its parallel answer's text and tokens (``None`` where that side has no answer)."""

    question: int
    combined_text: str | None
    combined_tokens: float | None
    parallel_text: str | None
    parallel_tokens: int | None
    parallel_estimated: bool = False


def _section_text(trace: RequestTrace, question: int) -> str | None:
    span = trace.sections.get(question)
    if span is None:
        return None
    text = trace.text
    later = [s.offset for s in trace.sections.values() if s.offset > span.offset]
    end = span.end_offset if span.end_offset is not None else min(later, default=len(text))
    return text[span.body_offset : max(end, span.body_offset)].strip()


def _section_tokens(trace: RequestTrace, question: int) -> float | None:
    span = trace.sections.get(question)
    if span is None:
        return None
    later = [s.start_t for s in trace.sections.values() if s.start_t > span.start_t]
    end_t = span.end_t if span.end_t is not None else min(later, default=float("inf"))
    times = trace.event_times
    count = bisect_right(times, end_t) - bisect_left(times, span.start_t)
    return count * tokens_per_event(trace)


def answer_pairs(state: RunState) -> list[AnswerPair]:
    """One :class:`AnswerPair` per question of ``state`` (module docstring), in order; the
    first combined request and each question's first parallel request are read."""
    n = len(state.info.questions) if state.info is not None else 0
    combined = next((t for t in state.requests if t.group == "combined"), None)
    parallel: dict[int, RequestTrace] = {}
    for t in state.requests:
        if t.group == "parallel" and len(t.questions) == 1:
            parallel.setdefault(t.questions[0], t)
    pairs = []
    for k in range(n):
        p = parallel.get(k)
        sent = p is not None and p.t_send is not None
        figures = request_figures(p) if p is not None and sent else None
        pairs.append(
            AnswerPair(
                k,
                _section_text(combined, k) if combined is not None else None,
                _section_tokens(combined, k) if combined is not None else None,
                p.text.strip() if p is not None and p.text else None,
                figures.output_tokens if figures is not None else None,
                figures.tokens_estimated if figures is not None else False,
            )
        )
    return pairs


def synthetic_text(state: RunState) -> bool:
    """Whether the run's answers came from the built-in endpoint, whose text is generated
    from phrases seeded by the question (``sim/textgen.py``): the same both ways, so alike
    columns say nothing about a model."""
    return state.info is not None and state.info.endpoint.get("model") == BUILTIN_MODEL
