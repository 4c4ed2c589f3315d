"""Question sets: the ordered questions a run asks, and the files people keep them in.

File formats (``load_question_set`` picks by content, not by extension):

* **TOML** (``.toml``), the native format::

      # splitdesk question set
      version = 1
      title = "Everyday questions"
      [[questions]]
      text = "Why is the sky blue?"
      title = "Sky"            # optional short label for pane headers
      [template]               # optional: the combined-prompt template (core/template.py)
      text = "..."
      marker = "Answer {k}:"

* **Plain text**: one question per line; blank lines and lines starting with ``#`` are skipped.
"""

from __future__ import annotations

import tomllib
from importlib.resources import files
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from splitdesk.core.labels import question_label
from splitdesk.core.template import CombinedTemplate

FORMAT_VERSION = 1


class QuestionFileError(ValueError):
    """A question-set file could not be read; the message names the file and the problem."""


class Question(BaseModel):
    """One question: its ``text`` and an optional short ``title`` for headers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    title: str = ""

    @field_validator("text")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()

    @property
    def label(self) -> str:
        """The short label of pane headers and timeline lanes: the title, or 2–3 words
        derived from the text (:func:`splitdesk.core.labels.question_label`)."""
        return question_label(self.text, self.title)


class QuestionSet(BaseModel):
    """An ordered, named list of questions, optionally with its own combined template."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = FORMAT_VERSION
    title: str = "Untitled"
    questions: list[Question] = Field(default_factory=list)
    template: CombinedTemplate | None = None

    @property
    def texts(self) -> list[str]:
        """The non-empty question texts, in order (empty rows are skipped by a run)."""
        return [q.text for q in self.questions if q.text]


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def parse_plain(text: str, title: str = "Untitled") -> QuestionSet:
    """A question set from plain text: one question per non-empty line (``#`` comments)."""
    lines = [ln.strip() for ln in text.splitlines()]
    return QuestionSet(
        title=title, questions=[Question(text=ln) for ln in lines if ln and not ln.startswith("#")]
    )


def parse_question_set(text: str, title: str = "Untitled") -> QuestionSet:
    """A question set from file content: TOML when it parses as a question-set document,
    otherwise plain text. Raises :class:`QuestionFileError` for a TOML document with bad
    fields or an unsupported ``version``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return parse_plain(text, title)
    if "questions" not in data:
        return parse_plain(text, title)
    if data.get("version", FORMAT_VERSION) > FORMAT_VERSION:
        raise QuestionFileError(
            f"question-set format version {data['version']} is newer than this splitdesk "
            f"understands ({FORMAT_VERSION})"
        )
    data.setdefault("title", title)
    try:
        return QuestionSet.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise QuestionFileError(f"{where}: {first['msg']}") from None


def load_question_set(path: Path) -> QuestionSet:
    """Read a question-set file (TOML or plain text). Raises :class:`QuestionFileError`
    with the file name for unreadable or invalid files. Blocking: call off the GUI thread."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM from Windows editors is not text
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f"{path.name}: cannot read: {exc}") from None
    try:
        return parse_question_set(
            text, title=path.stem.replace("-", " ").replace("_", " ").capitalize()
        )
    except QuestionFileError as exc:
        raise QuestionFileError(f"{path.name}: {exc}") from None


def dump_question_set(qs: QuestionSet) -> str:
    """The TOML text of ``qs`` (round-trips through :func:`parse_question_set`)."""
    data = qs.model_dump(exclude_none=True)
    for q in data["questions"]:
        if not q.get("title"):
            q.pop("title", None)
    return "# splitdesk question set\n" + tomli_w.dumps(data, multiline_strings=True)


def save_question_set(qs: QuestionSet, path: Path) -> None:
    """Write ``qs`` as TOML, atomically (temp file then rename). Blocking: call off the GUI
    thread. Raises ``OSError``."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dump_question_set(qs), encoding="utf-8")
    tmp.replace(path)


def builtin_sets() -> dict[str, QuestionSet]:
    """The question sets shipped in ``resources/questions``, keyed by file stem, in name order."""
    folder = files("splitdesk.resources").joinpath("questions")
    out: dict[str, QuestionSet] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out[entry.name.removesuffix(".toml")] = parse_question_set(entry.read_text("utf-8"))
    return out


DEFAULT_SET = "everyday-five"
