"""Run plans: which requests a run sends, grouped into phases.

Modes (DESIGN.md, issue #3):

* ``combined`` — one request asking every question (``max_tokens`` = N × per-answer cap);
* ``parallel`` — N requests, one per question, released together from one barrier;
* ``sequential`` — the same N requests one after another (the baseline);
* ``side-by-side`` — combined and parallel released together (the demo view);
* ``one-after-another`` — combined, then parallel (then sequential when asked), each phase
  on an idle server and aligned at its own t=0: the fair measurement;
* ``all`` — ``one-after-another`` with sequential (``splitdesk bench --mode all``);
* ``chain`` — dependent questions sent as the chain you would need without combining: the
  questions one after another, each request's prompt holding the previous request's answer
  (:func:`chain_prompt`), so question 2 can use answer 1 (group ``sequential``);
* ``dependent`` — the combined request, then the chain, each on an idle server and aligned
  at its own t=0 (the dependent-questions scenario; ``splitdesk bench --mode dependent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from splitdesk.core.run.events import Group
from splitdesk.core.run.template import CombinedTemplate

Mode = Literal[
    "combined",
    "parallel",
    "sequential",
    "side-by-side",
    "one-after-another",
    "all",
    "chain",
    "dependent",
]
MODES: tuple[Mode, ...] = (
    "combined",
    "parallel",
    "sequential",
    "side-by-side",
    "one-after-another",
    "all",
    "chain",
    "dependent",
)


@dataclass(frozen=True)
class RequestSpec:
    """One request: its ``group``, the 0-based ``questions`` it asks, the ``prompt`` text and
    its ``max_tokens`` cap (``None``: no cap)."""

    group: Group
    questions: tuple[int, ...]
    prompt: str
    max_tokens: int | None


@dataclass(frozen=True)
class Phase:
    """Requests released together; when ``sequential``, one after another instead. A
    ``chain`` phase is sequential and each request after the first is sent with the previous
    request's answer in its prompt (:func:`chain_prompt`; the runner fills it in)."""

    name: str
    requests: tuple[RequestSpec, ...]
    sequential: bool = False
    chain: bool = False


def chain_prompt(prompt: str, previous_answer: str) -> str:
    """The prompt a chained request is sent with: the previous request's answer text, then
    its own ``prompt``. With an empty answer (the previous request failed) the prompt is
    sent unchanged."""
    if not previous_answer.strip():
        return prompt
    return f"Answer to the previous question:\n{previous_answer.strip()}\n\n{prompt}"


@dataclass(frozen=True)
class RunPlan:
    """Phases run one after another; request indices run through all phases in order."""

    mode: Mode
    phases: tuple[Phase, ...]

    @property
    def requests(self) -> list[RequestSpec]:
        """Every request, in index order."""
        return [r for p in self.phases for r in p.requests]


def make_plan(
    mode: Mode,
    questions: list[str],
    template: CombinedTemplate,
    max_tokens_per_answer: int | None,
    with_sequential: bool = False,
) -> RunPlan:
    """The plan of ``mode`` for ``questions``. Raises ``ValueError`` for an unknown mode or
    fewer than one question (combined needs at least two to make sense, but one is allowed
    for probing an endpoint)."""
    if not questions:
        raise ValueError("a run needs at least one question")
    n = len(questions)
    combined_cap = None if max_tokens_per_answer is None else max_tokens_per_answer * n
    combined = RequestSpec("combined", tuple(range(n)), template.render(questions), combined_cap)

    def singles(group: Group) -> tuple[RequestSpec, ...]:
        return tuple(
            RequestSpec(group, (i,), q, max_tokens_per_answer) for i, q in enumerate(questions)
        )

    if mode == "combined":
        phases: tuple[Phase, ...] = (Phase("combined", (combined,)),)
    elif mode == "parallel":
        phases = (Phase("parallel", singles("parallel")),)
    elif mode == "sequential":
        phases = (Phase("sequential", singles("sequential"), sequential=True),)
    elif mode == "side-by-side":
        phases = (Phase("side-by-side", (combined, *singles("parallel"))),)
    elif mode in ("one-after-another", "all"):
        phases = (Phase("combined", (combined,)), Phase("parallel", singles("parallel")))
        if with_sequential or mode == "all":
            phases += (Phase("sequential", singles("sequential"), sequential=True),)
    elif mode == "chain":
        phases = (Phase("chain", singles("sequential"), sequential=True, chain=True),)
    elif mode == "dependent":
        phases = (
            Phase("combined", (combined,)),
            Phase("chain", singles("sequential"), sequential=True, chain=True),
        )
    else:
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")
    return RunPlan(mode, phases)
