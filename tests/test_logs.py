"""The log: a rotating file in the log folder, records named by layer, no secret in it, and
an uncaught exception logged with its traceback while the user gets one sentence."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from splitdesk import logs

KEY = "sk-LOGCHECK-9876543210fedcba"


@pytest.fixture
def log_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "log"
    monkeypatch.setenv("SPLITDESK_LOG_DIR", str(folder))
    hooks = (sys.excepthook, threading.excepthook)
    yield folder
    logs.teardown_logging()
    sys.excepthook, threading.excepthook = hooks


def read_log(folder: Path) -> str:
    logs.flush()
    return (folder / logs.FILE_NAME).read_text(encoding="utf-8")


def test_records_are_named_by_layer_and_debug_is_opt_in(log_folder: Path) -> None:
    path = logs.setup_logging(debug=False, console=False)
    assert path == log_folder / "splitdesk.log"
    logging.getLogger("splitdesk.core.measure.runner").info("run %d started", 7)
    logging.getLogger("splitdesk.ui.run.controller").debug("drain tick")  # not without --debug
    logging.getLogger("splitdesk.qt").warning("qt.qpa.fonts: no font")
    text = read_log(log_folder)
    assert " INFO    splitdesk.core.measure.runner [MainThread] run 7 started" in text
    assert "splitdesk.qt [MainThread] qt.qpa.fonts: no font" in text
    assert "drain tick" not in text

    logs.setup_logging(debug=True, console=False)  # --debug
    logging.getLogger("splitdesk.ui.run.controller").debug("drain tick")
    assert "DEBUG   splitdesk.ui.run.controller [MainThread] drain tick" in read_log(log_folder)


def test_the_file_rotates(log_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "MAX_BYTES", 4000)
    logs.setup_logging(console=False)
    log = logging.getLogger("splitdesk.core")
    for i in range(200):
        log.info("line %03d %s", i, "x" * 60)
    logs.flush()
    names = sorted(p.name for p in log_folder.iterdir())
    assert names == ["splitdesk.log", *(f"splitdesk.log.{n}" for n in range(1, logs.BACKUPS + 1))]
    assert all(p.stat().st_size <= 4000 for p in log_folder.iterdir())
    assert "line 199" in read_log(log_folder)


def test_no_key_reaches_the_file_or_stderr(
    log_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.setup_logging(debug=True, console=True)
    logs.register_secret(KEY)
    log = logging.getLogger("splitdesk.core.measure.runner")
    log.info("sending with key %s", KEY)  # a registered key, anywhere in the text
    log.info("headers: {'Authorization': 'Bearer sk-unregistered-abcdef123456'}")
    log.info("headers: {'x-api-key': 'unregistered-anthropic-key-123'}")
    try:
        raise RuntimeError(f"server said: invalid key {KEY}")
    except RuntimeError:
        log.exception("request failed")
    text = read_log(log_folder) + capsys.readouterr().err
    assert "sending with key ***" in text and "Bearer ***" in text and "'x-api-key': '***" in text
    assert "RuntimeError: server said: invalid key ***" in text  # the traceback, scrubbed
    for secret in (KEY, KEY[:12], "sk-unregistered", "unregistered-anthropic"):
        assert secret not in text


def test_an_uncaught_exception_is_logged_and_the_user_gets_one_sentence(
    log_folder: Path,
) -> None:
    logs.setup_logging(console=False)
    told: list[str] = []
    logs.install_excepthook(told.append)
    try:
        raise ValueError("the bad thing")
    except ValueError:
        sys.excepthook(*sys.exc_info())  # what Python does with an uncaught exception

    def worker() -> None:
        raise OSError("disk gone")

    t = threading.Thread(target=worker, name="saver")
    t.start()
    t.join()

    text = read_log(log_folder)
    assert "CRITICAL splitdesk.crash [MainThread] uncaught exception" in text
    assert 'raise ValueError("the bad thing")' in text  # the traceback is in the file
    assert "OSError: disk gone" in text and "[saver] uncaught exception" in text
    assert len(told) == 2
    assert "ValueError: the bad thing" in told[0] and "OSError: disk gone" in told[1]
    for message in told:
        assert str(log_folder / "splitdesk.log") in message
        assert "Traceback" not in message and "\n" not in message


def test_no_url_credential_reaches_the_file_or_stderr_from_httpx(
    log_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--debug`` hands httpx's records to the log: its request lines name each URL, with
    the password of ``http://user:pass@host`` and a key given as a query value (which
    reached the file and stderr in clear)."""
    logs.setup_logging(debug=True, console=True)
    logging.getLogger("httpx").info(
        'HTTP Request: GET http://alice:PASSWORD99@127.0.0.1:9/v1/models?api_key=QSECRET77 "%s"',
        "HTTP/1.1 200 OK",
    )
    text = read_log(log_folder) + capsys.readouterr().err
    assert "GET http://alice:***@127.0.0.1:9/v1/models?api_key=***" in text
    assert "PASSWORD99" not in text and "QSECRET77" not in text
