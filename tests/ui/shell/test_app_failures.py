"""The app when its surroundings are wrong: no display, a damaged settings file, a crash
inside, Qt complaining. Each ends in a clear message and a log record, never a traceback
on the terminal or a lost file."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import qInstallMessageHandler, qWarning
from PySide6.QtWidgets import QApplication, QMessageBox

from splitdesk import logs
from splitdesk.app import CrashNotifier, display_problem, qt_message_handler


def app_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, SPLITDESK_CONFIG_DIR=str(tmp_path / "config"))
    env["SPLITDESK_LOG_DIR"] = str(tmp_path / "log")
    env.update(extra)
    return env


def test_no_display_is_one_clear_line_and_exit_1(tmp_path: Path) -> None:
    env = app_env(tmp_path)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1  # not Qt's abort (-6) with its libxcb-cursor0 hint
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "no display" in lines[0]
    # the advice repeats the command as started, ready to paste
    assert "xvfb-run -a python -m splitdesk`" in lines[0]
    assert "QT_QPA_PLATFORM=offscreen" in lines[0]
    assert "xcb-cursor" not in proc.stderr


def test_no_display_advice_names_the_script_as_typed(tmp_path: Path) -> None:
    """After scripts/install.sh, `splitdesk` is .venv/bin/splitdesk, not on PATH: the
    advice says what to type."""
    env = app_env(tmp_path)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(name, None)
    script = str(Path(sys.executable).parent / "splitdesk")
    proc = subprocess.run([script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"`xvfb-run -a {script}`" in proc.stderr


def test_display_problem_only_where_a_display_server_is_needed() -> None:
    assert display_problem({}, "linux") is not None
    assert "DISPLAY is not set" in (display_problem({"QT_QPA_PLATFORM": "xcb"}, "linux") or "")
    assert "WAYLAND_DISPLAY" in (display_problem({"QT_QPA_PLATFORM": "wayland"}, "linux") or "")
    for fine in (
        {"DISPLAY": ":0"},
        {"WAYLAND_DISPLAY": "wayland-0"},
        {"QT_QPA_PLATFORM": "offscreen"},
        {"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":99"},
        {"QT_QPA_PLATFORM": "vnc:size=800x600"},
    ):
        assert display_problem(fine, "linux") is None, fine
    assert display_problem({}, "win32") is None and display_problem({}, "darwin") is None


def test_damaged_settings_start_with_defaults_keep_the_file_and_say_so(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    damaged = b'{"endpoint": {"preset": "custom", "base_url": "http://gpu:8000/v1"'  # cut off
    (config / "settings.json").write_bytes(damaged)
    shot = tmp_path / "window.png"
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk", "--screenshot", str(shot), "--quit", "--speed", "8"],
        env=app_env(tmp_path, QT_QPA_PLATFORM="offscreen"),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]  # it started (defaults: built-in) and ran
    assert "Traceback" not in proc.stderr
    backups = list(config.glob("settings.json.bad-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == damaged  # nothing lost
    # said on stderr (a warning) and in the log file, naming the kept copy
    said = [ln for ln in proc.stderr.splitlines() if "is damaged" in ln]
    assert said and str(backups[0]) in said[0] and "default settings" in said[0]
    log_text = (tmp_path / "log" / "splitdesk.log").read_text(encoding="utf-8")
    assert "WARNING splitdesk.app" in log_text and str(backups[0]) in log_text
    # the new file is whole again
    assert json.loads((config / "settings.json").read_text(encoding="utf-8"))["version"] == 2


def test_an_uncaught_exception_shows_a_dialog_with_the_log_path(
    qapp: QApplication, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SPLITDESK_LOG_DIR", str(tmp_path / "log"))
    hooks = (sys.excepthook, __import__("threading").excepthook)
    logs.setup_logging(console=False)
    notifier = CrashNotifier()
    try:
        logs.install_excepthook(notifier.notify)
        try:
            raise KeyError("pane 7")
        except KeyError:
            sys.excepthook(*sys.exc_info())
        qapp.processEvents()  # the dialog is shown on the GUI thread's next turn
        (box,) = notifier.dialogs
        assert isinstance(box, QMessageBox) and box.isVisible() and not box.isModal()
        assert str(tmp_path / "log" / "splitdesk.log") in box.text()
        assert "KeyError" in box.text() and "Traceback" not in box.text()
        logs.flush()
        assert "KeyError: 'pane 7'" in (tmp_path / "log" / "splitdesk.log").read_text("utf-8")
        box.close()
    finally:
        logs.teardown_logging()
        sys.excepthook, __import__("threading").excepthook = hooks
        notifier.deleteLater()


def test_qt_messages_are_routed_into_the_log(qapp: QApplication, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="splitdesk.qt")
    previous = qInstallMessageHandler(qt_message_handler)
    try:
        qWarning("a test warning from Qt")
    finally:
        qInstallMessageHandler(previous)
    (record,) = [r for r in caplog.records if r.name == "splitdesk.qt"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "a test warning from Qt"
