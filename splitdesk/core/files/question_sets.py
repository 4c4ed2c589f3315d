"""Question-set files written: the TOML of :func:`splitdesk.core.run.questions.
dump_question_set`, through the atomic writer (whole or not at all)."""

from __future__ import annotations

from pathlib import Path

from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.run.questions import QuestionSet, dump_question_set


def save_question_set(qs: QuestionSet, path: Path) -> None:
    """Write ``qs`` as TOML, atomically (:mod:`splitdesk.core.files.atomic`). Blocking:
    call off the GUI thread. Raises ``OSError``."""
    write_atomic(path, dump_question_set(qs))
