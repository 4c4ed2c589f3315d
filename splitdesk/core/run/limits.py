"""What a run may hold: one bound per kind of number, with the reason, read everywhere.

The command line (``bench``, ``sweep``, ``-q``/``--questions``), the settings file, the
endpoint panel, question-set files and recordings all take these, so the same number has
the same bound wherever it is typed, and every refusal says why. Simulator parameters
have theirs in :class:`splitdesk.sim.params.SimParams` (``sim`` does not import ``core``),
``Retry-After`` its cap in :mod:`splitdesk.providers.retry_after`.

Each bound is generous for real use and small enough that a run ends and fits in memory:
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """A closed range ``low``…``high`` for one kind of number, and why ``high`` is where it
    is (said in every refusal)."""

    low: float
    high: float
    why: str
    unit: str = ""

    def problem(self, value: float) -> str | None:
        """Why ``value`` is out of range (not finite, below, above), or ``None``."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"must be a finite number (got {value})"
        if not self.low <= value <= self.high:
            unit = f" {self.unit}" if self.unit else ""
            return f"must be {_n(self.low)}–{_n(self.high)}{unit} (got {_n(value)}): {self.why}"
        return None


def _n(x: float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


#: Output tokens one answer may be capped at (``--max-tokens``, the endpoint's max tokens).
MAX_TOKENS = Bound(1, 131_072, "no current model writes more than 128k tokens in one answer")
#: Questions in one run: each is a parallel request and a pane.
QUESTIONS = Bound(1, 256, "each question is a request and a pane; 256 already fill a screen")
#: Characters of one question.
QUESTION_CHARS = Bound(1, 100_000, "a question longer than a short book is a document")
#: Characters of all questions of one run together (the combined prompt holds them all,
#: and the window's engine pipe carries them three times: questions, prompts, the plan).
RUN_CHARS = Bound(1, 2_000_000, "the window's engine takes a run of at most 2 million characters")
#: Bytes of a question-set file.
QUESTION_FILE_BYTES = Bound(0, 8 * 1024 * 1024, "a question set is text, not 8 MB")
#: Repeats of every mode (``--repeat``) and warm-up rounds (``--warmup``).
REPEAT = Bound(1, 1000, "medians settle within tens of repeats")
WARMUP = Bound(0, 100, "a few rounds warm any server")
#: Retries of a request answered 429.
RETRY_429 = Bound(0, 20, "each retry waits the server's Retry-After (up to 10 min)")
#: Connect and read timeouts (seconds).
TIMEOUT_S = Bound(0.001, 3600, "an hour without a byte is a dead connection", "s")
#: Pause between runs (seconds).
PAUSE_S = Bound(0, 3600, "an hour between runs is two sessions", "s")
#: Sampling temperature.
TEMPERATURE = Bound(0, 2, "APIs take 0–2")
#: Sampling seed (a signed 64-bit integer on every API that takes one).
SEED = Bound(-(2**63), 2**63 - 1, "APIs take a 64-bit integer")
#: Built-in endpoint speed factor (the simulator's own bound, repeated for the window).
SPEED = Bound(0.01, 100, "the built-in endpoint runs 0.01×–100×")
#: A run may keep at most this share of the memory available when it starts.
MEMORY_SHARE = 0.5
#: The longest a headless session (bench, sweep) may be expected to take (hours).
MAX_HOURS = 24.0


def questions_problem(questions: list[str]) -> str | None:
    """Why a run of ``questions`` is too large (count, one question's length, all their
    characters), or ``None``."""
    if problem := QUESTIONS.problem(len(questions)):
        return f"{len(questions)} questions: {problem.split(': ', 1)[-1]} (at most 256)"
    for k, q in enumerate(questions, 1):
        if len(q) > QUESTION_CHARS.high:
            return (
                f"question {k} has {len(q):,} characters: at most {int(QUESTION_CHARS.high):,} "
                f"({QUESTION_CHARS.why})"
            )
    total = sum(len(q) for q in questions)
    if total > RUN_CHARS.high:
        return (
            f"the questions hold {total:,} characters together: at most "
            f"{int(RUN_CHARS.high):,} ({RUN_CHARS.why})"
        )
    return None
