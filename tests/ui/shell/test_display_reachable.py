"""A ``DISPLAY`` that no X server answers (stale after SSH, a stopped Xvfb) is one clear
line and exit status 1 before Qt starts, not Qt's abort with a wrong libxcb-cursor0 hint.
Real sockets stand in for an X server: only a connection is checked."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

from splitdesk.app import invocation, unreachable_display


def free_display_number() -> int:
    """A display number with nothing listening, neither its socket nor its TCP port."""
    for n in range(900, 1000):
        if unreachable_display({"DISPLAY": f":{n}"}, "linux", 0.5) and not os.path.exists(
            f"/tmp/.X11-unix/X{n}"
        ):
            return n
    raise AssertionError("no free display number in :900-:999")


def test_a_display_nobody_answers_is_named() -> None:
    n = free_display_number()
    line = unreachable_display({"DISPLAY": f":{n}"}, "linux", 0.5)
    assert line is not None and f"DISPLAY=:{n}" in line
    assert f"`xvfb-run -a {invocation()}`" in line  # the command as started, to paste
    assert unreachable_display({"DISPLAY": f":{n}", "QT_QPA_PLATFORM": "xcb"}, "linux", 0.5)
    for fine in (
        {"DISPLAY": f":{n}", "QT_QPA_PLATFORM": "offscreen"},
        {"DISPLAY": f":{n}", "WAYLAND_DISPLAY": "wayland-0"},  # Qt picks Wayland
        {},  # no DISPLAY at all: display_problem's case
    ):
        assert unreachable_display(fine, "linux", 0.5) is None, fine


def test_a_listening_x_socket_or_port_is_fine() -> None:
    n = free_display_number()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(f"\0/tmp/.X11-unix/X{n}")  # where Xorg and Xvfb listen on Linux
        server.listen()
        assert unreachable_display({"DISPLAY": f":{n}.0"}, "linux", 0.5) is None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        for m in range(100, 200):  # TCP 6000 + m, as ssh -X forwards localhost:10
            try:
                server.bind(("127.0.0.1", 6000 + m))
                break
            except OSError:
                continue
        server.listen()
        assert unreachable_display({"DISPLAY": f"127.0.0.1:{m}.0"}, "linux", 0.5) is None


def test_the_window_says_so_in_one_line_and_exits_1(tmp_path: Path) -> None:
    n = free_display_number()
    env = dict(os.environ, SPLITDESK_CONFIG_DIR=str(tmp_path / "c"), DISPLAY=f":{n}")
    env["SPLITDESK_LOG_DIR"] = str(tmp_path / "log")
    for name in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "splitdesk"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stderr  # not Qt's abort (-6)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"DISPLAY=:{n}" in lines[0], proc.stderr
    assert "xcb-cursor" not in proc.stderr


def test_offscreen_screenshots_print_no_qt_noise(tmp_path: Path) -> None:
    """The README's offscreen recipe: no 'propagateSizeHints' warning on stderr."""
    from PySide6.QtCore import QMessageLogContext, QtMsgType

    from splitdesk.app import qt_message_handler

    seen: list[int] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.levelno)

    logger = logging.getLogger("splitdesk.qt")
    handler, old_level = Catch(level=logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        noise = "This plugin does not support propagateSizeHints()"
        qt_message_handler(QtMsgType.QtWarningMsg, QMessageLogContext(), noise)
        qt_message_handler(QtMsgType.QtWarningMsg, QMessageLogContext(), "a real warning")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert seen == [logging.DEBUG, logging.WARNING]
