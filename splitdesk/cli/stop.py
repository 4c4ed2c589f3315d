"""SIGTERM and Ctrl-C during a headless export (``splitdesk export``, ``splitdesk scenarios
--export``): a flag the render loop checks between frames.

The clip being rendered ends at its next frame, its writer aborted (ffmpeg killed, its
``.part`` file removed: :func:`splitdesk.ui.render.exports.render_animation`), and no
further output starts; files already written stay, and an older file at a target not yet
written is left as it was. The command then prints one line and exits :data:`STOPPED`.
Python's own handling was not enough: Ctrl-C raised ``KeyboardInterrupt`` inside a Qt
timer callback (a traceback, the process killed by the signal) and SIGTERM killed it at
once, leaving the writer's ``.part`` file. A scene's run on the built-in endpoint stops
through the bench's own handling (:mod:`splitdesk.core.bench.interrupt`), which replaces
these handlers while it runs and gives the signals back to Python's defaults when it
ends: call :meth:`Stop.install` again after each run, and :meth:`Stop.ask` when the run
reports it was stopped.
"""

from __future__ import annotations

import signal
import threading

#: Exit status of a command stopped by SIGTERM or Ctrl-C (128 + SIGINT, as the bench's).
STOPPED = 130


class Stop:
    """The stop request of one export (module docstring). Handlers are installed only in
    the main thread (a test calling the command from another keeps Python's defaults)."""

    def __init__(self) -> None:
        self._asked = False

    def asked(self) -> bool:
        """A stop was asked (a method: it changes while a caller runs)."""
        return self._asked

    def ask(self) -> None:
        """Stop: what SIGTERM and SIGINT do (also called when a bench run says it was
        stopped, the bench having handled the signal itself)."""
        self._asked = True

    def install(self) -> None:
        """Handle SIGTERM and SIGINT by :meth:`ask`."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        """Give the signals back to Python's defaults."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def _handle(self, signum: int, frame: object) -> None:
        self.ask()
