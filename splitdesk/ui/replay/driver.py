"""Replay in the window: a recording played on the window's stage, with its controls.

:class:`ReplayDriver` plays a recording's run on the stage the port gives it
(:class:`~splitdesk.ui.stage.playback.StagePlayer`: the same panes, timeline, server lane
and summary as a live run) and shows the replay bar: a "REPLAY of <endpoint>, <date>"
banner, play/pause, restart, speed, a scrubber and, for a recording of several runs, the
run chooser. No network and no endpoint are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSize, Qt, Signal
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

from splitdesk.core.files.recording import Recording
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import ui_font
from splitdesk.ui.common.throttle import Throttle
from splitdesk.ui.stage.playback import SCRUB_STEPS, SPEEDS, StagePlayer

if TYPE_CHECKING:
    from splitdesk.ui.port import Port


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
    """Shows recordings on the window's stage, with the replay bar (module docstring).

    Signals:
        replayStarted(object): the :class:`Recording` now shown.
        replayClosed(): the window is back to live runs.
    """

    replayStarted = Signal(object)
    replayClosed = Signal()

    def __init__(self, port: Port) -> None:
        super().__init__(port.widget)
        self.port = port
        self.recording: Recording | None = None
        self.player: StagePlayer | None = None
        self.bar = ReplayBar(port.scale, port.widget)
        port.add_toolbar_row(self.bar)
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
        port.runs.runPlanned.connect(lambda *_: self.close())
        port.stage.claimed.connect(self._claimed)

    @property
    def active(self) -> bool:
        return self.player is not None

    def _claimed(self, driver: object) -> None:
        """Another driver took the stage (a live run, presentation mode): this replay ends."""
        if self.player is not None and driver is not self.player:
            self.close()

    def shown(self) -> tuple[Recording, int] | None:
        """The recording on show and the index of the run played, if any."""
        if self.recording is None or self.player is None:
            return None
        return self.recording, self.player.index

    def open(self, recording: Recording, run: int = 0, speed: float = 1.0) -> None:
        """Replay run ``run`` of ``recording`` at ``speed`` from its start. Raises
        ``ValueError`` while a live run is in progress or for a run index out of range."""
        if self.port.runs.busy:
            raise ValueError("a run is in progress: stop it before opening a recording")
        if not 0 <= run < len(recording.runs):
            raise ValueError(f"the recording has {len(recording.runs)} run(s), not {run + 1}")
        self._drop_player()
        self.recording = recording
        record = recording.runs[run]
        player = StagePlayer(self.port.stage, recording, run, speed, self)
        self.player = player
        player.positionChanged.connect(self._moved)
        player.playingChanged.connect(self.bar.set_playing)
        player.finished.connect(self._finished)
        what = recording.describe()
        label = f" · {record.label}" if len(recording.runs) > 1 else ""
        newer = " (read-only: a newer format)" if recording.read_only_note else ""
        self.bar.banner.setText(f"REPLAY{newer} of {what}{label}")
        self.bar.banner.setToolTip(
            f"Recorded {record.started_at:%Y-%m-%d %H:%M:%S %Z} with splitdesk "
            f"{recording.app_version}; no network is used"
            + (f"\n{recording.read_only_note}" if recording.read_only_note else "")
        )
        self.bar.speed.blockSignals(True)
        self.bar.speed.setCurrentIndex(
            min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - player.player.speed))
        )
        self.bar.speed.blockSignals(False)
        self.bar.runs.clear()
        for r in recording.runs:
            self.bar.runs.addItem(r.label)
        self.bar.runs.setCurrentIndex(run)
        self.bar.runs_action.setVisible(len(recording.runs) > 1)
        self.bar.setVisible(self.port.chrome_shown())  # presenting: the keys drive it
        self.port.set_title(f"REPLAY — {what} — splitdesk")
        self.replayStarted.emit(recording)
        player.start()
        self.port.say(f"Replaying {recording.describe()} — no network is used")

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

    def _finished(self, state: RunState) -> None:
        self.port.say("Replay finished. ⏮ Restart plays it again; drag the scrubber to any moment.")

    def _run_chosen(self, index: int) -> None:
        rec, player = self.recording, self.player
        if rec is not None and player is not None and index != player.index:
            self.open(rec, index, player.player.speed)

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
        if self.player is not None:
            self.player.seek(t)  # at the end, the stage's final picture

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
        self.port.set_title(None)
        self.replayClosed.emit()
