"""Presentation mode: give the talk from the app (issue #11).

F11, the toolbar's "Present" button or ``splitdesk --present``: full screen, the
configuration (sidebar, toolbars, menus, status bar) hidden, large type, a high-contrast
palette (:data:`PRESENT_DARK`, or :data:`PRESENT_LIGHT` when the light theme is chosen),
no prediction outlines or predicted figures, and a caption area on top showing the
scenario's caption (:mod:`splitdesk.core.files.scenarios`) big and, once a run or replay has
finished, the measured diagnosis line of :func:`splitdesk.core.analyse.diagnosis.diagnose_state`
beside it.

Keys while presenting: Space runs (or pauses/resumes a replay), Esc stops a run (else
leaves), R replays the last run, T shows the tokens chart, ←/→ the previous/next scenario, 1–9 jump to one, +/−
change the type size. A live run and a replay of a recording behave the same.

Type size: the views take their size at construction, so a change of look builds a new
timeline and summary strip (:meth:`Presentation.restyle`) and the run on show is replayed
from its recording at its end (``window.recordings``) so its panes take the new look too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from splitdesk.core.analyse.diagnosis import diagnose_state
from splitdesk.core.analyse.predict import PredictedRequest
from splitdesk.core.files.scenarios import Scenario, ScenarioError, builtin_scenarios
from splitdesk.core.run.run_state import RunState
from splitdesk.ui.common.theme import Theme, apply_theme, ui_font
from splitdesk.ui.stage.summary import SummaryStrip
from splitdesk.ui.stage.timeline import Timeline

if TYPE_CHECKING:
    from splitdesk.ui.shell.main_window import MainWindow

log = logging.getLogger(__name__)

#: High contrast for a washed-out projector: pure black and white, saturated accents.
PRESENT_DARK = Theme(
    name="present-dark",
    window="#000000",
    panel="#0b0b0b",
    raised="#1c1c1c",
    border="#6a6a6a",
    text="#ffffff",
    muted="#d6d6d6",
    accent="#4fc3ff",
    combined="#ffffff",
    waiting="#a8a8a8",
    error="#ff5c5c",
    good="#2ee88f",
    grid="#3a3a3a",
)
#: The light variant: black on white (a bright room).
PRESENT_LIGHT = Theme(
    name="present-light",
    window="#ffffff",
    panel="#ffffff",
    raised="#ececec",
    border="#4a4a4a",
    text="#000000",
    muted="#262626",
    accent="#0050a0",
    combined="#000000",
    waiting="#5a5a5a",
    error="#b00000",
    good="#00663a",
    grid="#c8c8c8",
)

#: The type scale at 1920 × 1080 (pane text ≥ 24 px, timeline labels ≥ 18 px); other
#: sizes scale with the smaller of width/1920 and height/1080, never below :data:`MIN_SCALE`.
FULL_HD_SCALE = 1.6
MIN_SCALE = 1.1
TYPE_STEP = 1.1  #: one press of + or −
MAX_STEPS = 4


class PresentationTimeline(Timeline):
    """The timeline without engineer detail: no prediction outlines (ghost bars)."""

    def set_predictions(self, predictions: list[PredictedRequest]) -> None:
        """Ignored while presenting: the audience sees what was measured."""

    def _legend_html(self) -> str:
        legend = super()._legend_html()
        return legend.rsplit("&nbsp;&nbsp;", 1)[0]  # the last entry names the outlines


class PresentationSummary(SummaryStrip):
    """The summary strip without the cost model's predicted figures."""

    def set_predictions(self, predictions: list[PredictedRequest]) -> None:
        """Ignored while presenting."""


class CaptionBar(QFrame):
    """The caption area: which scenario (``3 / 7 · Rate limit of 2``), its caption big,
    the measured diagnosis line after the run, and the keys."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("captionBar")
        self.where = QLabel("")
        self.where.setObjectName("captionWhere")
        self.caption = QLabel("")
        self.caption.setObjectName("caption")
        self.caption.setWordWrap(True)
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.measured = QLabel("")
        self.measured.setObjectName("measured")
        self.measured.setWordWrap(True)
        self.measured.setTextFormat(Qt.TextFormat.PlainText)
        self.keys = QLabel("Space run · R replay · T chart · ←/→ scenario · +/− size · Esc leave")
        self.keys.setObjectName("captionKeys")
        self.keys.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.where, 1)
        top.addWidget(self.keys, 0, Qt.AlignmentFlag.AlignRight)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(24)
        row.addWidget(self.caption, 3)
        row.addWidget(self.measured, 2)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(16, 8, 16, 8)
        lay.setSpacing(4)
        lay.addLayout(top)
        lay.addLayout(row)

    def restyle(self, theme: Theme, scale: float) -> None:
        """Colours and type for ``theme`` at ``scale``."""
        self.setStyleSheet(
            f"QFrame#captionBar {{ background: {theme.panel};"
            f" border-bottom: 2px solid {theme.accent}; }}"
            f"QLabel#caption {{ color: {theme.text}; }}"
            f"QLabel#measured {{ color: {theme.good}; }}"
            f"QLabel#captionWhere {{ color: {theme.accent}; }}"
            f"QLabel#captionKeys {{ color: {theme.muted}; }}"
        )
        # fonts after the style sheet: setting a style sheet re-resolves the children's fonts
        self.where.setFont(ui_font(scale, 0, bold=True))
        self.keys.setFont(ui_font(scale, -1.5))
        self.caption.setFont(ui_font(scale, 6, bold=True))
        self.measured.setFont(ui_font(scale, 1.5))


class Presentation(QObject):
    """Presentation mode of ``window`` (module docstring).

    Signals:
        activeChanged(bool): presentation mode entered (True) or left (False).
        scenarioChanged(object): the :class:`~splitdesk.core.files.scenarios.Scenario` now shown.
    """

    activeChanged = Signal(bool)
    scenarioChanged = Signal(object)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.active = False
        self.scenarios: list[Scenario] = []
        try:
            self.scenarios = list(builtin_scenarios().values())
        except ScenarioError as exc:  # a broken install: said, never a crash
            log.error("scenarios not loaded: %s", exc)
        self.index = -1  #: the scenario shown (-1: none, the window's own questions)
        self.steps = 0  #: presses of + (positive) or − (negative)
        self._saved: dict[str, Any] = {}
        self.caption_bar = CaptionBar()
        self.caption_bar.hide()
        self._insert_caption_bar()
        self.action = QAction("▣ Present", window)  # ⛶ (U+26F6) is in no font we ship
        self.action.setToolTip("Presentation mode: full screen, large type, captions (F11)")
        self.action.setCheckable(True)
        self.action.triggered.connect(self.set_active)
        window._toolbar.addAction(self.action)
        QShortcut(QKeySequence("F11"), window, self.toggle)
        self._keys: list[QShortcut] = []
        for keys, slot in (
            ("Space", self.space),
            ("Escape", self.escape),
            ("R", self.replay_last),
            ("T", self.toggle_chart),
            ("Left", self.previous),
            ("Right", self.next),
            ("+", self.bigger),
            ("=", self.bigger),
            ("-", self.smaller),
            *((str(k), lambda k=k: self.jump(k - 1)) for k in range(1, 10)),
        ):
            shortcut = QShortcut(QKeySequence(keys), window, slot)
            shortcut.setEnabled(False)
            self._keys.append(shortcut)
        window.runFinished.connect(self._finished)
        window.recordings.opened.connect(self._hide_replay_bar)
        window.controller.runPlanned.connect(lambda *_: self.caption_bar.measured.setText(""))

    # -- layout -----------------------------------------------------------------------------------
    def _insert_caption_bar(self) -> None:
        """Put the caption bar above the window's content (the central widget's layout gets
        a column: caption bar, then what it held)."""
        central = self.window.centralWidget()
        old = central.layout() if central is not None else None
        assert old is not None
        holder = QWidget()
        holder_layout = QHBoxLayout(holder)
        holder_layout.setContentsMargins(0, 0, 0, 0)
        while old.count():
            item = old.takeAt(0)
            child = item.widget() if item is not None else None
            if child is not None:
                holder_layout.addWidget(child)
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(6)
        column.addWidget(self.caption_bar)
        column.addWidget(holder, 1)
        assert isinstance(old, QHBoxLayout)
        old.addLayout(column)

    # -- entering and leaving ---------------------------------------------------------------------
    def toggle(self) -> None:
        """F11: enter or leave presentation mode."""
        self.set_active(not self.active)

    def set_active(self, on: bool) -> None:
        """Enter (``on``) or leave presentation mode. Refused with a status message while a
        live run is in progress (the views are rebuilt)."""
        w = self.window
        if on == self.active:
            self.action.setChecked(on)
            return
        if w.controller.busy:
            self.action.setChecked(self.active)
            w.statusBar().showMessage("Stop the run first (Esc), then switch presentation mode.")
            return
        if on:
            self._saved = {
                "theme": w.theme,
                "scale": w.scale,
                "sidebar": not w.sidebar.isHidden(),
                "full_screen": w.isFullScreen(),
                "bars": [b for b in w.findChildren(QToolBar) if not b.isHidden()],
                "menu": not w.menuBar().isHidden(),
                "status": not w.statusBar().isHidden(),
            }
            w._remember_sidebar = False
            w.set_sidebar_shown(False, remember=False)
            for bar in self._saved["bars"]:
                bar.hide()
            w.menuBar().hide()
            w.statusBar().hide()
            lane = getattr(w, "server_lane", None)  # the server's /metrics lane: engineer detail
            if lane is not None:
                lane.setMaximumHeight(0)
            self.active = True
            self.caption_bar.show()
            if QGuiApplication.platformName() != "offscreen":  # offscreen: --size decides
                w.showFullScreen()
            self.restyle()
            self._show_caption()
            for shortcut in self._keys:
                shortcut.setEnabled(True)
            self._window_escape(False)
        else:
            for shortcut in self._keys:
                shortcut.setEnabled(False)
            self._window_escape(True)
            self.active = False
            saved = self._saved
            self.caption_bar.hide()
            for bar in saved.get("bars", []):
                if bar is not w.recordings.replay.bar or w.recordings.replay.active:
                    bar.show()
            w.menuBar().setVisible(saved.get("menu", True))
            w.statusBar().setVisible(saved.get("status", True))
            lane = getattr(w, "server_lane", None)
            if lane is not None:
                lane.setMaximumHeight(16_777_215)
            if not saved.get("full_screen", False) and w.isFullScreen():
                w.showNormal()
            w.set_sidebar_shown(saved.get("sidebar", True), remember=False)
            w._remember_sidebar = True
            w.controller.sim_overrides = {}
            self.restyle(saved.get("theme", w.theme), saved.get("scale", w.scale))
        self.action.setChecked(self.active)
        self.activeChanged.emit(self.active)

    def _window_escape(self, enabled: bool) -> None:
        """The window's own Esc (stop) would make Esc ambiguous while presenting."""
        for shortcut in self.window.findChildren(QShortcut):
            if shortcut.key() == QKeySequence("Escape") and shortcut not in self._keys:
                shortcut.setEnabled(enabled)

    # -- look -------------------------------------------------------------------------------------
    def presentation_theme(self) -> Theme:
        """The high-contrast palette: light when the window's own look is light."""
        own = self._saved.get("theme", self.window.theme)
        return PRESENT_LIGHT if own.name in ("light", PRESENT_LIGHT.name) else PRESENT_DARK

    def presentation_scale(self) -> float:
        """The type scale for the window's size and the +/− steps."""
        w = self.window
        screen = w.screen()
        if QGuiApplication.platformName() != "offscreen" and screen is not None:
            size = screen.geometry().size()
            width, height = size.width(), size.height()
        else:
            width, height = w.width(), w.height()
        base = max(MIN_SCALE, FULL_HD_SCALE * min(width / 1920, height / 1080))
        return base * TYPE_STEP**self.steps

    def restyle(self, theme: Theme | None = None, scale: float | None = None) -> None:
        """Apply ``theme`` at ``scale`` (default: the presentation look) to the window:
        application palette and style, a new timeline and summary strip, section titles;
        the run on show is replayed at its end in the new look."""
        w = self.window
        if theme is None:
            theme = self.presentation_theme()
        if scale is None:
            scale = self.presentation_scale()
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme, scale)
        w.theme, w.scale = theme, scale
        timeline_cls = PresentationTimeline if self.active else Timeline
        summary_cls = PresentationSummary if self.active else SummaryStrip
        old_t, old_s = w.timeline, w.summary
        new_t, new_s = timeline_cls(theme, scale), summary_cls(theme, scale)
        old_s.removeEventFilter(w)
        parent = old_t.parentWidget()
        if isinstance(parent, QSplitter):  # beside the tokens chart (ui/token_chart.py)
            parent.replaceWidget(parent.indexOf(old_t), new_t)
        else:
            layout = parent.layout() if parent is not None else None
            assert layout is not None
            layout.replaceWidget(old_t, new_t)
        strip_parent = old_s.parentWidget()
        strip_layout = strip_parent.layout() if strip_parent is not None else None
        assert strip_layout is not None
        strip_layout.replaceWidget(old_s, new_s)
        new_s.installEventFilter(w)
        new_s.fairModeRequested.connect(w._run_fair_mode)
        w.timeline, w.summary = new_t, new_s
        for old in (old_t, old_s):
            old.hide()
            old.deleteLater()
        for title in (w.combined_title, w.parallel_title):
            title.setFont(ui_font(scale, 0, bold=True))
        w.grid.more_label.setFont(ui_font(scale, 0, bold=True))
        self.caption_bar.restyle(theme, scale)
        chart = getattr(w, "token_chart", None)
        if chart is not None:
            chart.restyle(theme, scale)
        recording = w.recordings.current_recording()
        if recording is not None and w.state is not None:
            self._show_end(recording)

    def _hide_replay_bar(self, *_: object) -> None:
        """While presenting, a replay is driven by the keys, not the replay bar."""
        if self.active:
            self.window.recordings.replay.bar.hide()

    def _show_end(self, recording: Any) -> None:
        """Replay ``recording`` and jump to its end: the last picture, in the new look."""
        w = self.window
        if w.recordings.show_recording(recording):
            player = w.recordings.replay.player
            if player is not None:
                w.recordings.replay.seek(player.duration)
            if self.active:
                w.recordings.replay.bar.hide()

    def bigger(self) -> None:
        """+: larger type."""
        self._step(1)

    def smaller(self) -> None:
        """−: smaller type."""
        self._step(-1)

    def _step(self, delta: int) -> None:
        steps = max(-MAX_STEPS, min(MAX_STEPS, self.steps + delta))
        if steps == self.steps or self.window.controller.busy:
            return
        self.steps = steps
        self.restyle()

    # -- scenarios --------------------------------------------------------------------------------
    def scenario(self) -> Scenario | None:
        """The scenario shown, if any."""
        return self.scenarios[self.index] if 0 <= self.index < len(self.scenarios) else None

    def select(self, name: str) -> None:
        """Show the scenario called ``name``. Raises ``KeyError`` naming the known ones."""
        names = [s.name for s in self.scenarios]
        if name not in names:
            raise KeyError(f"unknown scenario {name!r}; known: {', '.join(names)}")
        self.jump(names.index(name))

    def open_scenario(self, scenario: Scenario) -> None:
        """Show ``scenario`` (a shipped one, or one read from a file, which joins the list)."""
        names = [s.name for s in self.scenarios]
        if scenario.name in names and self.scenarios[names.index(scenario.name)] == scenario:
            self.jump(names.index(scenario.name))
            return
        self.scenarios.append(scenario)
        self.jump(len(self.scenarios) - 1)

    def jump(self, index: int) -> None:
        """Show scenario ``index`` (0-based; ignored out of range or during a live run):
        its questions and built-in endpoint settings, or its recording replayed."""
        w = self.window
        if not 0 <= index < len(self.scenarios) or w.controller.busy:
            return
        self.index = index
        s = self.scenarios[index]
        if w.kept_inputs is None:  # the user's own inputs stay in the settings file
            w.kept_inputs = w._persisted()
        if s.recording is not None:
            w.recordings.open_path(s.recording)
        else:
            w.recordings.replay.close()
            ep = s.spec.endpoint
            settings = w.endpoint.settings().model_copy(
                update={
                    "preset": "builtin",
                    "api": "openai-chat",
                    "model": "splitdesk-sim",
                    "profile": ep.profile,
                    "max_tokens": s.spec.run.max_tokens or 100_000,
                    "retry_429": s.spec.run.retry_429,
                }
            )
            w.endpoint.set_settings(settings)
            w.controller.sim_overrides = {k: v for k, v in ep.params.items() if k != "speed"}
            w.questions.set_question_set(s.question_set)
            mode = w.mode.findData(s.spec.run.mode)
            if mode < 0:  # a mode the toolbar does not offer (e.g. "parallel")
                w.mode.addItem(s.spec.run.mode, s.spec.run.mode)
                mode = w.mode.count() - 1
            w.mode.setCurrentIndex(mode)
            w.sequential.setChecked(False)
        self._show_caption()
        self.caption_bar.measured.setText("")
        self.scenarioChanged.emit(s)

    def previous(self) -> None:
        """←: the previous scenario."""
        self.jump(max(0, self.index - 1))

    def next(self) -> None:
        """→: the next scenario."""
        self.jump(min(len(self.scenarios) - 1, self.index + 1))

    def _show_caption(self) -> None:
        s = self.scenario()
        bar = self.caption_bar
        if s is None:
            bar.where.setText("splitdesk")
            bar.caption.setText(
                "One combined request or N parallel requests: which finishes first?"
            )
        else:
            bar.where.setText(f"{self.index + 1} / {len(self.scenarios)} · {s.title}")
            bar.caption.setText(s.caption)

    def _finished(self, state: RunState) -> None:
        """After a run or replay: the measured diagnosis line beside the caption."""
        if state.ended is not None and state.ended.stopped:
            self.caption_bar.measured.setText("Stopped: nothing measured.")
            return
        self.caption_bar.measured.setText(f"Measured: {diagnose_state(state).text}")

    # -- keys -------------------------------------------------------------------------------------
    def space(self) -> None:
        """Space: pause or resume a replay, else run."""
        w = self.window
        replay = w.recordings.replay
        if replay.player is not None and not replay.player.done:
            replay.player.toggle()
        elif not w.controller.busy:
            w.start_run()

    def escape(self) -> None:
        """Esc: stop a live run (or pause a playing replay), else leave presentation mode."""
        w = self.window
        replay = w.recordings.replay
        if w.controller.busy:
            w.controller.stop()
        elif replay.player is not None and replay.player.playing:
            replay.player.pause()
        else:
            self.set_active(False)

    def toggle_chart(self) -> None:
        """T: show or hide the tokens chart beside the timeline."""
        chart = getattr(self.window, "token_chart", None)
        if chart is not None:
            chart.set_shown(chart.chart.isHidden())

    def replay_last(self) -> None:
        """R: replay the last run (or the recording on show) from its start."""
        w = self.window
        recording = w.recordings.current_recording()
        if recording is None or w.controller.busy:
            w.statusBar().showMessage("Nothing to replay yet: press Space to run.")
            return
        if w.recordings.show_recording(recording) and self.active:
            w.recordings.replay.bar.hide()
