"""The main window, a shell around one stage: the questions and endpoint on the left, the
toolbar, the menus, the run controller and the settings file.

The :class:`~splitdesk.ui.stage.stage.Stage` shows every run (live, replayed, a scenario);
the shell turns the editors into a :class:`~splitdesk.ui.run.controller.RunRequest` and
drives the stage from the controller's signals. The features (replay and recordings,
exports, the Engineer menu, presentation mode) are built here and each gets the window
as a :class:`~splitdesk.ui.port.Port`: they never import this module. The window
measures nothing.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QRect, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QGuiApplication,
    QIcon,
    QKeySequence,
    QResizeEvent,
    QShortcut,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QToolBar,
    QToolButton,
    QWidget,
)

from splitdesk.core.analyse.metrics import context_prompt_tokens
from splitdesk.core.files.recording import Recording
from splitdesk.core.files.settings import AppSettings, save_settings
from splitdesk.core.measure.client_cpu import ClientCpu, observer_effect
from splitdesk.core.measure.client_pattern import ClientPattern
from splitdesk.core.run.endpoints import EndpointSettings
from splitdesk.core.run.plans import Mode, RunPlan
from splitdesk.core.run.questions import QuestionSet
from splitdesk.core.run.run_state import RunState
from splitdesk.core.run.template import CombinedTemplate
from splitdesk.ui.common.status_bar import ElidingStatusBar
from splitdesk.ui.common.tasks import cancel_pending, spawn, task_slot
from splitdesk.ui.common.theme import Theme, apply_theme, ui_font
from splitdesk.ui.common.throttle import Throttle
from splitdesk.ui.engineer.menu import EngineerMenu
from splitdesk.ui.export.menu import ExportMenu
from splitdesk.ui.inputs.endpoint_panel import EndpointPanel
from splitdesk.ui.inputs.questions_editor import QuestionsEditor
from splitdesk.ui.present.presentation import Presentation
from splitdesk.ui.replay.recordings import RecordingsUi
from splitdesk.ui.run.controller import ControllerError, RunController, RunRequest
from splitdesk.ui.stage.stage import Look, Stage

log = logging.getLogger(__name__)

MODES: dict[str, Mode] = {
    "side by side": "side-by-side",
    "one after another": "one-after-another",
    "dependent: combined vs chain": "dependent",  # questions that need earlier answers
}

#: The settings a scenario replaces (:meth:`MainWindow._persisted` keeps the user's own).
SCENARIO_INPUTS = ("endpoint", "mode", "with_sequential", "question_set")

#: The most of the window's height a dock under the stage takes when it opens.
DOCK_SHARE = 0.25

#: What the empty stage says in the window (presentation mode names its own keys).
IDLE_TEXT = "Press ▶ Run (Ctrl+Enter) to send the questions both ways."


def _toolbar_overflows(bar: QToolBar, width: int) -> bool:
    """Whether ``bar``, laid out now ``width`` pixels wide, puts an item into its overflow
    menu (Qt's own layout decides, with the style's spacing, margins and separators: an
    estimate of them at --scale 1.5 let the Present button slip into the menu). The width
    is given: in the window's resize event the bar still has its old one."""
    layout = bar.layout()
    if layout is None:
        return False
    layout.invalidate()
    layout.setGeometry(QRect(0, 0, width, bar.height()))
    extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
    return extension is not None and not extension.isHidden()


class MainWindow(QMainWindow):
    """The splitdesk window (module docstring); it is the features' :class:`~splitdesk.ui.port.Port`.

    Signals:
        runFinished(object): a run's :class:`RunState` once its end is on the stage (a
            live run's or a replay's; for scripts and tests).
        runRefused(str): Run was pressed and no run started: why, in one line (fewer
            than two questions, a template error, an endpoint that cannot be used).
        closed(): the window has finished closing (runs stopped, endpoint process gone).
    """

    runFinished = Signal(object)
    runRefused = Signal(str)
    closed = Signal()

    def __init__(
        self,
        settings: AppSettings,
        controller: RunController,
        theme: Theme,
        scale: float = 1.0,
        icon: QIcon | None = None,
        saved_endpoint: EndpointSettings | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        #: The endpoint to keep in the settings file while the one shown came from the
        #: command line (``--profile``/``--speed``) and the user has not changed it.
        self._saved_endpoint = saved_endpoint
        #: The inputs (endpoint, mode, questions) to keep in the settings file once a
        #: scenario has replaced them for a talk (:meth:`use_inputs`).
        self.kept_inputs: AppSettings | None = None
        #: Save the window's size for the next start (off while ``--size`` set it).
        self.remember_size = True
        self.controller = controller
        self._theme = theme
        self._scale = scale
        self._closing = False
        self._closed = False
        self._remember_sidebar = True
        self._menus: dict[str, QMenu] = {}
        self._chrome: list[QWidget] | None = None  #: what presentation mode hid
        self._run_title: str | None = None  #: a scenario's title for the runs (set_run_title)
        self._title = "splitdesk — one combined request vs N parallel requests"
        #: What a run being started waits for before its first request, said on the stage
        #: while its panes are planned ("starting the built-in endpoint…"); empty otherwise.
        self._waiting_for = ""
        self.setWindowTitle(self._title)
        self.setStatusBar(ElidingStatusBar())  # a long message ends in "…", whole on hover
        if icon is not None:
            self.setWindowIcon(icon)
        self._fit_to_screen(settings.window_size)

        # -- left: questions and endpoint ---------------------------------------------------
        self.questions = QuestionsEditor(theme, scale)
        if settings.question_set is not None and settings.question_set.questions:
            self.questions.set_question_set(settings.question_set)
        self.endpoint = EndpointPanel(theme, controller.endpoint_config)
        self.endpoint.set_settings(settings.endpoint)
        endpoint_scroll = QScrollArea()
        endpoint_scroll.setWidgetResizable(True)
        endpoint_scroll.setWidget(self.endpoint)
        self.sidebar = QTabWidget()
        self.sidebar.addTab(self.questions, "Questions")
        self.sidebar.addTab(endpoint_scroll, "Endpoint")
        self.sidebar.setMinimumWidth(int(260 * scale))

        # -- right: the stage ----------------------------------------------------------------
        self._stage = Stage(theme, scale)
        self._stage.set_idle_text(IDLE_TEXT)
        self._stage.fairModeRequested.connect(self._run_fair_mode)
        self._stage.finished.connect(self._run_shown)

        outer = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(self.sidebar)
        outer.addWidget(self._stage)
        outer.setStretchFactor(0, 0)
        outer.setStretchFactor(1, 1)
        outer.setSizes([int(380 * scale), int(1120 * scale)])
        self._outer = outer
        central = QWidget()
        central.setObjectName("central")
        cl = QHBoxLayout(central)
        cl.setContentsMargins(8, 8, 8, 0)
        cl.addWidget(outer)
        self._central_layout = cl
        self.setCentralWidget(central)

        self._build_toolbar()
        self._sized = False
        self._show_ready()

        # -- wiring --------------------------------------------------------------------------------
        self.questions.changed.connect(self._inputs_changed)
        self.questions.message.connect(self.say)
        self.endpoint.changed.connect(self._inputs_changed)
        self.endpoint.changed.connect(self._endpoint_edited)
        self.endpoint.message.connect(self.say)
        controller.status.connect(self.say)
        controller.busyChanged.connect(self._busy_changed)
        controller.runPlanned.connect(self._run_planned)
        controller.runStarted.connect(self._run_started)
        controller.predictionsReady.connect(self._stage.predictions)
        controller.clientCpu.connect(self._client_cpu)
        controller.runFinished.connect(lambda state: self._stage.finish(state, live=True))
        self._persist = Throttle(self._save_settings, 800, self)
        #: Recording, auto-save, session history, replay, demos (File, Demos, View menus).
        self.recordings = RecordingsUi(self)
        #: View → Tokens chart: cumulative tokens beside the timeline.
        self.chart_action = QAction("Tokens chart (combined vs parallel)", self)
        self.chart_action.setCheckable(True)
        self.chart_action.setToolTip("Cumulative tokens over time beside the timeline")
        self.chart_action.toggled.connect(self._stage.show_chart)
        view = self.menu("&View")
        view.addAction(self.chart_action)
        #: View → Answers side by side: each question's two answers, to read.
        self.answers_action = QAction("Answers side by side…", self)
        self.answers_action.setShortcut(QKeySequence("Ctrl+Shift+A"))
        self.answers_action.setToolTip(
            "Each question's section of the combined reply next to its own request's answer"
        )
        self.answers_action.triggered.connect(self._show_answers)
        view.addAction(self.answers_action)
        view.addAction(self._stage.server_lane.action)  # the user's choice beats auto-folding
        #: Presentation mode and scenarios (F11, the toolbar's Present button).
        self.presentation = Presentation(self)
        #: File → Export: pictures, figures, the Perfetto trace, GIF/MP4 animations.
        self.exports = ExportMenu(self)
        #: Engineer menu: the client's pattern, sweeps, repeats, inspector, prices.
        self.engineer = EngineerMenu(self)
        self._inputs_changed()

    # -- the port (splitdesk.ui.port.Port) ------------------------------------------------------
    @property
    def widget(self) -> QWidget:
        """The window (parent of the features' dialogs and shortcuts)."""
        return self

    @property
    def stage(self) -> Stage:
        """The stage every run is shown on."""
        return self._stage

    @property
    def runs(self) -> RunController:
        """The run controller."""
        return self.controller

    @property
    def theme(self) -> Theme:
        """The theme now (presentation mode's palette while presenting)."""
        return self._theme

    @property
    def scale(self) -> float:
        """The type scale now."""
        return self._scale

    @property
    def state(self) -> RunState | None:
        """The run on the stage."""
        return self._stage.state

    def on_run_shown(self, call: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``call(state)`` each time a run's end is on the stage; returns the
        disconnect."""
        self.runFinished.connect(call)

        def disconnect() -> None:
            self.runFinished.disconnect(call)

        return disconnect

    def question_set(self) -> QuestionSet:
        """The questions in the editor, titles and template included."""
        return self.questions.question_set()

    def question_texts(self) -> list[str]:
        """The questions' texts, in order."""
        return self.questions.questions()

    def template(self) -> CombinedTemplate:
        """The combined prompt's template."""
        return self.questions.template()

    def question_problem(self) -> str | None:
        """Why the questions cannot be sent now (``None``: they can)."""
        return self.questions.problem()

    def endpoint_settings(self) -> EndpointSettings:
        """The endpoint chosen (never its key)."""
        return self.endpoint.settings()

    async def api_key(self) -> str | None:
        """The endpoint's API key (keyring or environment; never stored)."""
        return await self.endpoint.api_key()

    async def key_problem(self) -> str | None:
        """Why the endpoint's key is missing (``None``: not needed, or there)."""
        problem: str | None = await self.endpoint.key_problem()
        return problem

    def mode_chosen(self) -> Mode:
        """The mode chosen in the toolbar."""
        mode: Mode = self.mode.currentData()
        return mode

    def client_pattern(self) -> ClientPattern:
        """How the next run's client sends (the Engineer menu's choice)."""
        return self.engineer.take()

    def app_settings(self) -> AppSettings:
        """The settings as they are now (read-only: :meth:`update_settings` changes them)."""
        return self.settings

    def say(self, text: str) -> None:
        """Put ``text`` in the status line."""
        self.statusBar().showMessage(text)

    def update_settings(self, **changes: Any) -> None:
        """Change settings fields; saved off the GUI thread a moment later."""
        self.settings = self.settings.model_copy(update=changes)
        self._persist.request()

    def use_inputs(
        self,
        question_set: QuestionSet,
        endpoint: EndpointSettings,
        mode: Mode,
        sim_overrides: dict[str, Any] | None = None,
    ) -> None:
        """A scenario's questions, endpoint and mode for this session; the user's own stay
        in the settings file (:meth:`restore_inputs` gives them back)."""
        if self.kept_inputs is None:
            self.kept_inputs = self._persisted()
        self.endpoint.set_settings(endpoint)
        self.controller.sim_overrides = dict(sim_overrides or {})
        self.questions.set_question_set(question_set)
        index = self.mode.findData(mode)
        if index < 0:  # a mode the toolbar does not offer (e.g. "parallel")
            self.mode.addItem(mode, mode)
            index = self.mode.count() - 1
        self.mode.setCurrentIndex(index)
        self.sequential.setChecked(False)

    def restore_inputs(self) -> None:
        """The user's own inputs back, as they were before a scenario's."""
        kept, self.kept_inputs = self.kept_inputs, None
        self.controller.sim_overrides = {}
        if kept is None:
            return
        self.endpoint.set_settings(kept.endpoint)
        if kept.question_set is not None and kept.question_set.questions:
            self.questions.set_question_set(kept.question_set)
        self.mode.setCurrentIndex(max(0, self.mode.findData(kept.mode)))
        self.sequential.setChecked(kept.with_sequential)

    def set_chrome_shown(self, shown: bool) -> None:
        """Show or hide the sidebar, toolbars, menus and status line (and the window's own
        Esc, which would make Esc ambiguous while presenting)."""
        if not shown:
            if self._chrome is not None:
                return
            self._chrome_sidebar = not self.sidebar.isHidden()
            self._chrome = [b for b in self.findChildren(QToolBar) if not b.isHidden()]
            self._chrome += [w for w in (self.menuBar(), self.statusBar()) if not w.isHidden()]
            self.set_sidebar_shown(False, remember=False)
            for w in self._chrome:
                w.hide()
        else:
            if self._chrome is None:
                return
            for w in self._chrome:
                w.show()
            self._chrome = None
            self.set_sidebar_shown(self._chrome_sidebar, remember=False)
        self._stop_shortcut.setEnabled(shown)

    def chrome_shown(self) -> bool:
        """Whether the chrome is shown (:meth:`set_chrome_shown`)."""
        return self._chrome is None

    def set_full_screen(self, on: bool) -> None:
        """Full screen (not offscreen: there ``--size`` decides), or the window as it was."""
        if on and QGuiApplication.platformName() != "offscreen":
            self._was_full_screen = self.isFullScreen()
            self.showFullScreen()
        elif not on and self.isFullScreen() and not getattr(self, "_was_full_screen", False):
            self.showNormal()

    def set_run_title(self, title: str | None) -> None:
        """Name the runs started from now on (a scenario's title)."""
        self._run_title = title

    def run_title(self) -> str | None:
        """The runs' name, if a feature gave one (:meth:`set_run_title`)."""
        return self._run_title

    def set_title(self, title: str | None) -> None:
        """The window's title (``None``: its own)."""
        self.setWindowTitle(title or self._title)

    def menu(self, title: str) -> QMenu:
        """The menu bar's menu ``title``, made on first use (File, View, Demos, Engineer)."""
        found = self._menus.get(title)
        if found is None:
            found = self._menus[title] = self.menuBar().addMenu(title)
        return found

    def add_toolbar_action(self, action: QAction, short: str | None = None) -> None:
        """``action`` at the end of the main toolbar; ``short``: its label when tight."""
        self._toolbar.addAction(action)
        if short is not None:
            self._short_labels[action] = short
        self._fit_endpoint_button()

    def add_toolbar_row(self, bar: QToolBar) -> None:
        """``bar`` as a row of its own under the main toolbar."""
        self.addToolBarBreak()
        self.addToolBar(bar)

    def add_dock(self, dock: QDockWidget) -> None:
        """``dock`` under the stage. Shown, it takes at most :data:`DOCK_SHARE` of the
        window's height: the stage keeps room for the timeline's lanes (a history dock at
        its own size left a 1280 × 720 window's timeline one lane)."""
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        dock.visibilityChanged.connect(lambda shown: self._fit_dock(dock) if shown else None)

    def _fit_dock(self, dock: QDockWidget) -> None:
        def fit() -> None:
            if dock.isVisible() and not dock.isFloating():
                height = min(dock.sizeHint().height(), int(self.height() * DOCK_SHARE))
                self.resizeDocks([dock], [height], Qt.Orientation.Vertical)

        QTimer.singleShot(0, self, fit)  # once the dock area has laid the dock out

    def current_recording(self) -> Recording | None:
        """The replay shown, else the session's last run."""
        return self.recordings.current_recording()

    def recording_shown(self) -> tuple[Recording, int] | None:
        """The recording the stage replays now and the run's index, if any."""
        return self.recordings.replay.shown()

    def restyle(self, theme: Theme, scale: float, look: Look) -> None:
        """The application's palette and type, and the stage, in ``theme`` at ``scale``
        and ``look``."""
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme, scale)
        self._theme, self._scale = theme, scale
        self._stage.restyle(theme, scale, look)

    def _build_toolbar(self) -> None:
        bar = QToolBar("Run")
        bar.setMovable(False)
        self.addToolBar(bar)
        self.sidebar_button = QToolButton()
        self.sidebar_button.setCheckable(True)
        self.sidebar_button.setToolTip("Show or hide the questions and endpoint (Ctrl+B)")
        self.sidebar_button.setFont(ui_font(self._scale, 0))
        self.sidebar_button.toggled.connect(self._sidebar_toggled)
        QShortcut(QKeySequence("Ctrl+B"), self, self.sidebar_button.toggle)
        bar.addWidget(self.sidebar_button)
        self.run_button = QPushButton("▶  Run")
        self.run_button.setObjectName("run")
        self.run_button.setFont(ui_font(self._scale, 1, bold=True))
        self.run_button.setToolTip("Send the questions both ways (Ctrl+Enter)")
        self.run_button.clicked.connect(self.start_run)
        self.stop_button = QPushButton("■  Stop")
        self.stop_button.setObjectName("stop")
        self.stop_button.setFont(ui_font(self._scale, 1))
        self.stop_button.setToolTip("Stop every stream now, keeping what arrived (Esc)")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.controller.stop)
        self.mode = QComboBox()
        for label, value in MODES.items():
            self.mode.addItem(label, value)
        self.mode.setCurrentIndex(max(0, self.mode.findData(self.settings.mode)))
        self.mode.setToolTip(
            "side by side: combined and parallel at once (the demo)\n"
            "one after another: combined, then parallel, each on an idle server (fair measurement)"
        )
        self.mode.currentIndexChanged.connect(self._inputs_changed)
        self.mode.currentIndexChanged.connect(self._fit_mode_box)
        self.mode.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self._fit_mode_box()
        self.sequential = QCheckBox("+ sequential")
        self.sequential.setToolTip(
            "In “one after another”, also send the questions one at a time (the baseline)"
        )
        self.sequential.setChecked(self.settings.with_sequential)
        self.sequential.toggled.connect(self._inputs_changed)
        self.endpoint_button = QToolButton()
        self.endpoint_button.setToolTip("Choose the endpoint")
        self.endpoint_button.clicked.connect(self._show_endpoint)
        bar.addWidget(self.run_button)
        bar.addWidget(self.stop_button)
        bar.addSeparator()
        bar.addWidget(self.mode)  # its items say what they are: no "Mode" caption
        self._sequential_action = bar.addWidget(self.sequential)
        bar.addSeparator()
        bar.addWidget(self.endpoint_button)
        spacer = QWidget()
        spacer.setSizePolicy(
            spacer.sizePolicy().horizontalPolicy().Expanding, spacer.sizePolicy().verticalPolicy()
        )
        bar.addWidget(spacer)
        self._toolbar_spacer = spacer  # what follows it may go to the overflow menu
        self.problem_label = QLabel("")
        self.problem_label.setObjectName("problem")
        bar.addWidget(self.problem_label)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.start_run)
        self._stop_shortcut = QShortcut(QKeySequence("Escape"), self, self.controller.stop)
        theme_action = QAction("Light theme" if self._theme.name == "dark" else "Dark theme", self)
        theme_action.setToolTip("Takes effect at the next start")
        theme_action.triggered.connect(self._toggle_theme)
        bar.addAction(theme_action)
        self._toolbar = bar
        # The overflow button, when a narrow window (1024 px at --scale 1.5) sends the last
        # buttons into its menu, says so: its arrow icon is missing where no icon theme is
        # installed, which left an empty sliver at the window's edge.
        extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
        if extension is not None:
            extension.setText("»")
            extension.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            extension.setToolTip("More buttons")
        #: Short labels the toolbar's last buttons show when the window is too narrow for
        #: their whole ones (Present adds its own).
        self._short_labels: dict[QAction, str] = {
            theme_action: "Light" if self._theme.name == "dark" else "Dark"
        }

    # -- inputs ---------------------------------------------------------------------------------
    def _inputs_changed(self) -> None:
        one_after = self.mode.currentData() == "one-after-another"
        self.sequential.setEnabled(one_after)
        self._sequential_action.setVisible(one_after)  # only that mode has the baseline
        self._fit_endpoint_button()
        problem = self.questions.problem()
        self.problem_label.setText(problem or "")
        self.run_button.setEnabled(problem is None and not self.controller.busy)
        self.run_button.setToolTip(problem or "Send the questions both ways (Ctrl+Enter)")
        self.settings = self.settings.model_copy(
            update={
                "endpoint": self.endpoint.settings(),
                "mode": self.mode.currentData(),
                "with_sequential": self.sequential.isChecked(),
                "question_set": self.questions.question_set(),
            }
        )
        self._persist.request()

    def _fit_mode_box(self) -> None:
        """The mode box as wide as the chosen mode's name (the longest one would take a
        projector's toolbar); the list shows every name whole."""
        text = self.mode.currentText()
        char = max(self.mode.fontMetrics().horizontalAdvance("x"), 1)
        self.mode.setMinimumContentsLength(
            self.mode.fontMetrics().horizontalAdvance(text) // char + 2
        )
        self.mode.view().setMinimumWidth(
            max(self.mode.fontMetrics().horizontalAdvance(t) for t in MODES) + 40
        )
        if hasattr(self, "_toolbar"):
            self._fit_endpoint_button()

    def _fit_endpoint_button(self) -> None:
        """The endpoint button's longest wording that fits beside the other toolbar
        buttons ("Built-in · batching · 1×", "batching · 1×", "batching"), never pushed
        into the toolbar's overflow menu; the full wording on hover. The buttons after the
        spacer (theme, Present) keep their room too: when even the shortest wording leaves
        them none, they show their short labels (:attr:`_short_labels`), and their whole
        ones on hover."""
        full = self.endpoint.summary()
        parts = full.split(" · ")
        variants = [full, " · ".join(parts[1:]), parts[1] if len(parts) > 1 else full]
        bar = self._toolbar
        after: list[QAction] = []  # the actions after the spacer that may go short
        seen_spacer = False
        for action in bar.actions():
            w = bar.widgetForAction(action)
            if w is self._toolbar_spacer:
                seen_spacer = True
            elif not action.isVisible() or w is self.endpoint_button or w is None:
                continue
            elif seen_spacer and w is not self.problem_label:
                after.append(action)
        chosen, short = variants[-1], True
        width = self.width()  # the top toolbar spans the window
        for short_labels in (False, True):
            for action in after:
                label = self._short_labels.get(action) if short_labels else None
                action.setIconText(label or action.text())
            fits = None
            for text in variants:
                self.endpoint_button.setText(text + "  ▾")
                if not _toolbar_overflows(bar, width):
                    fits = text
                    break
            if fits is not None:
                chosen, short = fits, short_labels
                break
        for action in after:  # as chosen (short ones when nothing fits)
            label = self._short_labels.get(action) if short else None
            action.setIconText(label or action.text())
            if not action.toolTip().startswith(action.text()):
                action.setToolTip(f"{action.text()}: {action.toolTip()}")
        self.endpoint_button.setText(chosen + "  ▾")
        self.endpoint_button.setToolTip(f"Choose the endpoint ({full})")

    def resizeEvent(self, event: QResizeEvent) -> None:
        """Re-fit the toolbar's endpoint wording to the new width."""
        super().resizeEvent(event)
        self._fit_endpoint_button()

    # -- sidebar --------------------------------------------------------------------------------
    def set_sidebar_shown(self, shown: bool, remember: bool = True) -> None:
        """Show or hide the questions/endpoint sidebar; ``remember`` keeps the choice in the
        settings for the next start."""
        self._remember_sidebar = remember
        if self.sidebar_button.isChecked() == shown:
            self._sidebar_toggled(shown)
        else:
            self.sidebar_button.setChecked(shown)
        self._remember_sidebar = True

    def _sidebar_toggled(self, shown: bool) -> None:
        self.sidebar.setVisible(shown)
        self.sidebar_button.setText("◀ Questions" if shown else "Questions ▶")
        if getattr(self, "_remember_sidebar", True):
            self.settings = self.settings.model_copy(update={"sidebar_collapsed": not shown})
            self._persist.request()

    def _show_endpoint(self) -> None:
        self.set_sidebar_shown(True)
        self.sidebar.setCurrentIndex(1)

    def _toggle_theme(self) -> None:
        new = "light" if self.settings.theme == "dark" else "dark"
        self.settings = self.settings.model_copy(update={"theme": new})
        self._persist.request()
        self.say(f"The {new} theme applies at the next start.")

    def _save_settings(self) -> None:
        if self._closing:  # closing saves once itself; no task may outlive the window
            return
        settings = self._persisted()

        async def save() -> None:
            try:
                await asyncio.to_thread(save_settings, settings)
            except OSError as exc:
                self.say(f"Could not save settings: {exc.strerror or exc}")

        spawn(save())

    def _fit_to_screen(self, size: tuple[int, int] | None) -> None:
        """The last size, or 1500 × 940 (scaled), never larger than the screen's free area
        (offscreen has no real screen: its 800 × 800 would only shrink screenshots)."""
        w, h = size or (int(1500 * min(self.scale, 1.3)), int(940 * min(self.scale, 1.3)))
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None and QGuiApplication.platformName() != "offscreen":
            free = screen.availableGeometry()
            w, h = min(w, free.width()), min(h, free.height())
        self.resize(w, h)

    def _persisted(self) -> AppSettings:
        settings = self.settings
        if self.remember_size and not self.isMaximized() and not self.isFullScreen():
            settings = settings.model_copy(update={"window_size": (self.width(), self.height())})
        if self.kept_inputs is not None:  # a scenario's inputs are for this session only
            kept = self.kept_inputs
            return settings.model_copy(update={k: getattr(kept, k) for k in SCENARIO_INPUTS})
        if self._saved_endpoint is None:
            return settings
        return settings.model_copy(update={"endpoint": self._saved_endpoint})

    def _endpoint_edited(self) -> None:
        self._saved_endpoint = None  # the user chose: save what they chose
        if self.statusBar().currentMessage().startswith("Ready."):  # it follows the endpoint
            self._show_ready()

    def _busy_changed(self, busy: bool) -> None:
        self.stop_button.setEnabled(busy)
        self.run_button.setEnabled(not busy and self.questions.problem() is None)
        self.questions.set_locked(busy)
        self.endpoint.setEnabled(not busy)

    # -- runs -----------------------------------------------------------------------------------
    @task_slot
    async def start_run(self) -> None:
        """Start a run with the current questions, endpoint and mode (Ctrl+Enter)."""
        if self.controller.busy or self._closing:
            return
        problem = self.questions.problem()
        if problem is not None:
            self.say(problem)
            self.runRefused.emit(problem)
            return
        try:
            request = RunRequest(
                endpoint=self.endpoint.settings(),
                api_key=await self.endpoint.api_key(),
                questions=self.questions.questions(),
                template=self.questions.template(),
                context=self.questions.context(),
                mode=self.mode.currentData(),
                with_sequential=self.sequential.isChecked()
                and self.mode.currentData() == "one-after-another",
                key_problem=await self.endpoint.key_problem(),
                client=self.engineer.take(),
                capture_raw=self.engineer.keep_raw.isChecked(),
            )
            ep, sim = request.endpoint, self.controller.sim
            # the wait before the first request says what it waits for (the panes are
            # planned meanwhile: the stage keeps it)
            if not ep.is_builtin:
                self._waiting_for = f"connecting to {ep.host}…"
            elif sim is None or not sim.alive():
                self._waiting_for = "starting the built-in endpoint…"
            if self._waiting_for:
                self._stage.say(self._waiting_for)
            try:
                await self.controller.start(request)
            finally:
                self._waiting_for = ""
        except Exception as exc:  # never raised into Qt, never silent: said where it shows
            if not isinstance(exc, ControllerError):
                log.exception("Run could not start")

            def show(exc: Exception = exc) -> None:
                self.say(f"Cannot run: {exc}")
                self._stage.say(
                    f"<span style='color:{self._theme.error}'>"
                    f"Cannot run: {html.escape(str(exc))}</span>"
                )

            self._stage.after_finish(show)  # after the failed run's own end, which it explains
            if self.controller.state is None or self.controller.state.ended is None:
                self.runRefused.emit(str(exc))  # no run's end will say it

    def _run_planned(self, plan: RunPlan, questions: list[str]) -> None:
        """A live run is coming: its panes on the stage, built a slice per turn."""
        labels = self.questions.labels() if questions == self.questions.questions() else None
        self._stage.claim(self.controller)
        self._stage.plan(plan, questions, labels, live=True, waiting=self._waiting_for)

    def _run_started(self, state: RunState) -> None:
        stage = self._stage
        stage.client_note = self.engineer.used.short()
        self.engineer.load_prices_for_run()  # each side's cost beside its time
        stage.bind(state)
        sim = self.controller.sim
        stage.server_lane.start(state, self.endpoint.settings(), sim.url if sim else None)
        stage._fit_timeline(stage._lanes_wanted)  # the lane, shown, takes its height
        self.say("Running… (Esc stops)")

    def _client_cpu(self, cpu: ClientCpu) -> None:
        """The live run's CPU figures so far: the summary says when splitdesk's own share
        may have slowed a local server on a busy machine (core/measure/client_cpu.py)."""
        if self._stage.driver is self.controller:
            self._stage.observe(observer_effect(cpu, self.controller.local_endpoint))

    def _show_answers(self) -> None:
        if self._stage.show_answers() is None:
            self.say("Nothing to compare yet: run or open a recording first.")

    def _run_fair_mode(self) -> None:
        """The summary's offer after a side-by-side run on a one-slot server: measure the
        two ways one after another, each on an idle server."""
        if self.controller.busy:
            return
        self.mode.setCurrentIndex(max(0, self.mode.findData("one-after-another")))
        self.start_run()

    def _run_shown(self, state: RunState) -> None:
        """A run's end is on the stage (live or replayed): the status line says how it
        ended, and :attr:`runFinished` is emitted."""
        stopped = state.ended is not None and state.ended.stopped
        failed = [r for r in state.requests if r.outcome == "failed"]
        msg = "Stopped." if stopped else "Done."
        if failed:  # the error stays in view: never a bare "Done." over a failure
            why = next((r.error.message for r in failed if r.error is not None), "")
            msg = (
                f"{'Stopped' if stopped else 'Finished'} — {len(failed)} of "
                f"{len(state.requests)} request(s) failed: {why}"
            )
        self.say(msg)
        if any(r.context_chars for r in state.requests):  # the server counted the context
            self.questions.show_server_count(context_prompt_tokens(state))
        self._inputs_changed()
        self.runFinished.emit(state)

    def _show_ready(self) -> None:
        """The status line before a run: where the requests will go."""
        ep = self.endpoint.settings()
        self.say(
            "Ready. The built-in endpoint needs no network."
            if ep.is_builtin
            else f"Ready. Endpoint: {ep.host} · {ep.model or 'no model'}"
        )

    def showEvent(self, event: QShowEvent) -> None:
        """First show: the sidebar as chosen (folded on a narrow window until chosen)."""
        super().showEvent(event)
        self._fit_endpoint_button()
        if not self._sized:
            self._sized = True
            chosen = self.settings.sidebar_collapsed
            if chosen is None:  # not chosen yet: a narrow window (a projector) hides it
                self.set_sidebar_shown(self.width() >= 1000 * self._scale, remember=False)
            else:
                self.set_sidebar_shown(not chosen, remember=False)
            # the questions column: up to 380 px (scaled), at most 30 % of a small window
            side = min(int(380 * self._scale), int(self.width() * 0.3))
            self._outer.setSizes([side, max(self.width() - side, 1)])

    # -- closing --------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop streams, the engine and the built-in endpoint before the window goes."""
        if self._closed:
            event.accept()
            return
        event.ignore()
        if not self._closing:
            self._closing = True
            spawn(self._close_async())

    async def _close_async(self) -> None:
        self._persist.cancel()
        await cancel_pending()  # tasks started from slots end now, none left pending
        try:
            await asyncio.to_thread(save_settings, self._persisted())
        except OSError as exc:
            log.warning("could not save settings: %s", exc)
        try:
            await asyncio.wait_for(self.controller.shutdown(), 3.0)
        except (TimeoutError, Exception):
            log.exception("shutdown was not clean")
            await asyncio.to_thread(self.controller.close_sync)
        self._persist.cancel()  # a request made while the controller shut down
        self._closed = True
        self.close()
        self.closed.emit()
