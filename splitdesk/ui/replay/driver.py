"""Replay: a recorded run shown again by the same panes, timeline and summary as a live one.

:class:`ReplayPlayer` feeds a :class:`~splitdesk.core.files.recording.RunRecord`'s events to a
:class:`~splitdesk.core.run.run_state.RunState` on their recorded times (the
:func:`~splitdesk.core.files.recording.schedule`), scaled by a speed of 0.25×–4×. One frame
timer (16 ms) advances the playback position and applies every event now due in one
batch: never one timer per event. The state's clock (:attr:`RunState.clock`) is the
playback position, so views that draw a run in progress (the timeline's "now" line and
open bars) show recorded time, paused or not. Seeking forward applies the events up to
the new moment; seeking back rebuilds the state from the first event
(:func:`~splitdesk.core.files.recording.rebuild_state`'s rule) and the window binds the new one.

:class:`ReplayDriver` binds a player to the :class:`~splitdesk.ui.shell.main_window.MainWindow`
views through the window's own run path (``_run_started`` and ``_run_finished``), and
shows the replay bar: a "REPLAY of <endpoint>, <date>" banner, play/pause, restart,
speed and a scrubber. No network and no endpoint are used.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSlider,
    QStyle,
    QStyleOptionButton,
    QToolBar,
    QWidget,
)

from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.recording import Recording, RunRecord, plan_of, schedule
from splitdesk.core.measure.server_metrics import series_of
from splitdesk.core.run.labels import question_label
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import ui_font
from splitdesk.ui.common.throttle import Throttle

if TYPE_CHECKING:
    from splitdesk.ui.shell.main_window import MainWindow

FRAME_MS = 16
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
MIN_SPEED, MAX_SPEED = SPEEDS[0], SPEEDS[-1]
SCRUB_STEPS = 1000
#: Most wall-clock time one frame may advance the replay by (seconds).
MAX_STEP_S = 0.1


class ReplayPlayer(QObject):
    """Plays one recorded run into fresh :class:`RunState` objects.

    Signals:
        stateReset(object): a new :class:`RunState` to bind (at the start, on restart and on
            a seek back); its events follow.
        positionChanged(float): the playback position, seconds of recorded time.
        playingChanged(bool): playing or paused.
        finished(object): the state, once the last event is applied.
    """

    stateReset = Signal(object)
    positionChanged = Signal(float)
    playingChanged = Signal(bool)
    finished = Signal(object)

    def __init__(self, run: RunRecord, speed: float = 1.0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.run = run
        self.events = run.events
        self.due = schedule(run)
        self.duration = self.due[-1] if self.due else 0.0
        self.speed = self.clamp_speed(speed)
        self.position = 0.0
        self.state = RunState()
        self._next = 0
        self._playing = False
        self._last_tick = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(FRAME_MS)
        self._timer.timeout.connect(self._tick)
        #: Events applied per frame, for the GUI-loop benchmark (last frame's count).
        self.last_batch = 0

    @staticmethod
    def clamp_speed(speed: float) -> float:
        """``speed`` limited to 0.25×–4×."""
        return min(MAX_SPEED, max(MIN_SPEED, speed))

    @property
    def playing(self) -> bool:
        return self._playing

    @property
    def done(self) -> bool:
        """Every event has been applied."""
        return self._next >= len(self.events)

    def start(self) -> None:
        """Begin from the start (a fresh state) and play."""
        self._reset()
        self.play()

    def _reset(self) -> None:
        self.state = RunState()
        self.state.clock = lambda: self.position
        self._next = 0
        self.position = 0.0
        self.stateReset.emit(self.state)

    def play(self) -> None:
        """Resume (from the start again when it had finished)."""
        if self.done:
            self._reset()
        self._last_tick = time.monotonic()
        self._timer.start()
        if not self._playing:
            self._playing = True
            self.playingChanged.emit(True)

    def pause(self) -> None:
        """Hold the position; views keep showing the state at that moment."""
        self._timer.stop()
        if self._playing:
            self._playing = False
            self.playingChanged.emit(False)

    def toggle(self) -> None:
        """Pause when playing, else play."""
        if self._playing:
            self.pause()
        else:
            self.play()

    def restart(self) -> None:
        """Back to the start, playing."""
        self.pause()
        self.start()

    def set_speed(self, speed: float) -> None:
        """Playback speed (recorded seconds per wall second), clamped to 0.25×–4×."""
        self.speed = self.clamp_speed(speed)

    def seek(self, t: float) -> None:
        """Show the state at recorded time ``t`` (seconds, clamped to the run): later
        events are applied at once; an earlier moment rebuilds the state from the start."""
        t = min(max(t, 0.0), self.duration)
        if t < self.position or (t == 0.0 and self._next):
            self._reset()
        self.position = t
        self._last_tick = time.monotonic()
        self._apply_due()
        self.positionChanged.emit(self.position)

    def _tick(self) -> None:
        now = time.monotonic()
        # A frame that came late (the GUI was busy laying out 64 new panes) advances at
        # most MAX_STEP_S of wall time: the replay slows down for a moment instead of
        # applying seconds of events in one frame. Recorded times are unchanged.
        step = min(now - self._last_tick, MAX_STEP_S)
        self.position = min(self.duration, self.position + step * self.speed)
        self._last_tick = now
        self._apply_due()
        self.positionChanged.emit(self.position)

    def _apply_due(self) -> None:
        events, due, state = self.events, self.due, self.state
        i, n = self._next, len(events)
        start = i
        while i < n and due[i] <= self.position:
            state.apply(events[i])
            i += 1
        self._next = i
        self.last_batch = i - start
        if i >= n and i > start:
            self.position = self.duration
            self.pause()
            self.finished.emit(state)

    def stop(self) -> None:
        """Stop the timer for good (the replay is closed)."""
        self._timer.stop()
        self._playing = False


def predictions_of(run: RunRecord) -> list[PredictedRequest] | None:
    """The recorded predictions as the timeline and summary take them."""
    if run.predictions is None:
        return None
    return [
        PredictedRequest(
            p.t_send_s,
            p.ttft_s,
            p.e2e_s,
            p.output_tokens,
            p.rejected,
            p.prompt_tokens,
            p.cached_prompt_tokens,
            p.queue_s,
            p.prefill_s,
        )
        for p in run.predictions
    ]


def _fmt_time(t: float) -> str:
    return f"{t:5.2f} s"


class _Banner(QLabel):
    """The "REPLAY of …" banner: its whole wording when there is room, else cut short with
    "…" (never below "REPLAY …"), so the controls beside it keep their room. :meth:`text`
    is the whole wording; the tooltip says when and with what it was recorded."""

    def __init__(self, scale: float) -> None:
        super().__init__("")
        self._full = ""
        self._around = 0  #: pixels around the text: padding and margins
        self.setObjectName("replayBanner")
        self.setFont(ui_font(scale, 1, bold=True))
        self.setStyleSheet(
            "QLabel#replayBanner { background: #b3541e; color: white; padding: 3px 10px;"
            " border-radius: 4px; }"
        )
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        self._full = text
        self.ensurePolished()  # the style sheet's padding counts in the hint
        QLabel.setText(self, text)
        self._around = max(0, super().sizeHint().width() - self._advance(text))
        self.updateGeometry()
        self._fit()

    def text(self) -> str:
        return self._full

    def _advance(self, text: str) -> int:
        return self.fontMetrics().horizontalAdvance(text)

    def sizeHint(self) -> QSize:
        return QSize(self._advance(self._full) + self._around, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        short = min(self._full, "REPLAY …", key=len)
        return QSize(self._advance(short) + self._around, super().minimumSizeHint().height())

    def _fit(self) -> None:
        room = self.width() - self._around
        QLabel.setText(
            self, self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, room)
        )

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()


class _Scrubber(QSlider):
    """The replay's slider, asking for ``length`` pixels (a slider's own hint is short):
    when the row is tight, the banner and the slider give up room in proportion."""

    def __init__(self, length: int) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self._length = length

    def sizeHint(self) -> QSize:
        return QSize(max(self._length, self.minimumWidth()), super().sizeHint().height())


class _Controls(QWidget):
    """The replay bar's one row: it takes the bar's whole width, so the toolbar never
    moves a control into its overflow menu; the scrubber gets what the others leave."""

    def __init__(self, bar: ReplayBar) -> None:
        super().__init__(bar)
        self.bar = bar
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)

    def minimumSizeHint(self) -> QSize:
        # what it needs with the short wordings: the toolbar never sees it as too wide
        return QSize(self.bar.needed_width(compact=True), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.bar.set_compact(event.size().width() < self.bar.needed_width(compact=False))


class ReplayBar(QToolBar):
    """The replay's controls: banner, play/pause, restart, speed, scrubber, time, close.

    One row of its own under the main toolbar, laid out by a box layout (not the toolbar's,
    which would push the scrubber into its overflow menu on a narrow window): the banner
    is cut short first, then the buttons drop their words for their symbols (the words on
    hover); the scrubber always keeps at least :attr:`min_scrub` pixels."""

    #: (whole wording, short wording) of the buttons.
    PLAY = ("▶ Play", "▶")
    PAUSE = ("⏸ Pause", "⏸")
    RESTART = ("⏮ Restart", "⏮")
    CLOSE = ("✕ Close replay", "✕")

    def __init__(self, scale: float, parent: QWidget | None = None) -> None:
        super().__init__("Replay", parent)
        self.setObjectName("replayBar")
        self.setMovable(False)
        self.compact = False
        self._playing = True
        self.banner = _Banner(scale)
        self.play_button = QPushButton(self.PAUSE[0])
        self.play_button.setToolTip("Pause or resume the replay")
        self.restart_button = QPushButton(self.RESTART[0])
        self.restart_button.setToolTip("Play the recording again from the start")
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setToolTip("Replay speed (recorded time per second)")
        self.scrubber = _Scrubber(int(480 * scale))
        self.scrubber.setRange(0, SCRUB_STEPS)
        self.scrubber.setToolTip("Drag to any moment: panes, timeline and summary show it")
        self.min_scrub = int(160 * scale)
        self.scrubber.setMinimumWidth(self.min_scrub)
        self.scrubber.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.clock = QLabel("")
        self.clock.setFont(ui_font(scale, 0))
        self.runs = QComboBox()
        self.runs.setToolTip("This recording holds several runs (bench: one per mode and repeat)")
        self.close_button = QPushButton(self.CLOSE[0])
        self.close_button.setToolTip("Leave the replay; Run works as usual")
        #: Shows or hides the run chooser (a recording of several runs).
        self.runs_action = QAction("Runs", self)
        self.runs_action.changed.connect(lambda: self.runs.setVisible(self.runs_action.isVisible()))
        self._lines: list[QFrame] = []
        self.controls = _Controls(self)
        row = QHBoxLayout(self.controls)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(int(6 * scale))
        for w in (self.banner, self.runs, self._separator(), self.play_button):
            row.addWidget(w)
        for w in (self.restart_button, self.speed):
            row.addWidget(w)
        row.addWidget(self.scrubber, 1)
        row.addWidget(self.clock)
        row.addWidget(self._separator())
        row.addWidget(self.close_button)
        self._row = row
        self.addWidget(self.controls)

    def _separator(self) -> QFrame:
        line = QFrame()
        line.setFrameShape(QFrame.Shape.VLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        self._lines.append(line)
        return line

    def _buttons(self) -> list[tuple[QPushButton, tuple[str, str]]]:
        play = self.PAUSE if self._playing else self.PLAY
        return [
            (self.play_button, play),
            (self.restart_button, self.RESTART),
            (self.close_button, self.CLOSE),
        ]

    @staticmethod
    def _button_width(button: QPushButton, text: str) -> int:
        """``button``'s width hint if it said ``text`` (as ``QPushButton.sizeHint`` does)."""
        opt = QStyleOptionButton()
        button.initStyleOption(opt)
        opt.text = text
        metrics = button.fontMetrics()
        size = metrics.size(Qt.TextFlag.TextShowMnemonic, text)
        size = QSize(size.width(), max(size.height(), metrics.height()))
        return (
            button.style()
            .sizeFromContents(QStyle.ContentsType.CT_PushButton, opt, size, button)
            .width()
        )

    def needed_width(self, compact: bool) -> int:
        """Width the row needs with the buttons' whole (or short) wordings, the banner cut to
        its shortest and the scrubber at its least."""
        parts = [self._button_width(b, words[1 if compact else 0]) for b, words in self._buttons()]
        parts += [self.banner.minimumSizeHint().width(), self.min_scrub]
        parts += [self.speed.sizeHint().width(), self.clock.sizeHint().width()]
        if not self.runs.isHidden():
            parts.append(self.runs.sizeHint().width())
        parts += [line.sizeHint().width() for line in self._lines]
        return sum(parts) + self._row.spacing() * (len(parts) - 1)

    def set_compact(self, compact: bool) -> None:
        """The buttons' short wordings (symbols; their tooltips say what they do) or whole ones."""
        self.compact = compact
        for button, words in self._buttons():
            text = words[1 if compact else 0]
            if button.text() != text:
                button.setText(text)

    def set_playing(self, playing: bool) -> None:
        """Play/pause button for a replay that is ``playing`` (pause) or paused (play)."""
        self._playing = playing
        self.set_compact(self.compact)


class ReplayDriver(QObject):
    """Shows recordings in a :class:`MainWindow` through its live-run views.

    Signals:
        replayStarted(object): the :class:`Recording` now shown.
        replayClosed(): the window is back to live runs.
    """

    replayStarted = Signal(object)
    replayClosed = Signal()

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.recording: Recording | None = None
        self.player: ReplayPlayer | None = None
        self.bar = ReplayBar(window.scale, window)
        window.addToolBarBreak()
        window.addToolBar(self.bar)
        self.bar.hide()
        self.bar.play_button.clicked.connect(self._toggle)
        self.bar.restart_button.clicked.connect(self._restart)
        self.bar.speed.currentIndexChanged.connect(self._speed_chosen)
        self.bar.scrubber.sliderMoved.connect(self._scrubbed)
        self.bar.scrubber.sliderReleased.connect(self._seek_now)
        self.bar.close_button.clicked.connect(self.close)
        self.bar.runs.activated.connect(self._run_chosen)
        self._seek_to = 0.0
        self._seeker = Throttle(self._seek_now, 60, self)  # a drag seeks ~15×/s at most
        self._title = window.windowTitle()
        window.controller.runPlanned.connect(lambda *_: self.close())

    @property
    def active(self) -> bool:
        return self.player is not None

    def open(self, recording: Recording, run: int = 0, speed: float = 1.0) -> None:
        """Replay run ``run`` of ``recording`` at ``speed`` from its start. Raises
        ``ValueError`` while a live run is in progress or for a run index out of range."""
        if self.window.controller.busy:
            raise ValueError("a run is in progress: stop it before opening a recording")
        if not 0 <= run < len(recording.runs):
            raise ValueError(f"the recording has {len(recording.runs)} run(s), not {run + 1}")
        self._drop_player()
        self.recording = recording
        record = recording.runs[run]
        player = ReplayPlayer(record, speed, self)
        self.player = player
        player.stateReset.connect(self._bind)
        player.positionChanged.connect(self._moved)
        player.playingChanged.connect(self._playing)
        player.finished.connect(self._finished)
        what = recording.describe()
        label = f" · {record.label}" if len(recording.runs) > 1 else ""
        self.bar.banner.setText(f"REPLAY of {what}{label}")
        self.bar.banner.setToolTip(
            f"Recorded {record.started_at:%Y-%m-%d %H:%M:%S %Z} with splitdesk "
            f"{recording.app_version}; no network is used"
        )
        self.bar.speed.blockSignals(True)
        self.bar.speed.setCurrentIndex(
            min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - player.speed))
        )
        self.bar.speed.blockSignals(False)
        self.bar.runs.clear()
        for r in recording.runs:
            self.bar.runs.addItem(r.label)
        self.bar.runs.setCurrentIndex(run)
        self.bar.runs_action.setVisible(len(recording.runs) > 1)
        self.bar.show()
        self.window.setWindowTitle(f"REPLAY — {what} — splitdesk")
        self.window.run_button.setToolTip("Close the replay and run live (Ctrl+Enter)")
        self.replayStarted.emit(recording)
        player.start()

    def _bind(self, state: RunState) -> None:
        """Bind the window's views to a new replay state through the live-run path: panes
        built from the recorded plan (``_run_planned``), then the state bound
        (``_run_started``); the recorded predictions draw the same ghost bars."""
        w = self.window
        rec, player = self.recording, self.player
        assert rec is not None and player is not None
        labels = [question_label(q.text, q.title) for q in rec.questions]  # recorded titles
        # the server lane: the recorded /metrics samples, or no lane (first, so the
        # timeline's height is divided knowing whether the lane shows)
        w.server_lane.replay(state, series_of(player.run.server))
        w._run_planned(plan_of(player.run), rec.question_texts, labels)
        w._run_started(state)
        predictions = predictions_of(player.run)
        if predictions is not None:
            w._predictions(predictions)
        w.statusBar().showMessage(f"Replaying {rec.describe()} — no network is used")

    def _moved(self, position: float) -> None:
        player = self.player
        if player is None:
            return
        if not self.bar.scrubber.isSliderDown():
            frac = position / player.duration if player.duration else 1.0
            self.bar.scrubber.blockSignals(True)
            self.bar.scrubber.setValue(round(frac * SCRUB_STEPS))
            self.bar.scrubber.blockSignals(False)
        self.bar.clock.setText(f"{_fmt_time(position)} / {_fmt_time(player.duration)}")

    def _playing(self, playing: bool) -> None:
        self.bar.set_playing(playing)

    def _finished(self, state: RunState) -> None:
        self.window._run_finished(state)
        self.window.server_lane.redraw()  # every recorded sample, at once
        self.window.statusBar().showMessage(
            "Replay finished. ⏮ Restart plays it again; drag the scrubber to any moment."
        )

    def _run_chosen(self, index: int) -> None:
        rec, player = self.recording, self.player
        if rec is not None and player is not None and rec.runs[index] is not player.run:
            self.open(rec, index, player.speed)

    def _toggle(self) -> None:
        if self.player is not None:
            self.player.toggle()

    def _restart(self) -> None:
        if self.player is not None:
            self.player.restart()

    def _speed_chosen(self, index: int) -> None:
        if self.player is not None:
            self.player.set_speed(float(self.bar.speed.itemData(index)))

    def _scrubbed(self, value: int) -> None:
        if self.player is None:
            return
        self._seek_to = value / SCRUB_STEPS * self.player.duration
        self._seeker.request()

    def _seek_now(self) -> None:
        self._seeker.cancel()
        player = self.player
        if player is None:
            return
        if self.bar.scrubber.isSliderDown() or player.position != self._seek_to:
            self.seek(self._seek_to)

    def seek(self, t: float) -> None:
        """Show the replay's state at recorded time ``t`` seconds (paused)."""
        player = self.player
        if player is None:
            return
        player.pause()
        player.seek(t)  # at the end, finished() paints the final picture
        self.window.server_lane.redraw()  # the samples up to the new moment
        if not player.done:
            self.window.timeline.throttle.request()
            # The headline and figures show the new moment at once, not up to 100 ms later
            # (a seek is one user action; a drag's seeks are already throttled by _seeker).
            self.window.summary.throttle.request()
            self.window.summary.throttle.flush()

    def _drop_player(self) -> None:
        if self.player is not None:
            self.player.stop()
            self.player.deleteLater()
            self.player = None

    def close(self) -> None:
        """Leave the replay (the last picture stays until the next run)."""
        if self.player is None:
            return
        self._drop_player()
        self.recording = None
        self.bar.hide()
        self.window.setWindowTitle(self._title)
        self.window.run_button.setToolTip("Send the questions both ways (Ctrl+Enter)")
        self.window.timeline.finish()
        self.window.server_lane.stop()  # its last picture stays, like the timeline's
        self.replayClosed.emit()
