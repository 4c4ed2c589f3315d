"""Plain words for what a file holds or why it cannot be read, for one-line errors: a JSON
value's kind as JSON names it (``null``, ``a list``), never a Python type name
(``NoneType``), and an ``OSError`` without its ``[Errno 21]`` prefix or the repeated path.
Lives at the bottom of core's layers so every file reader (question sets and scenarios,
recordings, settings) words them alike."""

from __future__ import annotations

import errno
import json
from typing import Any


def json_kind(value: Any) -> str:
    """What a parsed JSON ``value`` is, in JSON's words: ``null``, ``true``/``false``,
    ``a number``, ``a string``, ``a list``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a value JSON does not have"


def json_shown(value: Any, limit: int = 40) -> str:
    """``value`` as it reads in the file (JSON: ``null``, ``true``, ``"text"``), cut to
    ``limit`` characters with an ellipsis."""
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def os_error_words(exc: OSError, what: str = "file") -> str:
    """Why a ``what`` (``file``, ``scenario file``…) could not be read, in plain words:
    ``no such file or folder``, ``is a folder; give a file``, ``no permission to read it``,
    else the system's own short text (``strerror``) without the errno number or path."""
    if isinstance(exc, FileNotFoundError):
        return "no such file or folder"
    if isinstance(exc, IsADirectoryError):
        return f"is a folder; give a {what}"
    if isinstance(exc, PermissionError):
        return "no permission to read it"
    if isinstance(exc, NotADirectoryError):
        return "a part of the path is not a folder"
    if exc.errno == errno.ENAMETOOLONG:
        return "the name is too long"
    return exc.strerror.lower() if exc.strerror else str(exc)
