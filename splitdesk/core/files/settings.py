"""What the window remembers between launches, as one versioned JSON file.

The file lives in the user's config folder (``platformdirs``; override with the
``SPLITDESK_CONFIG_DIR`` environment variable) and never holds an API key. Reading and
writing block: the window calls them off its GUI thread (or before its loop starts).

Reading never loses the user's file and never refuses to start:

* a field with a value this version does not know (an unknown dialect, profile or theme,
  a number out of range, a wrong type) is reset to its default, the other fields are kept,
  and the message names the fields that were reset;
* a file that is not JSON, not a settings object, or cannot be read at all gives the
  defaults;
* in both cases the file as it was is kept beside it first (``settings.json.bad-<time>``),
  and the message says where.

The file carries a format version (:data:`FORMAT_VERSION`) that changes whenever a field
does (``tests/core/files/test_settings.py`` fails until it is bumped):

* a file from a **newer** splitdesk is read as far as this version knows it and left
  untouched: :func:`save_settings` never writes over it (the session's changes are not
  saved), and the message names both versions;
* fields this version does not know in a file of its own or an older version (a hand
  edit, a field a later version dropped) would be lost at the next save: the file is kept
  first (``settings.json.backup-<time>``) and the message names them.

Writing is atomic and safe when saves overlap: one writer at a time (a thread lock, and
``flock`` on ``settings.json.lock`` against another splitdesk process), through
:func:`splitdesk.core.files.atomic.write_atomic`. A reader sees the old file or the new one,
never a mix.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.run.bounded_read import FileTooLargeError, read_bounded
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.file_words import json_kind
from splitdesk.core.run.questions import QuestionSet

log = logging.getLogger(__name__)

FILE_NAME = "settings.json"
#: Largest settings file read (its questions are bounded by core/run/limits.py far below).
MAX_SETTINGS_BYTES = 16 * 1024 * 1024
#: The settings format this code writes; it changes whenever a field does. Version 2 =
#: version 1 plus ``window_size``, ``sidebar_collapsed``, ``autosave_recordings``, the
#: question set's shared ``context`` and the bounds of core/run/limits.py (files of
#: version 1 read as they are).
FORMAT_VERSION = 2

#: Words for the fields a message may name (dotted paths as in the file).
FIELD_WORDS = {
    "version": "format version",
    "endpoint": "endpoint",
    "endpoint.preset": "endpoint preset",
    "endpoint.base_url": "base URL",
    "endpoint.api": "API dialect",
    "endpoint.model": "model",
    "endpoint.key_source": "where the API key comes from",
    "endpoint.key_env": "API key variable",
    "endpoint.profile": "built-in endpoint profile",
    "endpoint.speed": "built-in endpoint speed",
    "endpoint.max_tokens": "max tokens per answer",
    "endpoint.temperature": "temperature",
    "endpoint.connect_timeout": "connect timeout",
    "endpoint.read_timeout": "read timeout",
    "endpoint.verify_tls": "TLS verification",
    "endpoint.ca_bundle": "CA bundle",
    "endpoint.headers": "extra headers",
    "endpoint.retry_429": "retries on 429",
    "mode": "run mode",
    "with_sequential": "sequential baseline",
    "theme": "theme",
    "font_scale": "text size",
    "question_set": "question set",
    "window_size": "window size",
}


#: One side of the window in pixels (as ``--size`` takes it).
WindowSide = Annotated[int, Field(ge=320, le=10000)]


class AppSettings(BaseModel):
    """Everything persisted: endpoint, run mode, look, the last question set."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    version: int = Field(FORMAT_VERSION, ge=1)
    endpoint: EndpointSettings = Field(default_factory=EndpointSettings)
    mode: Literal["side-by-side", "one-after-another"] = "side-by-side"
    with_sequential: bool = False
    theme: Literal["dark", "light"] = "dark"
    font_scale: float = Field(1.0, ge=0.6, le=3.0)
    question_set: QuestionSet | None = None
    #: The window's last size in pixels, (width, height); None: fit the screen.
    window_size: (
        tuple[Annotated[int, Field(ge=320, le=10000)], Annotated[int, Field(ge=320, le=10000)]]
        | None
    ) = None
    #: The user hid (True) or showed (False) the questions/endpoint sidebar; None: not
    #: chosen yet (the window hides it when narrow).
    sidebar_collapsed: bool | None = None
    #: Save every finished run as a recording in the auto-save folder (File menu).
    autosave_recordings: bool = True


@dataclass
class SettingsLoad:
    """What :func:`read_settings` found.

    ``reset``: the fields (dotted paths, e.g. ``endpoint.api``) set back to their default,
    each with the value the file held. ``backup``: where the file as it was was kept (None
    when nothing needed keeping or keeping it failed). ``problem``: one message for the
    user, or None when the file was used as it was (or did not exist).
    """

    settings: AppSettings
    problem: str | None = None
    reset: dict[str, Any] = field(default_factory=dict)
    backup: Path | None = None
    #: the file came from a newer splitdesk (its version here): it is never written over
    newer: int | None = None
    #: fields of the file this version does not know (dotted paths), kept in ``backup``
    unknown: list[str] = field(default_factory=list)


def config_dir() -> Path:
    """The folder holding the settings file."""
    override = os.environ.get("SPLITDESK_CONFIG_DIR")
    return Path(override) if override else platformdirs.user_config_path("splitdesk")


def settings_path() -> Path:
    """The settings file."""
    return config_dir() / FILE_NAME


def _words(path: str) -> str:
    return FIELD_WORDS.get(path, path.replace("_", " ").replace(".", " "))


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _drop(data: dict[str, Any], loc: tuple[int | str, ...]) -> tuple[str, Any] | None:
    """Remove the top-most field named by a validation error's ``loc`` (two levels: a
    whole question set or one endpoint field); returns its dotted path and old value."""
    keys = [k for k in loc if isinstance(k, str)]
    if not keys:
        return None
    if keys[0] == "endpoint" and len(keys) > 1 and isinstance(data.get("endpoint"), dict):
        endpoint = data["endpoint"]
        if keys[1] in endpoint:
            return f"endpoint.{keys[1]}", endpoint.pop(keys[1])
    if keys[0] in data:
        return keys[0], data.pop(keys[0])
    return None


def _validate_keeping_what_is_valid(
    data: dict[str, Any], profiles: Collection[str] | None
) -> tuple[AppSettings, dict[str, Any]]:
    reset: dict[str, Any] = {}
    endpoint = data.get("endpoint")
    if profiles is not None and isinstance(endpoint, dict):
        profile = endpoint.get("profile")
        if profile is not None and profile not in profiles:
            reset["endpoint.profile"] = endpoint.pop("profile")
    for _ in range(len(FIELD_WORDS) + 2):  # each pass drops at least one field
        try:
            return AppSettings.model_validate(data), reset
        except ValidationError as exc:
            dropped = [d for e in exc.errors() if (d := _drop(data, tuple(e["loc"])))]
            if not dropped:
                break
            reset.update(dropped)
    return AppSettings(), {"(everything)": None}


def _backup(path: Path, tag: str = "bad") -> Path | None:
    """Keep ``path`` as it is now beside it (``<name>.<tag>-<local time>``); None when that
    is not possible (the file is then left untouched)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{tag}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{tag}-{stamp}-{n}")
    try:
        write_atomic(target, read_bounded(path, MAX_SETTINGS_BYTES, "a settings file"))
    except (OSError, FileTooLargeError):
        try:  # unreadable: a rename needs only the folder to be writable
            path.replace(target)
        except OSError:
            return None
    return target


def read_settings(
    path: Path | None = None, profiles: Collection[str] | None = None
) -> SettingsLoad:
    """Read the settings file (see the module docstring for what happens to a bad one).

    ``profiles``: the built-in endpoint's profile names, when the caller knows them (the
    window does; ``core`` does not import the simulator). Never raises for the file's
    content or an unreadable file; blocking.
    """
    path = path or settings_path()
    try:
        raw = read_bounded(path, MAX_SETTINGS_BYTES, "a settings file", str(path))
    except FileNotFoundError:
        return SettingsLoad(AppSettings())
    except (OSError, FileTooLargeError) as exc:
        backup = _backup(path)
        kept = f"; the file was kept as {backup.name}" if backup else ""
        why = str(exc) if isinstance(exc, FileTooLargeError) else exc.strerror or exc
        return SettingsLoad(
            AppSettings(),
            f"Could not read the settings file {path} ({why}): "
            f"starting with default settings{kept}.",
            backup=backup,
        )
    try:
        data = json.loads(raw.decode("utf-8-sig"))
        if not isinstance(data, dict):
            raise ValueError(f"it holds {json_kind(data)}, not a settings object")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        backup = _backup(path)
        if isinstance(exc, RecursionError):
            why = "its JSON is nested too deeply"
        elif isinstance(exc, json.JSONDecodeError):
            why = f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        elif isinstance(exc, UnicodeDecodeError):
            why = "it is not UTF-8 text"
        else:
            why = str(exc)
        kept = f" The damaged file was kept as {backup}." if backup else ""
        return SettingsLoad(
            AppSettings(),
            f"The settings file {path} is damaged ({why}): starting with default settings." + kept,
            backup=backup,
        )
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        data = {**data, "version": FORMAT_VERSION}
        settings, _ = _validate_keeping_what_is_valid(data, profiles)
        return SettingsLoad(
            settings,
            f"The settings file {path} is from a newer splitdesk (settings format {version}; "
            f"this one reads format {FORMAT_VERSION}): using what this version knows and "
            "leaving the file as it is (this session's changes are not saved).",
            newer=version,
        )
    unknown = _unknown_fields(data)
    settings, reset = _validate_keeping_what_is_valid(data, profiles)
    if unknown and not reset:
        backup = _backup(path, "backup")
        kept = f" The file as it was is kept as {backup}." if backup else ""
        return SettingsLoad(
            settings,
            "The settings file holds fields this version of splitdesk does not use and will "
            f"not save: {', '.join(unknown)}." + kept,
            backup=backup,
            unknown=unknown,
        )
    if not reset:
        return SettingsLoad(settings)
    backup = _backup(path)
    if "(everything)" in reset:
        what = "none of its fields could be used: default settings"
    else:
        what = "reset to default: " + "; ".join(
            f"{_words(k)} (was {_shown(v)})" for k, v in reset.items()
        )
    kept = f" The file as it was is kept as {backup}." if backup else ""
    return SettingsLoad(
        settings,
        f"Some saved settings are not valid in this version of splitdesk and were {what}." + kept,
        reset,
        backup,
    )


def _unknown_fields(data: dict[str, Any]) -> list[str]:
    """Keys of ``data`` (and of its ``endpoint``) that :class:`AppSettings` does not know."""
    out = [k for k in data if k not in AppSettings.model_fields]
    endpoint = data.get("endpoint")
    if isinstance(endpoint, dict):
        out += [f"endpoint.{k}" for k in endpoint if k not in EndpointSettings.model_fields]
    return out


def stored_version(path: Path) -> int | None:
    """The format version of the settings file at ``path`` (``None`` when there is none or
    it cannot be read as a settings object)."""
    try:
        data = json.loads(
            read_bounded(path, MAX_SETTINGS_BYTES, "a settings file").decode("utf-8-sig")
        )
    except (
        OSError,
        ValueError,
        UnicodeDecodeError,
        RecursionError,
    ):  # FileTooLargeError: ValueError
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def load_settings(path: Path | None = None) -> tuple[AppSettings, str | None]:
    """The saved settings (invalid fields reset, see :func:`read_settings`) and a message
    for the user when something was reset or the file could not be used."""
    result = read_settings(path)
    return result.settings, result.problem


_WRITE_LOCK = threading.Lock()


@contextlib.contextmanager
def _one_writer(folder: Path) -> Iterator[None]:
    """One writer at a time: this process's threads, then other processes (``flock``)."""
    with _WRITE_LOCK:
        try:
            import fcntl
        except ImportError:  # not POSIX: the thread lock is all there is
            yield
            return
        with open(folder / (FILE_NAME + ".lock"), "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def save_settings(settings: AppSettings, path: Path | None = None) -> bool:
    """Write ``settings`` atomically (one writer at a time, :func:`write_atomic`), unless
    the file there is a newer splitdesk's (its format version above
    :data:`FORMAT_VERSION`), which is left as it is: then ``False``. Raises ``OSError``;
    the previous file is intact when it does."""
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = settings.model_copy(update={"version": FORMAT_VERSION}).model_dump_json(indent=2)
    with _one_writer(path.parent):
        newer = stored_version(path)
        if newer is not None and newer > FORMAT_VERSION:
            log.info("settings not saved: %s is format %d, newer than %d", path, newer,
                     FORMAT_VERSION)  # fmt: skip
            return False
        write_atomic(path, data.encode("utf-8"))
    return True
