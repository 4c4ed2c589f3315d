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

from dataclasses import dataclass, replace
from typing import Literal

from splitdesk.core.run.events import Group
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.providers.base import Prompt

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
    """One request: its ``group``, the 0-based ``questions`` it asks, the ``prompt`` text
    (the user message) and its ``max_tokens`` cap (``None``: no cap).

    With a shared context (:func:`make_plan`'s ``context``): ``system`` is the system
    message carrying it (template ``context_as = "system"``), else ``None`` and the context
    opens ``prompt``; ``shared_chars``: characters at the start of ``prompt`` that every
    request of the side shares (the run's opening line and the context block);
    ``context_chars``: the context's own length; ``cache_control``: mark the shared part as
    a cache breakpoint where the dialect wants one (Anthropic)."""

    group: Group
    questions: tuple[int, ...]
    prompt: str
    max_tokens: int | None
    system: str | None = None
    shared_chars: int = 0
    context_chars: int = 0
    cache_control: bool = False

    def as_prompt(self) -> Prompt:
        """What the provider sends (:class:`splitdesk.providers.base.Prompt`)."""
        return Prompt(self.prompt, self.system, self.shared_chars, self.cache_control)

    def opened_with(self, line: str) -> RequestSpec:
        """This request with ``line`` (and a newline) first in its prompt: at the start of
        the system message when the context went there, else of the user message (then
        part of the shared opening when there is a context)."""
        if self.system is not None:
            return replace(self, system=f"{line}\n{self.system}")
        shared = self.shared_chars + len(line) + 1 if self.context_chars else 0
        return replace(self, prompt=f"{line}\n{self.prompt}", shared_chars=shared)


@dataclass(frozen=True)
class Phase:
    """Requests released together; when ``sequential``, one after another instead. A
    ``chain`` phase is sequential and each request after the first is sent with the previous
    request's answer in its prompt (:func:`chain_prompt`; the runner fills it in)."""

    name: str
    requests: tuple[RequestSpec, ...]
    sequential: bool = False
    chain: bool = False


def chain_prompt(prompt: str, previous_answer: str, shared_chars: int = 0) -> str:
    """The prompt a chained request is sent with: the previous request's answer text, then
    its own ``prompt`` — after the first ``shared_chars`` characters (the shared context
    and the run's opening line stay first, so a prefix cache can still share them). With an
    empty answer (the previous request failed) the prompt is sent unchanged."""
    if not previous_answer.strip():
        return prompt
    head, rest = prompt[:shared_chars], prompt[shared_chars:]
    return f"{head}Answer to the previous question:\n{previous_answer.strip()}\n\n{rest}"


@dataclass(frozen=True)
class RunPlan:
    """Phases run one after another; request indices run through all phases in order."""

    mode: Mode
    phases: tuple[Phase, ...]

    @property
    def requests(self) -> list[RequestSpec]:
        """Every request, in index order."""
        return [r for p in self.phases for r in p.requests]

    @property
    def has_context(self) -> bool:
        """The requests carry a shared context."""
        return any(r.context_chars for r in self.requests)


def make_plan(
    mode: Mode,
    questions: list[str],
    template: CombinedTemplate,
    max_tokens_per_answer: int | None,
    with_sequential: bool = False,
    context: str = "",
) -> RunPlan:
    """The plan of ``mode`` for ``questions``, each prompt opened by the shared ``context``
    when there is one (where the template's ``context_as`` says; module
    :mod:`splitdesk.core.run.template`). Raises ``ValueError`` for an unknown mode or
    fewer than one question (combined needs at least two to make sense, but one is allowed
    for probing an endpoint)."""
    if not questions:
        raise ValueError("a run needs at least one question")
    n = len(questions)
    combined_cap = None if max_tokens_per_answer is None else max_tokens_per_answer * n
    context = context.strip()

    def spec(group: Group, asked: tuple[int, ...], prompt: str, cap: int | None) -> RequestSpec:
        if not context:
            return RequestSpec(group, asked, prompt, cap)
        mark = template.cache_control
        if template.context_as == "system":
            return RequestSpec(group, asked, prompt, cap, context, 0, len(context), mark)
        block = template.context_block(context)
        return RequestSpec(group, asked, block + prompt, cap, None, len(block), len(context), mark)

    combined = spec("combined", tuple(range(n)), template.render(questions), combined_cap)

    def singles(group: Group) -> tuple[RequestSpec, ...]:
        return tuple(spec(group, (i,), q, max_tokens_per_answer) for i, q in enumerate(questions))

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
