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
      context_as = "user"      # or "system": where the shared context goes
      cache_control = false    # Anthropic: mark the context as a cache breakpoint

  and optionally a **shared context**, the document every question is about, first in
  every prompt (:mod:`splitdesk.core.run.template`)::

      context = '''The text …'''          # the text itself, or
      context_file = "contract.txt"        # a UTF-8 file next to the set

* **Plain text**: one question per line; blank lines and lines starting with ``#`` are skipped.

A file is read as TOML when its name ends in ``.toml`` or its content looks like a question
set (a ``[[questions]]`` table, or a ``version =``/``title =`` line at the top level). Such a
file with a TOML syntax error is an error naming the line and column — never quietly read as
plain text. Fields of the wrong type, unknown fields and a newer ``version`` are errors that
name the question and the field in words (``question 3: "text" must be text, got 42``).
The TOML syntax itself is read by ``tomllib``; only the error's position is taken from its
message (Python 3.11's ``TOMLDecodeError`` has no line/column attributes).
"""

from __future__ import annotations

import functools
import re
import reprlib
import tomllib
import unicodedata
from importlib.resources import files
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from splitdesk.core.run.labels import question_label
from splitdesk.core.run.template import CombinedTemplate

FORMAT_VERSION = 1

#: Unicode categories that show nothing: separators (spaces), control and format
#: characters (zero-width space U+200B, joiners, byte-order mark U+FEFF …).
_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})


def question_text(raw: str) -> str:
    """``raw`` as a question: without the spaces around it, or ``""`` when it is blank —
    nothing a reader can see (empty, whitespace, zero-width or other invisible
    characters). The one rule for every way questions come in: ``-q``, files, the editor.
    A blank question is refused (``-q``) or skipped (an empty row or line)."""
    text = raw.strip()
    if any(unicodedata.category(c) not in _INVISIBLE for c in text):
        return text
    return ""


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
        return question_text(v)

    @property
    def label(self) -> str:
        """The short label of pane headers and timeline lanes: the title, or 2–3 words
        derived from the text (:func:`splitdesk.core.run.labels.question_label`)."""
        return question_label(self.text, self.title)


#: the largest shared context read (characters; ~256k tokens at 4 characters a token)
MAX_CONTEXT_CHARS = 1_000_000


class QuestionSet(BaseModel):
    """An ordered, named list of questions, optionally with its own combined template and a
    shared ``context`` (the document the questions are about). ``context_file``: the file
    the context was read from, named relative to the set's file (kept so that saving the
    set keeps the reference instead of copying the text in)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = FORMAT_VERSION
    title: str = "Untitled"
    questions: list[Question] = Field(default_factory=list)
    template: CombinedTemplate | None = None
    context: str = ""
    context_file: str = ""

    @field_validator("context")
    @classmethod
    def _context_size(cls, v: str) -> str:
        if len(v) > MAX_CONTEXT_CHARS:
            raise ValueError(
                f"the shared context has {len(v):,} characters; at most "
                f"{MAX_CONTEXT_CHARS:,} are read"
            )
        return v

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
    lines = [question_text(ln) for ln in text.splitlines()]
    return QuestionSet(
        title=title, questions=[Question(text=ln) for ln in lines if ln and not ln.startswith("#")]
    )


#: Lines that only a TOML question set has (a plain question never starts this way).
_TOML_SHAPE = re.compile(
    r"^\s*(\[\[\s*questions\s*\]\]|\[\s*template\s*\]|(version|title|questions)\s*=)", re.MULTILINE
)
_TOML_WHERE = re.compile(r"^(?P<what>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def looks_like_toml(text: str) -> bool:
    """True when ``text`` has a line only a TOML question set would have."""
    return _TOML_SHAPE.search(text) is not None


def _syntax_error(exc: tomllib.TOMLDecodeError) -> QuestionFileError:
    found = _TOML_WHERE.match(str(exc))
    if found is None:  # "Expected … (at end of document)" and the like
        return QuestionFileError(f"not valid TOML: {exc}")
    what = found["what"][:1].lower() + found["what"][1:]
    return QuestionFileError(
        f"not valid TOML at line {found['line']}, column {found['col']}: {what}"
    )


_TYPE_WORDS = {
    "string_type": "must be text in quotes",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "list_type": "must be a list",
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "missing": "is missing",
    "extra_forbidden": "is not a field splitdesk knows",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "literal_error": "must be one of",
}
_QUESTION_FIELDS = "a question has `text` and an optional `title`"
_SET_FIELDS = (
    "a question set has `version`, `title`, `context` or `context_file`, `[[questions]]` "
    "and `[template]`"
)
_TEMPLATE_FIELDS = "a template has `text`, `marker`, `context_as` and `cache_control`"


#: What a file nested deeper than Python's parser (and ``repr``) can follow is told.
TOO_DEEP = "TOML nested too deeply (arrays or tables hundreds of levels inside one another)"


def _got(value: Any) -> str:
    try:
        shown = repr(value)
    except RecursionError:  # a value nested hundreds deep: its outer levels
        shown = reprlib.repr(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def _in_words(error: Any) -> str:
    """One pydantic error as a sentence about questions (never pydantic's own terms)."""
    loc = [p for p in error["loc"]]
    kind = error["type"]
    said = _TYPE_WORDS.get(kind)
    if said is None:  # a validator's own sentence, e.g. the template's marker needs {k}
        said = ": " + str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    else:
        said = " " + said
    if kind == "literal_error":  # "must be one of 'user' or 'system'"
        said = " must be " + str(error.get("msg", "")).removeprefix("Input should be ")
    got = "" if kind in ("missing", "extra_forbidden") else f", got {_got(error.get('input'))}"
    if loc[:1] == ["questions"] and len(loc) >= 2 and isinstance(loc[1], int):
        where = f"question {loc[1] + 1}"
        if len(loc) == 2:
            return f'{where} must be a [[questions]] table with text = "…"{got}'
        hint = f" ({_QUESTION_FIELDS})" if kind == "extra_forbidden" else ""
        return f"{where}: `{loc[2]}`{said}{got}{hint}"
    if loc == ["questions"]:
        return f"`questions` must be a list of [[questions]] tables{got}"
    if loc[:1] == ["template"]:
        if len(loc) == 1:
            return f"`[template]` must be a table with `text` and `marker`{got}"
        hint = f" ({_TEMPLATE_FIELDS})" if kind == "extra_forbidden" else ""
        return f"the template's `{loc[1]}`{said}{got}{hint}"
    hint = f" ({_SET_FIELDS})" if kind == "extra_forbidden" else ""
    name = ".".join(str(p) for p in loc) or "the file"
    return f"`{name}`{said}{got}{hint}"


def read_context_file(name: str, folder: Path | None) -> str:
    """The text of a set's ``context_file`` ``name``, read relative to ``folder`` (the
    set's own folder; the working folder when ``None``). Raises :class:`QuestionFileError`
    naming the file when it cannot be read, is not UTF-8, or is larger than
    :data:`MAX_CONTEXT_CHARS`. Blocking: call off the GUI thread."""
    path = Path(name).expanduser()
    if not path.is_absolute() and folder is not None:
        path = folder / path
    from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded_text

    try:
        # at most 4 bytes a character: more bytes than that cannot be a context it reads
        text = read_bounded_text(
            path, 4 * MAX_CONTEXT_CHARS, "a shared context", f"context_file {name!r}"
        )
    except FileTooLargeError as exc:
        raise QuestionFileError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise QuestionFileError(
            f"context_file {name!r}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
            f"offset {exc.start})"
        ) from None
    except OSError as exc:
        raise QuestionFileError(
            f"context_file {name!r}: cannot read: {exc.strerror or exc}"
        ) from None
    if len(text) > MAX_CONTEXT_CHARS:
        raise QuestionFileError(
            f"context_file {name!r}: {len(text):,} characters; at most {MAX_CONTEXT_CHARS:,} "
            "are read"
        )
    return text


def parse_question_set(
    text: str, title: str = "Untitled", toml: bool | None = None, folder: Path | None = None
) -> QuestionSet:
    """A question set from file content: TOML when ``toml`` is True, or when ``toml`` is
    None and the content looks like a TOML question set (:func:`looks_like_toml`);
    otherwise plain text. A ``context_file`` is read relative to ``folder`` (the set's
    folder; :func:`read_context_file`) into ``context``. Raises :class:`QuestionFileError`
    for a TOML syntax error (with its line and column), fields of the wrong type or
    unknown fields (naming the question and field), a ``version`` this splitdesk does not
    understand, both ``context`` and ``context_file``, or a context file that cannot be
    read."""
    if toml is None:
        toml = looks_like_toml(text)
    if not toml:
        return parse_plain(text, title)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _syntax_error(exc) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise QuestionFileError(f"not a question set: {TOO_DEEP}") from None
    version = data.get("version", FORMAT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise QuestionFileError(
            f"`version` must be a whole number (this splitdesk writes {FORMAT_VERSION}), "
            f"got {_got(version)}"
        )
    if version > FORMAT_VERSION:
        raise QuestionFileError(
            f"question-set format version {version} is newer than this splitdesk "
            f"understands ({FORMAT_VERSION}); update splitdesk to open it"
        )
    if "questions" not in data:
        raise QuestionFileError(
            'no questions: add one [[questions]] table per question, each with text = "…"'
        )
    data.setdefault("title", title)
    name = data.get("context_file")
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise QuestionFileError(
                f"`context_file` must be a file name in quotes, got {_got(name)}"
            )
        if data.get("context"):
            raise QuestionFileError(
                "give the shared context once: `context` (the text) or `context_file` "
                "(a file next to the set), not both"
            )
        data["context"] = read_context_file(name, folder)
    try:
        return QuestionSet.model_validate(data)
    except RecursionError:  # parsed, at the edge of the stack: a field nested too deeply
        raise QuestionFileError(f"not a question set: {TOO_DEEP}") from None
    except ValidationError as exc:
        # an unknown field first: "txt is not a field" explains "text is missing"
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise QuestionFileError(_in_words(errors[0]) + more) from None


def load_question_set(path: Path) -> QuestionSet:
    """Read a question-set file (TOML or plain text). Raises :class:`QuestionFileError`
    with the file name for unreadable or invalid files. Blocking: call off the GUI thread."""
    from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded_text
    from splitdesk.core.run.file_words import os_error_words
    from splitdesk.core.run.limits import QUESTION_FILE_BYTES

    try:  # a BOM from Windows editors is not text
        text = read_bounded_text(
            path, int(QUESTION_FILE_BYTES.high), "a question set", path.name,
            QUESTION_FILE_BYTES.why,
        )  # fmt: skip
    except FileTooLargeError as exc:
        raise QuestionFileError(str(exc)) from None
    except UnicodeDecodeError as exc:  # a binary file, or text in another encoding
        byte = exc.object[exc.start]
        raise QuestionFileError(
            f"{path.name}: cannot read: not UTF-8 text (byte 0x{byte:02x} at offset {exc.start}); "
            "save the questions as UTF-8 (TOML or one question per line)"
        ) from None
    except OSError as exc:
        raise QuestionFileError(f"{path.name}: cannot read: {os_error_words(exc)}") from None
    try:
        return parse_question_set(
            text,
            title=path.stem.replace("-", " ").replace("_", " ").capitalize(),
            toml=True if path.suffix.lower() == ".toml" else None,
            folder=path.parent,
        )
    except QuestionFileError as exc:
        raise QuestionFileError(f"{path.name}: {exc}") from None


def dump_question_set(qs: QuestionSet) -> str:
    """The TOML text of ``qs`` (round-trips through :func:`parse_question_set`)."""
    data = qs.model_dump(exclude_none=True)
    for q in data["questions"]:
        if not q.get("title"):
            q.pop("title", None)
    if data.get("context_file"):  # the reference, not a copy of the file's text
        data.pop("context", None)
    for key in ("context", "context_file"):
        if not data.get(key):
            data.pop(key, None)
    return "# splitdesk question set\n" + tomli_w.dumps(data, multiline_strings=True)


def builtin_sets() -> dict[str, QuestionSet]:
    """The question sets shipped in ``resources/questions``, keyed by file stem, in name
    order: read and parsed once (the window asked for them ten times as it was built, 17
    ms of its start), each call a copy of its own (a caller changing a set's list of
    questions changes no other caller's)."""
    return {name: qs.model_copy(deep=True) for name, qs in _builtin_sets()}


@functools.cache
def _builtin_sets() -> tuple[tuple[str, QuestionSet], ...]:
    folder = files("splitdesk.resources").joinpath("questions")
    out: list[tuple[str, QuestionSet]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            text = entry.read_text("utf-8")
            stem = entry.name.removesuffix(".toml")
            out.append((stem, parse_question_set(text, folder=Path(str(folder)))))
    return tuple(out)


DEFAULT_SET = "everyday-five"
