"""Scenarios: ready-made demos for a talk — a question set, endpoint settings and a
one-line caption saying what to notice (issue #11, DESIGN.md "Scenarios and presentation").

A scenario is a TOML file (``resources/scenarios/*.toml`` ship with splitdesk; people write
their own in the same format)::

    # splitdesk scenario
    version = 1
    title = "Batching server"
    caption = "Parallel ≈ N× faster: the server decodes all answers in the same steps."
    questions = "everyday-five"      # a built-in question set (resources/questions) ...
    # [[questions]]                  # ... or the questions inline, as in a question set
    # text = "Why is the sky blue?"

    [run]                            # optional
    mode = "one-after-another"       # a mode of core/plans.py ("dependent" for a chain)
    max_tokens = 512                 # cap per answer (tokens); 0: no cap
    retry_429 = 0                    # retries of a request refused with HTTP 429

    [endpoint]                       # the built-in endpoint ...
    profile = "batching"             # a profile of `splitdesk sim --list-profiles`
    params = { speed = 1.0 }         # simulator parameter overrides
    # recording = "../demos/batching.splitdesk.json"   # ... or replay this recording

Unknown fields, wrong types and a newer ``version`` are :class:`ScenarioError` s naming
the file and the field (``batching.toml: `run.mode` must be one of …, got 'fast'``).
Simulator profile and parameter names are checked by the layer that may import the
simulator (:func:`check_builtin` takes its checker), since the core never imports it.
The TOML syntax is read by ``tomllib``; pydantic validates the fields.
"""

from __future__ import annotations

import reprlib
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded_text
from splitdesk.core.run.file_words import os_error_words
from splitdesk.core.run.limits import QUESTION_FILE_BYTES
from splitdesk.core.run.plans import Mode
from splitdesk.core.run.questions import TOO_DEEP, Question, QuestionSet, builtin_sets

FORMAT_VERSION = 1


class ScenarioError(ValueError):
    """A scenario file could not be read or is invalid; the message names the file and the
    field."""


class RunSettings(BaseModel):
    """How the scenario sends its questions: the plan ``mode`` (core/plans.py), the cap per
    answer in tokens (0: none) and how many times a request refused with 429 is retried."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode = "one-after-another"
    max_tokens: int = Field(512, ge=0, le=100_000)
    retry_429: int = Field(0, ge=0, le=20)


class EndpointSettings(BaseModel):
    """The built-in endpoint's ``profile`` and parameter overrides, or a ``recording`` to
    replay instead (a path; relative paths are read from the scenario file's folder)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: str = Field("batching", min_length=1)
    params: dict[str, bool | int | float | str] = Field(default_factory=dict)
    recording: str | None = Field(None, min_length=1)


class ScenarioFile(BaseModel):
    """The validated content of one scenario file (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(FORMAT_VERSION, ge=1, le=FORMAT_VERSION)
    title: str = Field(min_length=1)
    caption: str = Field(min_length=1, max_length=200)
    questions: str | list[Question]
    run: RunSettings = Field(default_factory=RunSettings)
    endpoint: EndpointSettings = Field(default_factory=EndpointSettings)

    @field_validator("caption")
    @classmethod
    def _one_line(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("must say what to notice in one line")
        return v


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario: its ``name`` (the file stem), the validated ``spec``, its
    ``question_set`` resolved, and the ``recording`` path when it replays one."""

    name: str
    spec: ScenarioFile
    question_set: QuestionSet
    recording: Path | None

    @property
    def title(self) -> str:
        """The scenario's title."""
        return self.spec.title

    @property
    def caption(self) -> str:
        """The one-line caption: what the audience should notice."""
        return self.spec.caption

    @property
    def questions(self) -> list[str]:
        """The question texts, in order."""
        return self.question_set.texts

    @property
    def max_tokens(self) -> int | None:
        """The cap per answer in tokens (``None``: no cap)."""
        return self.spec.run.max_tokens or None


def _field_error(exc: ValidationError) -> str:
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    err = errors[0]
    loc = [str(p) for p in err["loc"] if not str(p).startswith(("str", "list["))]
    name = ".".join(loc) or "the file"
    if err["type"] == "extra_forbidden":
        said = "is not a field of a scenario (see `splitdesk scenarios --help`)"
    elif err["type"] == "missing":
        said = "is missing"
    else:
        said = str(err.get("msg", "is not valid")).removeprefix("Value error, ")
        try:
            got = repr(err.get("input"))
        except RecursionError:  # a value nested hundreds deep: its outer levels
            got = reprlib.repr(err.get("input"))
        said = f"{said[:1].lower()}{said[1:]}, got {got if len(got) <= 40 else got[:39] + '…'}"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"`{name}` {said}{more}"


def parse_scenario(text: str, name: str, folder: Path | None = None) -> Scenario:
    """The scenario in TOML ``text``, named ``name``; ``folder`` resolves a relative
    recording path. Raises :class:`ScenarioError` (message names the field) for bad TOML,
    invalid or unknown fields, an unknown built-in question set or an empty question list."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise ScenarioError(f"not a scenario: {TOO_DEEP}") from None
    version = data.get("version", FORMAT_VERSION)
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise ScenarioError(
            f"`version` {version} is newer than this splitdesk understands ({FORMAT_VERSION})"
        )
    try:
        spec = ScenarioFile.model_validate(data)
    except RecursionError:  # parsed, at the edge of the stack: a field nested too deeply
        raise ScenarioError(f"not a scenario: {TOO_DEEP}") from None
    except ValidationError as exc:
        raise ScenarioError(_field_error(exc)) from None
    if isinstance(spec.questions, str):
        sets = builtin_sets()
        if spec.questions not in sets:
            raise ScenarioError(
                f"`questions` names no built-in question set: {spec.questions!r} "
                f"(known: {', '.join(sets)}); or give [[questions]] tables"
            )
        qs = sets[spec.questions]
    else:
        if not spec.questions or any(not q.text for q in spec.questions):
            raise ScenarioError("`questions` needs at least one question with text")
        qs = QuestionSet(title=spec.title, questions=spec.questions)
    combines = spec.run.mode not in ("parallel", "sequential", "chain")
    if combines and len(qs.questions) < 2:
        raise ScenarioError(f"`run.mode` {spec.run.mode!r} needs at least 2 questions")
    recording = None
    if spec.endpoint.recording is not None:
        recording = Path(spec.endpoint.recording)
        if not recording.is_absolute() and folder is not None:
            recording = folder / recording
    return Scenario(name, spec, qs, recording)


def load_scenario(path: Path) -> Scenario:
    """Read one scenario file. Raises :class:`ScenarioError` naming the file. Blocking:
    call off the GUI thread for user files."""
    try:  # a scenario is a question set and its settings: the question set's bound
        text = read_bounded_text(path, int(QUESTION_FILE_BYTES.high), "a scenario", str(path))
    except FileTooLargeError as exc:
        raise ScenarioError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{path}: not UTF-8 text (byte {exc.start}); save the scenario as UTF-8 TOML"
        ) from None
    except OSError as exc:
        raise ScenarioError(
            f"{path}: cannot read: {os_error_words(exc, 'scenario (.toml) file')}"
        ) from None
    try:
        return parse_scenario(text, path.stem, path.parent)
    except ScenarioError as exc:
        raise ScenarioError(f"{path.name}: {exc}") from None


def builtin_scenarios() -> dict[str, Scenario]:
    """The scenarios shipped in ``resources/scenarios``, keyed by name, in file-name order
    (the files are numbered ``01-batching.toml`` …; the name drops the number). Raises
    :class:`ScenarioError` if a shipped file is invalid (a test keeps them valid)."""
    folder = files("splitdesk.resources").joinpath("scenarios")
    out: dict[str, Scenario] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        stem = entry.name.removesuffix(".toml")
        name = stem.split("-", 1)[1] if stem[:2].isdigit() and "-" in stem else stem
        try:
            out[name] = parse_scenario(entry.read_text("utf-8"), name, Path(str(entry)).parent)
        except ScenarioError as exc:
            raise ScenarioError(f"{entry.name}: {exc}") from None
    return out


def check_builtin(scenario: Scenario, check: Callable[[str, dict[str, Any]], object]) -> None:
    """Check the scenario's profile and parameters with ``check`` (the simulator's
    ``SimParams.checked``, which raises ``ValueError`` with one line). Raises
    :class:`ScenarioError` naming the field; a scenario that replays a recording passes."""
    if scenario.recording is not None:
        return
    ep = scenario.spec.endpoint
    try:
        check(ep.profile, dict(ep.params))
    except ValueError as exc:
        field = "endpoint.profile" if "profile" in str(exc) else "endpoint.params"
        raise ScenarioError(f"{scenario.name}: `{field}`: {exc}") from None
