"""The window application: QApplication + qasync loop + settings + the run controller.

``splitdesk`` (no sub-command) calls :func:`run_gui`. With ``--run`` it presses Run once
the window is up; ``--screenshot PATH`` saves the window as PNG when that run has
finished; ``--quit`` then closes the app — for docs and automated checks.

Before Qt starts, :func:`display_problem` checks that there is a screen to open the window
on (Qt would abort with a misleading plugin hint). Logging goes to the rotating file of
:mod:`splitdesk.logs`; Qt's own messages are routed into it (``qInstallMessageHandler``)
and an uncaught exception is logged and shown in a dialog naming the log file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

# One Qt binding everywhere, before any Qt import (qasync and pyqtgraph read these).
os.environ.setdefault("QT_API", "pyside6")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

# isort: off
import splitdesk.preload  # noqa: F401  (first: before PySide6, see its docstring)

# isort: on
import qasync
from PySide6.QtCore import (
    QMessageLogContext,
    QObject,
    Qt,
    QTimer,
    QtMsgType,
    Signal,
    SignalInstance,
    qInstallMessageHandler,
)
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from splitdesk import logs
from splitdesk.core.files.atomic import write_atomic
from splitdesk.core.files.scenarios import Scenario
from splitdesk.core.files.settings import read_settings
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.questions import QuestionSet
from splitdesk.core.run.run_state import RunState
from splitdesk.cpus import allowed_cpus
from splitdesk.heap import ARENAS, limit_malloc_arenas
from splitdesk.ui.common.gc import GuiGarbageCollector, freeze_built_window
from splitdesk.ui.common.priority import lower_gui_priority
from splitdesk.ui.common.tasks import spawn
from splitdesk.ui.common.theme import THEMES, apply_theme
from splitdesk.ui.render.exports import png_bytes
from splitdesk.ui.run.controller import RunController
from splitdesk.ui.shell.main_window import MainWindow

log = logging.getLogger(__name__)

#: How long after the window first shows its built objects are frozen out of the garbage
#: collector's scans (ms; :func:`~splitdesk.ui.common.gc.freeze_built_window`): once it
#: has painted, before a person can have typed a question.
FREEZE_AFTER_MS = 300


@dataclass(frozen=True)
class WindowEndpoint:
    """The endpoint ``splitdesk --endpoint … --api … --model … --api-key-env …`` chose for
    this session (the words of ``splitdesk bench``): ``url`` (``"builtin"`` or a base
    URL, checked), ``api`` (``None``: openai-chat), ``model`` (``None``: the endpoint's only
    model, asked when the window opens) and ``api_key_env`` (``None``: the dialect's usual
    variable when it is set, else no key). Never a key itself."""

    url: str
    api: str | None = None
    model: str | None = None
    api_key_env: str | None = None

    def settings(self, saved: EndpointSettings) -> EndpointSettings:
        """``saved`` with this endpoint in it (timeouts, max tokens and the rest kept): the
        built-in endpoint, or the preset whose base URL matches ``url`` (else custom)."""
        from splitdesk.core.run.endpoints import PRESETS, KeySource
        from splitdesk.providers import get_provider

        if self.url == "builtin":
            return saved.model_copy(
                update={
                    "preset": "builtin",
                    "api": self.api or "openai-chat",
                    "model": self.model or "splitdesk-sim",
                }
            )
        api = self.api or "openai-chat"
        preset = next(
            (k for k, p in PRESETS.items() if k != "builtin" and p.base_url == self.url), "custom"
        )
        env = self.api_key_env or get_provider(api).key_env or ""
        source = KeySource.ENV if env and (self.api_key_env or os.environ.get(env)) else None
        return saved.model_copy(
            update={
                "preset": preset,
                "base_url": self.url,
                "api": api,
                "model": self.model or "",
                "key_source": source or KeySource.NONE,
                "key_env": env if source else "",
            }
        )


@dataclass
class GuiOptions:
    """Command-line options of the window."""

    run: bool = False
    screenshot: Path | None = None
    quit: bool = False
    theme: str | None = None
    scale: float | None = None
    profile: str | None = None
    speed: float | None = None
    size: tuple[int, int] | None = None  #: window (width, height) in pixels, this session
    replay: Path | None = None  #: a recording to replay instead of running live
    replay_speed: float = 1.0  #: its replay speed (0.25-4)
    replay_run: int = 0  #: which of its runs (0-based)
    questions: QuestionSet | None = None  #: a set to open in the questions editor
    debug: bool = False  #: verbose log (file and stderr)
    present: bool = False  #: start in presentation mode (ui/presentation.py)
    scenario: Scenario | None = None  #: the scenario to open (presentation mode)
    #: the endpoint chosen on the command line for this session (``None``: the saved one)
    endpoint: WindowEndpoint | None = None


NO_DISPLAY = (
    "splitdesk: no display to open the window on ({why}); run it under a virtual display "
    "with `xvfb-run -a {command}`, or set QT_QPA_PLATFORM=offscreen to run it unseen "
    "(screenshots, tests)"
)


def invocation(argv0: str | None = None) -> str:
    """How splitdesk was started, to repeat in advice the user can paste: the script as
    typed (``.venv/bin/splitdesk``: after ``scripts/install.sh`` it is not on ``PATH``),
    else ``python -m splitdesk``."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if os.path.basename(argv0) in ("splitdesk", "splitdesk.exe"):
        return argv0
    return "python -m splitdesk"


def display_problem(env: dict[str, str] | None = None, platform: str = sys.platform) -> str | None:
    """The one line to print when the window cannot open for want of a display (Linux
    and other X11/Wayland systems: no ``DISPLAY`` nor ``WAYLAND_DISPLAY`` for the chosen or
    default Qt platform), else None. Qt itself would abort (SIGABRT) with a hint about
    ``libxcb-cursor0`` that is wrong in this case."""
    env = dict(os.environ) if env is None else env
    if platform.startswith(("win", "darwin", "cygwin")):
        return None
    chosen = env.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if chosen not in ("", "xcb", "wayland", "wayland-egl"):
        return None  # offscreen, minimal, vnc, eglfs, linuxfb …: no display server needed
    if chosen == "xcb" and env.get("DISPLAY"):
        return None
    if chosen.startswith("wayland") and env.get("WAYLAND_DISPLAY"):
        return None
    if not chosen and (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return None
    wanted = {"xcb": "DISPLAY is not set", "": "DISPLAY and WAYLAND_DISPLAY are not set"}
    return NO_DISPLAY.format(
        why=wanted.get(chosen, "WAYLAND_DISPLAY is not set"), command=invocation()
    )


def unreachable_display(
    env: dict[str, str] | None = None, platform: str = sys.platform, timeout_s: float = 2.0
) -> str | None:
    """The one line to print when Qt would use X11 (xcb) with a ``DISPLAY`` that no X
    server answers (a stale ``DISPLAY`` after SSH, an Xvfb that has stopped), else None.

    ``DISPLAY`` is ``[host]:N[.S]`` (X11's display name, ``man 7 X``): no host (or
    ``unix``) means the local socket ``/tmp/.X11-unix/XN`` (also tried in Linux's abstract
    namespace, as Xorg and Xvfb listen there); a host means TCP port 6000 + N. Only a
    connection is tried, within ``timeout_s`` seconds; nothing is sent. Qt itself would
    abort (SIGABRT) with a hint about ``libxcb-cursor0`` that is wrong in this case."""
    import socket

    env = dict(os.environ) if env is None else env
    if platform.startswith(("win", "darwin", "cygwin")):
        return None
    chosen = env.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    display = env.get("DISPLAY", "")
    if chosen not in ("", "xcb") or not display or (not chosen and env.get("WAYLAND_DISPLAY")):
        return None
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit() or host.startswith("/"):  # a launchd-style path: left to Qt
        return None
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        targets: list[tuple[int, object]] = [(socket.AF_UNIX, path)]
        if platform.startswith("linux"):
            targets.insert(0, (socket.AF_UNIX, "\0" + path))
    else:
        targets = [(socket.AF_INET6 if ":" in host else socket.AF_INET, (host, 6000 + int(number)))]
    for family, address in targets:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout_s)
                sock.connect(address)  # type: ignore[arg-type]
                return None
        except OSError:
            continue
    return NO_DISPLAY.format(why=f"no X server answers at DISPLAY={display}", command=invocation())


_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}
_qt_log = logging.getLogger("splitdesk.qt")
#: Qt messages that say nothing is wrong, logged at DEBUG: the offscreen platform (the
#: README's screenshot recipe) warns on every window it shows.
_QT_NOISE = frozenset({"This plugin does not support propagateSizeHints()"})
#: Qt's words when the connection to the display server breaks, after which Qt ends the
#: event loop: xcb "The X11 connection broke (error 1). Did the X11 server die?", Wayland
#: "The Wayland connection broke. Did the Wayland compositor die?". Logged to the file
#: only: :func:`run_until_closed` says it in one line.
_CONNECTION_BROKE = ("X11 connection broke", "Wayland connection broke")
#: The messages of that kind Qt gave in this process (see :func:`display_lost`).
_broken_connections: list[str] = []

DISPLAY_LOST = (
    "splitdesk: the display connection was lost (the X server or Wayland compositor went "
    "away); the run and the built-in endpoint were stopped"
)
LOOP_ENDED = (
    "splitdesk: the window's event loop ended before the window was closed; the run and "
    "the built-in endpoint were stopped"
)


def qt_message_handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    """Qt's own messages (``qWarning`` …) into the ``splitdesk.qt`` logger, with Qt's
    category (``qt.qpa.xcb`` …) in front."""
    category = context.category if context is not None else None
    text = f"{category}: {message}" if category and category != "default" else message
    level = logging.DEBUG if message in _QT_NOISE else _QT_LEVELS.get(mode, logging.WARNING)
    if any(words in message for words in _CONNECTION_BROKE):
        _broken_connections.append(message)
        level = logging.INFO
    _qt_log.log(level, "%s", text)


def display_lost() -> bool:
    """Whether Qt said the connection to the display server broke (:data:`_CONNECTION_BROKE`)."""
    return bool(_broken_connections)


def show_notice(parent: QWidget | None, title: str, text: str) -> QMessageBox:
    """A non-modal message box (the window stays usable) with selectable text."""
    box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setModal(False)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()
    return box


class CrashNotifier(QObject):
    """Shows the crash dialog on the GUI thread, whichever thread crashed.

    Signals:
        crashed(str): the sentence to show (from :func:`splitdesk.logs.crash_message`).
    """

    crashed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.dialogs: list[QMessageBox] = []
        self.crashed.connect(self._show)

    def _show(self, message: str) -> None:
        box = show_notice(None, "splitdesk — something went wrong", message)
        box.setIcon(QMessageBox.Icon.Critical)
        self.dialogs.append(box)
        box.finished.connect(lambda *_: self.dialogs.remove(box) if box in self.dialogs else None)

    def notify(self, message: str) -> None:
        """Queue ``message`` for the dialog (thread-safe) and print it as one line too."""
        print(message, file=sys.stderr, flush=True)
        self.crashed.emit(message)


def app_icon() -> QIcon:
    """The application icon (``resources/icons/splitdesk.svg``)."""
    with as_file(files("splitdesk.resources").joinpath("icons/splitdesk.svg")) as path:
        return QIcon(str(path))


def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
    """asyncio's unhandled errors (a callback or a task nobody awaited) go to the log."""
    exc = context.get("exception")
    log.error(
        "asyncio: %s",
        context.get("message", "error"),
        exc_info=exc if isinstance(exc, BaseException) else None,
    )


def _quiet_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
    """After the loop ended early, tasks it could not finish are dropped with the process:
    logged to the file only ("Task was destroyed but it is pending!")."""
    log.info("asyncio after the loop ended: %s", context.get("message", "error"))


def run_until_closed(
    loop: asyncio.AbstractEventLoop, closed: SignalInstance, controller: RunController
) -> bool:
    """Run the Qt/asyncio ``loop`` until ``closed`` is emitted (the window has closed, its
    cleanup done): True.

    When the loop ends first — Qt ends it when the connection to the display server breaks
    (an X server or Wayland compositor that went away), and nothing can be shown or asked
    any more — the controller's child processes (engine, built-in endpoint) are stopped
    here without the loop, the one line saying why (:data:`DISPLAY_LOST`, or
    :data:`LOOP_ENDED` for another cause) is printed and logged, and False is returned
    (exit status 1). No crash dialog: there is no display to show it on."""
    done: asyncio.Future[None] = loop.create_future()

    def on_closed() -> None:
        if not done.done():
            done.set_result(None)

    closed.connect(on_closed)
    try:
        loop.run_until_complete(done)
        return True
    except RuntimeError:  # qasync: "Event loop stopped before Future completed."
        if done.done():
            raise
    finally:
        closed.disconnect(on_closed)
    line = DISPLAY_LOST if display_lost() else LOOP_ENDED
    loop.set_exception_handler(_quiet_loop_exception)
    log.info("%s", line.removeprefix("splitdesk: "))
    print(line, file=sys.stderr, flush=True)
    try:
        controller.close_sync()
    except Exception:  # exiting anyway; the children also end with this process
        log.info("stopping the child processes failed", exc_info=True)
    return False


def run_gui(opts: GuiOptions) -> int:
    """Show the window and run the Qt/asyncio loop until it is closed. Returns the exit
    status (1 when ``--run`` was asked and a request failed)."""
    problem_line = display_problem() or unreachable_display()
    if problem_line:
        print(problem_line, file=sys.stderr, flush=True)
        return 1
    limited = limit_malloc_arenas()  # before any thread starts (see splitdesk.heap)
    path = logs.setup_logging(opts.debug)
    log.info("splitdesk window starting; log file %s", path)
    log.debug("malloc arenas limited to %d: %s", ARENAS, limited)
    qInstallMessageHandler(qt_message_handler)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("splitdesk")
    app.setOrganizationName("splitdesk")
    app.setDesktopFileName("splitdesk")
    from splitdesk.sim.params import PROFILES

    loaded = read_settings(profiles=PROFILES)
    settings, problem = loaded.settings, loaded.problem
    if problem:
        log.warning("%s", problem)
    saved_endpoint = None
    if opts.profile or opts.speed:  # for this session only: the saved endpoint stays
        saved_endpoint = settings.endpoint
        endpoint = settings.endpoint.model_copy(
            update={
                "preset": "builtin",
                "model": "splitdesk-sim",
                "api": "openai-chat",
                "profile": opts.profile or settings.endpoint.profile,
                "speed": opts.speed or settings.endpoint.speed,
            }
        )
        settings = settings.model_copy(update={"endpoint": endpoint})
    if opts.endpoint is not None:  # --endpoint …: for this session only, as --profile
        saved_endpoint = saved_endpoint or settings.endpoint
        endpoint = opts.endpoint.settings(settings.endpoint)
        settings = settings.model_copy(update={"endpoint": endpoint})
    theme = THEMES[opts.theme or settings.theme]
    scale = opts.scale or settings.font_scale
    apply_theme(app, theme, scale)
    icon = app_icon()
    app.setWindowIcon(icon)
    app.setQuitOnLastWindowClosed(False)  # the window closes itself once cleanup is done

    # SIGTERM/SIGINT close the window as the user would — from before the first child
    # process starts: a signal that came while the window was still being built would
    # otherwise kill the app with its default action, cleanup skipped.
    windows: list[MainWindow] = []
    early: list[int] = []

    def on_signal(signum: int, *_: object) -> None:
        if windows:
            QTimer.singleShot(0, windows[0].close)
        else:
            early.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    notifier = CrashNotifier()
    logs.install_excepthook(notifier.notify)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(_loop_exception)
    collector = GuiGarbageCollector()
    controller = RunController()
    if opts.replay is None:
        # The measuring children start now and import while the window builds, so Run
        # pressed the moment the window shows sends within ~0.2 s (issue 13: 0.45 s when
        # they started once the window showed). The GUI thread builds at the normal
        # priority, sharing the two cores evenly with them (cold start ~1.0 s, was 0.92).
        # With one CPU they would only take it from the window (shown at 1.4 s, not 1.05):
        # there they start on the first event-loop turn, once the window shows.

        def start_children() -> None:
            controller.start_engine()
            if settings.endpoint.is_builtin:
                controller.prestart_builtin(settings.endpoint.profile, settings.endpoint.speed)

        if len(allowed_cpus()) == 1:
            QTimer.singleShot(0, start_children)
        else:
            start_children()
    window = MainWindow(settings, controller, theme, scale, icon, saved_endpoint)
    if opts.size is not None:  # this session only: the saved size stays
        window.resize(*opts.size)
        window.remember_size = False
    if opts.questions is not None:  # as if opened in the questions editor
        window.questions.set_question_set(opts.questions)
    if opts.scenario is not None:  # its questions and endpoint, before the first Run
        window.presentation.open_scenario(opts.scenario)
    if problem:  # said in the status bar and in a dialog that does not block the window
        window.statusBar().showMessage(problem)
        QTimer.singleShot(0, lambda: show_notice(window, "Settings were reset", problem))
    result: dict[str, int] = {"status": 0}

    windows.append(window)
    if early:  # asked to stop while the window was being built
        QTimer.singleShot(0, window.close)
    wake = QTimer()  # lets Python run its signal handlers while Qt waits
    wake.start(200)
    wake.timeout.connect(lambda: None)

    def finished(state: RunState) -> None:
        failed = [r for r in state.requests if r.outcome == "failed"]
        if failed:
            result["status"] = 1
            if opts.quit:  # the window closes by itself: say why on stderr, as bench does
                first = next((r.error.message for r in failed if r.error is not None), "")
                cause = f": {first}" if first else ""
                print(
                    f"splitdesk: {len(failed)} of {len(state.requests)} requests failed{cause}",
                    file=sys.stderr,
                    flush=True,
                )
        if opts.screenshot is not None or opts.quit:
            spawn(after_run())

    def refused(problem: str) -> None:
        """Run did not start (too few questions, a template error): with ``--quit`` the
        window says why on stderr and closes, exit status 2, as bench does for bad input
        (it had waited for a run's end that never came, in silence)."""
        result["status"] = 2
        if opts.quit:
            print(f"splitdesk: cannot run: {problem}", file=sys.stderr, flush=True)
        if opts.screenshot is not None or opts.quit:
            spawn(after_run())

    async def after_run() -> None:
        await asyncio.sleep(0.4)  # the last frame paints
        if opts.screenshot is not None:
            image = window.grab().toImage()
            path = opts.screenshot
            fmt = path.suffix.lstrip(".").upper() or "PNG"  # the format follows the name
            try:
                await asyncio.to_thread(lambda: write_atomic(path, png_bytes(image, fmt)))
                ok = True
            except OSError as exc:
                log.warning("screenshot %s: %s", path, exc)
                ok = False
            print(f"screenshot {'saved to' if ok else 'could not be saved to'} {path}", flush=True)
        if opts.quit:
            window.close()

    window.runFinished.connect(finished)
    window.runRefused.connect(refused)
    window.show()
    # The window as built goes out of every later collection's scan — after its first
    # paint, not before: the full collection that precedes the freeze takes 50-100 ms,
    # which the window's first appearance no longer waits for (issue 25's cold start).
    QTimer.singleShot(FREEZE_AFTER_MS, freeze_built_window)
    # Painting yields the CPU to the measurement when it is short; the controller's spawner
    # threads, made above, keep their priority for its children (splitdesk/ui/priority.py).
    lower_gui_priority()
    if opts.present:  # after the first show, which places the sidebar
        window.presentation.set_active(True)
    if opts.replay is not None:  # no engine, no endpoint: the recorded times play back
        replay, speed, run = opts.replay, opts.replay_speed, opts.replay_run
        QTimer.singleShot(0, lambda: window.recordings.open_path(replay, speed, run))
    else:
        QTimer.singleShot(0, controller.start_engine)  # ready before the first Run
    ask_model = (
        opts.endpoint is not None and opts.endpoint.url != "builtin" and not opts.endpoint.model
    )
    if ask_model or opts.run:  # --endpoint URL without --model: its only model, then Run

        async def first() -> None:
            if ask_model:
                await window.endpoint.choose_only_model()
            if opts.run:  # a scenario plays what it says (its recording, or a run of its inputs)
                await asyncio.sleep(0.3)
                if opts.scenario is not None:
                    window.presentation.play()
                else:
                    window.start_run()

        QTimer.singleShot(0, lambda: spawn(first()))
    with loop:
        if not run_until_closed(loop, window.closed, controller):
            result["status"] = 1
    collector.stop()
    log.info("splitdesk window closed (exit status %d)", result["status"])
    logs.flush()
    return result["status"]
