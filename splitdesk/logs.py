"""Logging as desktop apps do it: one rotating log file per user, named loggers per layer,
secrets scrubbed before anything is written, and no traceback thrown at the user.

* Every module logs to ``logging.getLogger(__name__)``, so records are named by layer
  (``splitdesk.core.…``, ``splitdesk.providers.…``, ``splitdesk.sim.…``, ``splitdesk.ui.…``);
  Qt's own messages arrive as ``splitdesk.qt`` (the window routes them here with
  ``qInstallMessageHandler``, see :mod:`splitdesk.app`).
* The file is ``splitdesk.log`` in the user's log folder (``platformdirs.user_log_path``,
  e.g. ``~/.local/state/splitdesk/log`` on Linux; override with ``SPLITDESK_LOG_DIR``),
  rotated at :data:`MAX_BYTES` with :data:`BACKUPS` old files kept.
* ``--debug`` lowers the file's and the console's level to DEBUG; otherwise the file gets
  INFO and up and stderr WARNING and up.
* :class:`SecretFilter` sits on every handler: an API key registered with
  :func:`register_secret` (or anything shaped like a bearer token or ``sk-…`` key) is
  replaced by ``***`` in the message and the traceback before a handler formats it.
* :func:`install_excepthook` logs an uncaught exception with its traceback to the file and
  hands the user one sentence and the log's path (a dialog in the window, one line on
  stderr elsewhere) instead of a traceback.

This module imports no Qt: ``core``, ``providers`` and ``sim`` may use it.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import platformdirs

FILE_NAME = "splitdesk.log"
#: A log file is rotated when it reaches this size (bytes).
MAX_BYTES = 2 * 1024 * 1024
#: How many rotated files are kept beside the current one.
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)-7s %(name)s [%(threadName)s] %(message)s"

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
#: Key-shaped strings scrubbed even when nobody registered them: ``Bearer <token>``,
#: OpenAI/Anthropic-style ``sk-…`` keys, ``api-key``/``x-api-key`` header values.
_KEY_SHAPES = re.compile(
    r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{8,}"
    r"|((?:x-)?api-key['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]{6,}"
)


def _scrub_shapes(match: re.Match[str]) -> str:
    prefix = match.group(1) or match.group(2) or ""
    return prefix + "***"


def register_secret(secret: str | None) -> None:
    """Never let ``secret`` (an API key) reach a log record from now on (no-op for None
    or strings shorter than 6 characters, which would scrub ordinary words)."""
    if secret and len(secret.strip()) >= 6:
        with _SECRETS_LOCK:
            _SECRETS.add(secret.strip())


#: A password in a URL (``http://user:pass@host``) and credential-looking query values
#: (``?api_key=…``, ``&sig=…``): the one definition, here at the bottom so the log filter
#: and :func:`splitdesk.core.run.redaction.redact` both use it.
_URL_PASSWORD_RE = re.compile(r"(://[^/@\s:]*:)[^/@\s]+@")
_SECRET_QUERY_RE = re.compile(
    r"((?:api[-_]?key|key|token|access_token|sig)=)[^&\s]+", re.IGNORECASE
)


def scrub_url_credentials(text: str) -> str:
    """``text`` with URL passwords and credential-looking query values replaced by
    ``***`` (``http://alice:***@host/v1?api_key=***``)."""
    return _SECRET_QUERY_RE.sub(r"\1***", _URL_PASSWORD_RE.sub(r"\1***@", text))


def scrub(text: str) -> str:
    """``text`` with every registered secret, key-shaped strings and URL credentials
    (:func:`scrub_url_credentials`: httpx's debug lines name each request's URL) replaced
    by ``***``."""
    with _SECRETS_LOCK:
        secrets = sorted(_SECRETS, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "***")
    return scrub_url_credentials(_KEY_SHAPES.sub(_scrub_shapes, text))


class SecretFilter(logging.Filter):
    """A handler filter that scrubs secrets from a record's message and traceback (the
    record is rewritten in place, so every handler after it sees the clean text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Always keeps the record; rewrites its text."""
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what we have, as logging would
            message = str(record.msg)
        record.msg, record.args = scrub(message), None
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


def log_dir() -> Path:
    """The folder holding the log files (``SPLITDESK_LOG_DIR`` or the user's log folder)."""
    override = os.environ.get("SPLITDESK_LOG_DIR")
    return Path(override) if override else platformdirs.user_log_path("splitdesk")


def log_path() -> Path:
    """The current log file."""
    return log_dir() / FILE_NAME


_HANDLERS: list[logging.Handler] = []
#: Loggers that get the handlers: ours, and asyncio's (a task's unseen exception).
_LOGGERS = ("splitdesk", "asyncio")
#: With ``--debug`` also the HTTP client's (requests and responses, never header values).
_DEBUG_LOGGERS = ("httpx", "httpcore")


def setup_logging(debug: bool = False, console: bool = True) -> Path | None:
    """Send the ``splitdesk`` loggers to the rotating log file (and stderr when
    ``console``). Idempotent: a second call replaces the first one's handlers. Returns the
    log file's path, or None when its folder cannot be created (then only stderr logs,
    and a warning says why)."""
    teardown_logging()
    root = logging.getLogger("splitdesk")
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    secret_filter = SecretFilter()
    formatter = logging.Formatter(FORMAT)
    path: Path | None = log_path()
    problem = None
    try:
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        file_handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
        file_handler.setLevel(logging.DEBUG if debug else logging.INFO)
        file_handler.addFilter(secret_filter)
        file_handler.setFormatter(formatter)
        _HANDLERS.append(file_handler)
    except OSError as exc:
        problem = f"cannot write the log file in {log_dir()}: {exc.strerror or exc}"
        path = None
    if console:
        stream = logging.StreamHandler(sys.stderr)
        stream.setLevel(logging.DEBUG if debug else logging.WARNING)
        stream.addFilter(secret_filter)
        stream.setFormatter(logging.Formatter("splitdesk: %(levelname)s %(name)s: %(message)s"))
        _HANDLERS.append(stream)
    for name in _LOGGERS + (_DEBUG_LOGGERS if debug else ()):
        for handler in _HANDLERS:
            logging.getLogger(name).addHandler(handler)
    if debug:
        for name in _DEBUG_LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG)
    if problem:
        root.warning("%s", problem)
    return path


def teardown_logging() -> None:
    """Remove and close the handlers :func:`setup_logging` added (idempotent)."""
    for name in _LOGGERS + _DEBUG_LOGGERS:
        logger = logging.getLogger(name)
        for handler in _HANDLERS:
            logger.removeHandler(handler)
        if name in _DEBUG_LOGGERS:
            logger.setLevel(logging.NOTSET)
    for handler in _HANDLERS:
        handler.close()
    _HANDLERS.clear()


def flush() -> None:
    """Flush the log handlers (before the process exits or a test reads the file)."""
    for handler in _HANDLERS:
        handler.flush()


Notify = Callable[[str], None]


def _stderr_notify(text: str) -> None:
    print(f"splitdesk: {text}", file=sys.stderr, flush=True)


def crash_message(exc: BaseException) -> str:
    """The sentence a user sees for an uncaught exception: what failed and where the
    details are (never the traceback, never a secret)."""
    where = log_path()
    detail = scrub(str(exc))[:200]
    what = type(exc).__name__ + (f": {detail}" if detail else "")
    return (
        f"Something went wrong inside splitdesk ({what}). Nothing you entered was lost. "
        f"The details are in the log file: {where}"
    )


def install_excepthook(notify: Notify | None = None) -> None:
    """Log uncaught exceptions (main thread and other threads) with their traceback at
    CRITICAL, then tell the user with ``notify(message)`` (default: one line on stderr).
    Ctrl-C keeps its usual behaviour."""
    tell = notify or _stderr_notify
    log = logging.getLogger("splitdesk.crash")

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, exc, tb)
            return
        log.critical("uncaught exception", exc_info=(kind, exc, tb))
        flush()
        try:
            tell(crash_message(exc))
        except Exception:  # the dialog itself failed: the line on stderr still goes out
            _stderr_notify(crash_message(exc))

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None:
            return
        hook(args.exc_type, args.exc_value, args.exc_traceback)

    sys.excepthook = hook
    threading.excepthook = thread_hook
